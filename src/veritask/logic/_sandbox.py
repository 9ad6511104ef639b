"""Run family code we did not write (LLM-written or user-supplied) in a separate, limited process.

One runner serves both uses: :func:`run_sandboxed` (define code, call one function, exit) and
:class:`SandboxWorker` (a persistent child that loads the code once and then answers requests sent
as JSON lines on its stdin, one JSON line per call on its stdout). The child is a fresh Python
process in isolated mode (``-s -P``) with an environment the parent builds from nothing (no
inherited variables, so no secrets, and a fixed hash seed, so set iteration order is the same
in every run). Before any untrusted code runs it:

- sets address-space, file-size and lifetime CPU-time limits (``resource.setrlimit``);
- moves into its own temporary directory (made and removed by the parent);
- moves its protocol streams off file descriptors 0 and 1, so ``print`` and ``input`` in family
  code cannot corrupt or steal protocol lines;
- installs a permanent audit hook (``sys.addaudithook``, PEP 578) that refuses: imports outside
  an allow-list, opening files for writing outside the temporary directory, reading files
  outside it and the Python installation, sockets, subprocesses, ``os.system``/exec/fork,
  links, ``ctypes`` and ``input``.

Each call runs under a CPU-time timer (``ITIMER_PROF``): a call that exceeds it fails with kind
``cpu`` and the worker lives on. The parent adds a wall-clock deadline per call; a call that
misses it, or a child that dies, is reported with its own kind and the worker is restarted on
the next call. Audit hooks cannot be removed from inside the process, which is why they are
preferred here over patching modules that untrusted code could restore.
"""

from __future__ import annotations

import base64
import json
import math
import os
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Literal

Kind = Literal["ok", "timeout", "cpu", "memory", "forbidden", "error"]

DEFAULT_IMPORTS = frozenset(
    {
        "math", "cmath", "random", "itertools", "functools", "collections", "heapq", "bisect",
        "string", "re", "fractions", "decimal", "statistics", "operator", "typing", "dataclasses",
        "enum", "copy", "json", "datetime", "calendar", "array", "numbers", "abc", "types",
        "textwrap", "unicodedata", "__future__",
    }
)  # fmt: skip

DENIED_PRIVATE = frozenset(
    {
        "_posixsubprocess", "_ctypes", "_socket", "_ssl", "_multiprocessing", "_sqlite3",
        "_xxsubinterpreters", "_xxinterpchannels", "_winapi", "_overlapped", "_tkinter",
    }
)  # fmt: skip
"""Private (underscore) modules refused even though other private modules are allowed."""

MAX_LINE = 64 * 1024 * 1024
"""The longest protocol line (one call's result) the parent accepts."""

