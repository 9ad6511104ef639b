"""Run family code we did not write (LLM-written or user-supplied) in a separate, limited process.

The child is a fresh ``python -I`` process. Before any untrusted code runs it:
- sets CPU-time and address-space limits (``resource.setrlimit``);
- moves into its own temporary directory;
- installs a permanent audit hook (``sys.addaudithook``, PEP 578) that refuses: imports outside
  an allow-list, opening files for writing outside the temporary directory, reading files
  outside it and the Python installation, sockets, subprocesses, ``os.system``/exec/fork, and
  ``ctypes``.

The parent adds a wall-clock timeout and maps every way the child can fail to a clear error
kind. Audit hooks cannot be removed from inside the process, which is why they are preferred
here over patching modules that untrusted code could restore.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["ok", "timeout", "cpu", "memory", "forbidden", "error"]

DEFAULT_IMPORTS = frozenset(
    {
        "math", "cmath", "random", "itertools", "functools", "collections", "heapq", "bisect",
        "string", "re", "fractions", "decimal", "statistics", "operator", "typing", "dataclasses",
        "enum", "copy", "json", "datetime", "calendar", "array", "numbers", "abc", "types",
        "textwrap", "unicodedata", "__future__",
    }
)  # fmt: skip

_RUNNER = textwrap.dedent(
    r"""
    import json, os, resource, sys, tempfile
    spec = json.loads(sys.stdin.read())
    resource.setrlimit(resource.RLIMIT_CPU, (spec["cpu"], spec["cpu"] + 1))
    resource.setrlimit(resource.RLIMIT_AS, (spec["memory"], spec["memory"]))
    home = tempfile.mkdtemp(prefix="vt-sandbox-")
    os.chdir(home)
    allowed = set(spec["imports"])
    roots = tuple(os.path.realpath(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix} | set(sys.path) if p)
    BANNED = ("socket.", "subprocess.", "os.system", "os.exec", "os.posix_spawn", "os.fork",
              "os.spawn", "ctypes.", "os.kill", "os.remove", "os.rename", "os.rmdir", "shutil.")
    class Forbidden(Exception):
        pass
    def hook(event, args):
        if event == "import":
            top = str(args[0]).split(".")[0]
            if top not in allowed and top not in sys.builtin_module_names and not top.startswith("_"):
                raise Forbidden(f"import of {args[0]!r} is not allowed")
        elif event == "open":
            path, mode = args[0], args[1]
            if isinstance(path, int):
                return
            real = os.path.realpath(os.fspath(path))
            writing = isinstance(mode, str) and any(c in mode for c in "wax+")
            if isinstance(args[2], int) and args[2] & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
                writing = True
            inside = real.startswith(home + os.sep) or real == home
            if writing and not inside:
                raise Forbidden(f"writing {path!r} outside the sandbox directory")
            if not writing and not inside and not real.startswith(roots):
                raise Forbidden(f"reading {path!r} outside the sandbox directory")
        elif event.startswith(BANNED):
            raise Forbidden(f"{event} is not allowed")
    code = compile(spec["code"], "<family>", "exec")
    sys.addaudithook(hook)
    try:
        scope = {"__name__": "family"}
        exec(code, scope)
        value = scope[spec["function"]](*spec["args"])
        out = {"kind": "ok", "value": value}
    except Forbidden as exc:
        out = {"kind": "forbidden", "error": str(exc)}
    except MemoryError:
        out = {"kind": "memory", "error": "memory limit exceeded"}
    except BaseException as exc:
        out = {"kind": "error", "error": f"{type(exc).__name__}: {exc}"}
    try:
        sys.stdout.write(json.dumps(out, default=repr))
    except BaseException as exc:
        sys.stdout.write(json.dumps({"kind": "error", "error": f"unserializable result: {exc}"}))
    sys.stdout.flush()
    """
)


@dataclass(frozen=True)
class SandboxResult:
    """What a sandboxed call returned, or how it failed."""

    kind: Kind
    value: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the call returned a value."""
        return self.kind == "ok"


def run_sandboxed(
    code: str,
    function: str,
    args: list[Any],
    *,
    imports: frozenset[str] = DEFAULT_IMPORTS,
    cpu_seconds: int = 2,
    memory_mb: int = 512,
    wall_seconds: float = 10.0,
) -> SandboxResult:
    """Define ``code`` in a sandboxed child process and return ``function(*args)``.

    Arguments and the return value travel as JSON. Each violation gets its own ``kind``:
    ``timeout`` (wall clock), ``cpu`` (CPU-time limit), ``memory`` (address-space limit),
    ``forbidden`` (an import, file, network or process operation the audit hook refused) and
    ``error`` (any other exception, with its message).
    """
    spec = {
        "code": code,
        "function": function,
        "args": args,
        "imports": sorted(imports),
        "cpu": cpu_seconds,
        "memory": memory_mb * 1024 * 1024,
    }
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-c", _RUNNER],
            input=json.dumps(spec),
            capture_output=True,
            text=True,
            timeout=wall_seconds,
        )
    except subprocess.TimeoutExpired:
        return SandboxResult("timeout", error=f"wall-clock limit of {wall_seconds} s exceeded")
    return _decode(proc)


def _decode(proc: subprocess.CompletedProcess[str]) -> SandboxResult:
    if proc.returncode < 0:
        signal = -proc.returncode
        if signal in (9, 24):  # SIGKILL / SIGXCPU after the CPU limit
            return SandboxResult("cpu", error="CPU-time limit exceeded")
        return SandboxResult("error", error=f"killed by signal {signal}")
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        if "MemoryError" in proc.stderr:
            return SandboxResult("memory", error="memory limit exceeded")
        return SandboxResult("error", error=tail[0])
    return SandboxResult(out["kind"], out.get("value"), out.get("error"))