_RUNNER = textwrap.dedent(
    r"""
    import base64, json, os, random, resource, signal, struct, sys, time
    proto_in = os.fdopen(os.dup(0), "r", encoding="utf-8")
    proto_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")
    sys.stdout = sys.stderr = open(os.devnull, "w", encoding="utf-8")
    spec = json.loads(proto_in.readline())
    resource.setrlimit(resource.RLIMIT_CPU, (spec["lifetime_cpu"], spec["lifetime_cpu"] + 1))
    resource.setrlimit(resource.RLIMIT_AS, (spec["memory"], spec["memory"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (spec["fsize"], spec["fsize"]))
    home = os.path.realpath(spec["home"])
    os.chdir(home)
    allowed = set(spec["imports"])
    denied = set(spec["denied"])
    for name in sorted(allowed):  # their own imports (typing needs contextlib) load now
        try:
            __import__(name)
        except ImportError:
            pass
    roots = tuple(os.path.realpath(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix} | set(sys.path) if p)
    BANNED = ("socket.", "subprocess.", "os.system", "os.exec", "os.posix_spawn", "os.fork",
              "os.spawn", "ctypes.", "os.kill", "os.remove", "os.rename", "os.rmdir", "shutil.",
              "os.link", "os.symlink", "os.truncate", "os.chmod", "os.chown", "os.mkdir",
              "os.utime", "os.putenv", "os.unsetenv", "builtins.input", "resource.setrlimit",
              "resource.prlimit")
    class Forbidden(Exception):
        pass
    class CpuExceeded(BaseException):
        pass
    def hook(event, args):
        if event == "import":
            top = str(args[0]).split(".")[0]
            private = top.startswith("_") and top not in denied
            if top not in allowed and top not in sys.builtin_module_names and not private:
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
    def on_cpu(signum, frame):
        raise CpuExceeded()
    def plain(value, where):
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                raise TypeError(f"{where} is {value!r}, which JSON cannot carry")
            return value
        if isinstance(value, (list, tuple)):
            return [plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if not isinstance(k, str):
                    raise TypeError(f"{where} has a {type(k).__name__} key {k!r}; keys must be strings")
                out[k] = plain(v, f"{where}[{k!r}]")
            return out
        raise TypeError(f"{where} is a {type(value).__name__}, not JSON data")
    def guarded(action):
        signal.setitimer(signal.ITIMER_PROF, spec["cpu"])
        try:
            return action()
        except Forbidden as exc:
            return {"kind": "forbidden", "error": str(exc)}
        except CpuExceeded:
            return {"kind": "cpu", "error": f"CPU-time limit of {spec['cpu']} s exceeded"}
        except MemoryError:
            return {"kind": "memory", "error": "memory limit exceeded"}
        except RecursionError as exc:
            return {"kind": "error", "error": f"RecursionError: {exc}"}
        except BaseException as exc:
            return {"kind": "error", "error": f"{type(exc).__name__}: {exc}"}
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
    def send(message):
        proto_out.write(json.dumps(message, allow_nan=False) + "\n")
        proto_out.flush()
    scope = {"__name__": "family"}
    def load():
        exec(compile(spec["code"], spec["filename"], "exec"), scope)
        return {"kind": "ok"}
    def call(item):
        function = scope.get(item["function"])
        if not callable(function):
            return {"kind": "error", "error": f"the code defines no function {item['function']!r}"}
        args = list(item["args"])
        rng = None
        if item.get("rng_arg") is not None:
            state = item["rng_state"]
            words = struct.unpack(f"<{state['words']}I", base64.b64decode(state["mt"]))
            rng = random.Random(0)
            rng.setstate((state["version"], words, state["gauss"]))
            args[item["rng_arg"]] = rng
        value = plain(function(*args), "the result")
        out = {"kind": "ok", "value": value}
        if rng is not None:
            version, words, gauss = rng.getstate()
            mt = base64.b64encode(struct.pack(f"<{len(words)}I", *words)).decode()
            out["rng_state"] = {"version": version, "words": len(words), "mt": mt, "gauss": gauss}
        return out
    signal.signal(signal.SIGPROF, on_cpu)
    sys.addaudithook(hook)
    loaded = guarded(load)
    send(loaded)
    if loaded["kind"] == "ok":
        for line in proto_in:
            request = json.loads(line)
            for i, item in enumerate(request["calls"]):
                out = guarded(lambda: call(item))
                out.update(id=request["id"], i=i, cpu=time.process_time())
                try:
                    send(out)
                except (TypeError, ValueError) as exc:
                    send({"kind": "error", "error": f"unserializable result: {exc}",
                          "id": request["id"], "i": i, "cpu": time.process_time()})
    """
)


@dataclass(frozen=True)
class SandboxResult:
    """What a sandboxed call returned, or how it failed.

    Attributes:
        kind: ``ok`` or how the call failed.
        value: The returned value (JSON data) when ``ok``.
        error: The failure message otherwise.
        rng_state: For calls given an RNG, its state after the call (a tuple for
            ``random.Random.setstate``).
    """

    kind: Kind
    value: Any = None
    error: str | None = None
    rng_state: Any = None

    @property
    def ok(self) -> bool:
        """True when the call returned a value."""
        return self.kind == "ok"


@dataclass(frozen=True)
class SandboxCall:
    """One function call for a worker.

    Attributes:
        function: The name of a function the loaded code defines.
        args: Its arguments (JSON data).
        rng_arg: When set, the argument at this position is replaced by a ``random.Random``
            whose state is ``rng_state``.
        rng_state: The RNG state to set (a ``random.Random.getstate()`` tuple).
    """

    function: str
    args: Sequence[Any] = ()
    rng_arg: int | None = None
    rng_state: Any = None

    def to_json(self) -> dict[str, Any]:
        """The request form sent to the child."""
        out: dict[str, Any] = {"function": self.function, "args": list(self.args)}
        if self.rng_arg is not None:
            out["rng_arg"] = self.rng_arg
            out["rng_state"] = encode_rng_state(self.rng_state)
        return out


@dataclass(frozen=True)
class SandboxLimits:
    """The limits a sandboxed child runs under.

    Attributes:
        imports: Top-level modules the code may import (plus built-in and most private ones).
        cpu_seconds: CPU time per call (and for loading the code).
        memory_mb: Address-space limit of the child.
        wall_seconds: Wall-clock deadline per call (and for starting the child).
        lifetime_cpu_seconds: CPU time over the child's life; the parent recycles a worker at
            half of it, so it only stops a child that disabled its per-call timer.
        file_mb: The largest file the child may write (inside its directory).
    """

    imports: frozenset[str] = DEFAULT_IMPORTS
    cpu_seconds: float = 2.0
    memory_mb: int = 512
    wall_seconds: float = 10.0
    lifetime_cpu_seconds: int = 600
    file_mb: int = 64


class _Child:
    """One running child: the process, its directory, and a line reader with deadlines."""

    def __init__(self, code: str, filename: str, limits: SandboxLimits) -> None:
        self.home = tempfile.mkdtemp(prefix="vt-sandbox-")
        self.stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed by _reap)
        self.proc = subprocess.Popen(
            [sys.executable, "-s", "-P", "-c", _RUNNER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env={
                "PYTHONHASHSEED": "0",
                "PYTHONIOENCODING": "utf-8",
                "PYTHONDONTWRITEBYTECODE": "1",
            },
            cwd=self.home,
        )
        self.buffer = bytearray()
        self.cpu = 0.0
        assert self.proc.stdout is not None
        self.poller = select.poll()
        self.poller.register(self.proc.stdout.fileno(), select.POLLIN)
        self.finalizer = weakref.finalize(self, _reap, self.proc, self.home, self.stderr)
        spec = {
            "code": code,
            "filename": filename,
            "imports": sorted(limits.imports),
            "denied": sorted(DENIED_PRIVATE),
            "cpu": limits.cpu_seconds,
            "lifetime_cpu": limits.lifetime_cpu_seconds,
            "memory": limits.memory_mb * 1024 * 1024,
            "fsize": limits.file_mb * 1024 * 1024,
            "home": self.home,
        }
        self.send(spec)

    def send(self, message: dict[str, Any]) -> bool:
        """Write one JSON line; False when the child is gone."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return False
        return True

    def read(self, wall_seconds: float) -> dict[str, Any] | SandboxResult:
        """The next JSON line, or the SandboxResult saying why none came in time."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + wall_seconds
        searched = 0
        while (newline := self.buffer.find(b"\n", searched)) < 0:
            searched = len(self.buffer)
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self.poller.poll(max(1, math.ceil(remaining * 1000))):
                return SandboxResult(
                    "timeout", error=f"wall-clock limit of {wall_seconds} s exceeded"
                )
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return self.death()
            self.buffer += chunk
            if len(self.buffer) > MAX_LINE:
                return SandboxResult("error", error=f"result larger than {MAX_LINE} bytes")
        line = bytes(self.buffer[:newline])
        del self.buffer[: newline + 1]
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            return SandboxResult("error", error="the sandboxed process wrote a malformed reply")
        if not isinstance(message, dict):
            return SandboxResult("error", error="the sandboxed process wrote a malformed reply")
        return message

    def death(self) -> SandboxResult:
        """Why the child stopped answering (it closed its output)."""
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return SandboxResult("error", error="the sandboxed process closed its output")
        if code < 0:
            if -code in (9, 24):  # SIGKILL / SIGXCPU after the CPU limit
                return SandboxResult("cpu", error="CPU-time limit exceeded")
            return SandboxResult("error", error=f"killed by signal {-code}")
        self.stderr.seek(0)
        tail = self.stderr.read().decode(errors="replace").strip().splitlines()[-1:]
        if tail and "MemoryError" in tail[0]:
            return SandboxResult("memory", error="memory limit exceeded")
        return SandboxResult("error", error=tail[0] if tail else f"exited with code {code}")

    def close(self) -> None:
        """Kill the child and remove its directory."""
        self.finalizer()


def _reap(proc: subprocess.Popen[bytes], home: str, stderr: IO[bytes]) -> None:
    """Kill a child (if still running), wait for it, and remove its directory."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            stream.close()
    stderr.close()
    shutil.rmtree(home, ignore_errors=True)


@dataclass(eq=False)
class SandboxWorker:
    """A persistent sandboxed child that loads ``code`` once and answers calls.

    The child starts on the first call. A call that times out or kills the child is reported
    with its kind, and the next call starts a fresh child. Code that fails to load (a syntax
    error, a refused import at module level) fails every call the same way without restarting.
    A worker is safe to share between threads (calls are serialized); close it when done (it is
    also closed when garbage-collected and at exit).

    Args:
        code: Python source defining the functions to call.
        limits: The limits the child runs under.
        filename: The name tracebacks and errors give the code.
    """

    code: str
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    filename: str = "<family>"
    starts: int = 0
    """How many children this worker has started (restarts are ``starts - 1``)."""
    _child: _Child | None = field(default=None, init=False, repr=False)
    _load_error: SandboxResult | None = field(default=None, init=False, repr=False)
    _next_id: int = field(default=0, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __enter__(self) -> SandboxWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the child (a later call starts a new one)."""
        with self._lock:
            self._drop()

    def load(self) -> SandboxResult:
        """Start the child if needed and say whether the code loaded."""
        with self._lock:
            return self._ensure()

    def call(self, function: str, args: Sequence[Any] = ()) -> SandboxResult:
        """Return ``function(*args)`` from the loaded code."""
        return self.call_many([SandboxCall(function, args)])[0]

    def call_many(self, calls: Sequence[SandboxCall]) -> list[SandboxResult]:
        """Run several calls in one request; each gets its own CPU timer and wall deadline.

        After a timeout or a crash the remaining calls go on in a fresh child.
        """
        results: list[SandboxResult] = []
        with self._lock:
            while len(results) < len(calls):
                results.extend(self._run_batch(calls[len(results) :]))
        return results

    def _ensure(self) -> SandboxResult:
        """A live child that loaded the code, or the reason there is none."""
        if self._load_error is not None:
            return self._load_error
        child = self._child
        alive = child is not None and child.proc.poll() is None
        if alive and child is not None and child.cpu < self.limits.lifetime_cpu_seconds / 2:
            return SandboxResult("ok")
        self._drop()
        self._child = _Child(self.code, self.filename, self.limits)
        self.starts += 1
        reply = self._child.read(self.limits.wall_seconds)
        result = _result(reply)
        if not result.ok:
            self._drop()
            if isinstance(reply, dict):  # the child reported it: the code itself fails to load
                self._load_error = result
        return result

    def _run_batch(self, calls: Sequence[SandboxCall]) -> list[SandboxResult]:
        """Send ``calls`` and read answers until all came back or one failed the child."""
        ready = self._ensure()
        if not ready.ok:
            return [ready] * len(calls)
        child = self._child
        assert child is not None
        self._next_id += 1
        request = {"id": self._next_id, "calls": [c.to_json() for c in calls]}
        if not child.send(request):
            died = child.death()
            self._drop()
            return [died]
        out: list[SandboxResult] = []
        for i in range(len(calls)):
            reply = child.read(self.limits.wall_seconds)
            if (
                not isinstance(reply, dict)
                or reply.get("id") != self._next_id
                or reply.get("i") != i
            ):
                self._drop()
                if isinstance(reply, dict):
                    reply = SandboxResult(
                        "error", error="the sandboxed process answered out of turn"
                    )
                return [*out, reply]
            child.cpu = float(reply.get("cpu", 0.0))
            out.append(_result(reply))
        return out

    def _drop(self) -> None:
        if self._child is not None:
            self._child.close()
            self._child = None


def _result(reply: dict[str, Any] | SandboxResult) -> SandboxResult:
    """A protocol reply as a SandboxResult."""
    if isinstance(reply, SandboxResult):
        return reply
    kind = reply.get("kind")
    if kind not in ("ok", "timeout", "cpu", "memory", "forbidden", "error"):
        return SandboxResult("error", error=f"the sandboxed process sent an unknown kind {kind!r}")
    state = reply.get("rng_state")
    return SandboxResult(
        kind,
        reply.get("value"),
        reply.get("error"),
        None if state is None else decode_rng_state(state),
    )


def encode_rng_state(state: Any) -> dict[str, Any]:
    """A ``random.Random.getstate()`` tuple as compact JSON (the words as base64)."""
    version, words, gauss = state
    mt = base64.b64encode(struct.pack(f"<{len(words)}I", *words)).decode()
    return {"version": version, "words": len(words), "mt": mt, "gauss": gauss}


def decode_rng_state(data: dict[str, Any]) -> tuple[Any, ...]:
    """Read back :func:`encode_rng_state`: a tuple for ``random.Random.setstate``."""
    words = struct.unpack(f"<{int(data['words'])}I", base64.b64decode(data["mt"]))
    return (data["version"], words, data["gauss"])


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

    Arguments and the return value travel as JSON (a value JSON cannot carry exactly, such as a
    set or a dict with int keys, is an error). Each violation gets its own ``kind``: ``timeout``
    (wall clock), ``cpu`` (CPU-time limit), ``memory`` (address-space limit), ``forbidden`` (an
    import, file, network or process operation the audit hook refused) and ``error`` (any other
    exception, with its message).
    """
    limits = SandboxLimits(
        imports=imports,
        cpu_seconds=cpu_seconds,
        memory_mb=memory_mb,
        wall_seconds=wall_seconds,
        lifetime_cpu_seconds=cpu_seconds + 1,
    )
    with SandboxWorker(code, limits) as worker:
        return worker.call(function, args)
