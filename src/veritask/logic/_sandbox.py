"""Run family code we did not write (LLM-written or user-supplied) in a separate, confined process.

One runner serves both uses: :func:`run_sandboxed` (define code, call one function, exit) and
:class:`SandboxWorker` (a persistent child that loads the code once and then answers requests sent
as JSON lines on its stdin, one JSON line per call on its stdout). The child
(``_sandbox_child.py``) is a fresh Python process in isolated mode (``-s -P``), detached with ``setsid``,
with an environment the parent builds from nothing (no inherited variables, so no secrets, and a
fixed hash seed) and no file descriptors but its pipes. Before any untrusted code is compiled it:

- asks the kernel to SIGKILL it when the parent dies (``PR_SET_PDEATHSIG``, checked against
  the parent pid for the race where the parent died first);
- sets address-space, file-size and lifetime CPU-time limits (``resource.setrlimit``; a write
  past the file-size limit fails with ``EFBIG``);
- moves into its own temporary directory (made and removed by the parent) and moves its protocol
  streams off file descriptors 0 and 1, so ``print`` and ``input`` cannot corrupt the protocol;
- confines itself (the OS sandbox, the security boundary): drops every capability, sets
  ``no_new_privs``, applies Landlock (read-only: the interpreter's libraries, stdlib and
  site-packages; read-write: its directory; nothing else, so no ``/proc`` either; signals and
  abstract sockets scoped to itself from ABI 6) and a seccomp allow-list (no sockets, exec,
  fork, ptrace, signals to other processes, device or FIFO nodes, xattr or mode changes,
  io_uring, signal-driven I/O through ``fcntl`` or ``ioctl``...);
- installs an audit hook (PEP 578), a first layer that names what it refuses (imports outside an
  allow-list, files outside its directory, subprocesses...). It is not a boundary: code in the
  same interpreter can disable it, and then the OS layers still hold.

Where the kernel lacks Landlock (ABI 3 or later) or seccomp, untrusted code is refused
(:class:`SandboxUnavailable`) unless the caller opts out explicitly: ``unsafe_no_sandbox=True``
in :class:`SandboxLimits` or :func:`run_sandboxed`, or :func:`allow_unsafe_no_sandbox` around
the work (what the CLI's ``--unsafe-no-sandbox`` does). See
``docs/design/0014-sandbox-threat-model.md``.

Each call runs under a CPU-time timer (``ITIMER_PROF``): a call that exceeds it fails with kind
``cpu`` and the worker lives on. The parent adds a wall-clock deadline per call; a call that
misses it, or a child that dies, is reported with its own kind and the worker is restarted on
the next call. While it waits, the parent also measures the child's directory every
:data:`DISK_WATCH_SECONDS` and stops the child as soon as it holds more than ``disk_mb``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import contextvars
import functools
import json
import math
import os
import random
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import warnings
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from veritask._util import loads_untrusted

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
        "_interpreters", "_interpchannels", "_interpqueues", "_testcapi", "_testinternalcapi",
        "_testbuffer", "_testimportmultiple", "_testmultiphase", "_testsinglephase",
        "_testclinic", "_xxtestfuzz", "_ctypes_test", "_posixshmem", "_xxlimited",
    }
)  # fmt: skip
"""Private (underscore) modules refused even though other private modules are allowed."""

MAX_LINE = 64 * 1024 * 1024
"""The longest protocol line (one call's result) the parent accepts."""
MALFORMED = "the sandboxed process wrote a malformed reply"
"""The error of a reply that does not fit the protocol (the code can write lines of its own)."""

MAX_STDERR = 64 * 1024
"""How much of the end of a dead child's stderr is read to say why it died."""

CHILD_SCRIPT = Path(__file__).with_name("_sandbox_child.py")
"""The script the child runs (standard library and the confinement libraries only)."""

MIN_LANDLOCK_ABI = 3
"""The oldest Landlock ABI accepted: 3 is the first that governs truncation (``O_TRUNC``)."""

MAX_LANDLOCK_ABI_ENV = "VERITASK_SANDBOX_MAX_LANDLOCK_ABI"
"""When set to a number, children use at most this Landlock ABI (to test, on a newer kernel,
what an older one enforces: below 6 there is no signal scope and seccomp alone stops signals)."""

DISK_WATCH_SECONDS = 0.05
"""How often the parent measures a running child's directory against ``disk_mb``."""

MAX_ENTRIES = 4096
"""The most files and directories a child's directory may hold (whatever their size): keeps
each measure of it short (about 60 ms at the most)."""

UNSAFE_HINT = (
    "pass --unsafe-no-sandbox (in Python: unsafe_no_sandbox=True, or allow_unsafe_no_sandbox() "
    "around the work) to run it anyway with only the resource limits and the audit hook, which "
    "code in the same interpreter can disable"
)
"""The way out of a refusal, given only where it works: the kernel lacks the sandbox. Where
the kernel has it but a child fails to confine itself, the opt-out changes nothing and the
refusal does not suggest it. On the command line, ``logic generate``, ``report``, ``gate`` and
``evolve`` take the flag, and they are the only commands that run family files."""


class SandboxUnavailable(RuntimeError):
    """The OS sandbox cannot be applied here, so code we did not write is refused."""


@dataclass(frozen=True)
class SandboxSupport:
    """What this kernel and machine offer the OS sandbox.

    Attributes:
        landlock_abi: The Landlock ABI version (0 when Landlock is absent or disabled).
        seccomp: Whether seccomp filters can be loaded (kernel support and libseccomp).
        lsm: The active Linux security modules (``/sys/kernel/security/lsm``), None when that
            file cannot be read (securityfs not mounted).
        problems: Why the sandbox cannot run, one reason each (empty when it can).
    """

    landlock_abi: int
    seccomp: bool
    lsm: tuple[str, ...] | None
    problems: tuple[str, ...]

    @property
    def available(self) -> bool:
        """True when the OS sandbox can confine a child."""
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        """The support report as JSON data."""
        return {
            "available": self.available,
            "landlock_abi": self.landlock_abi,
            "seccomp": self.seccomp,
            "lsm": None if self.lsm is None else list(self.lsm),
            "problems": list(self.problems),
        }


@functools.lru_cache(maxsize=1)
def sandbox_support() -> SandboxSupport:
    """Probe the kernel once per process: Landlock ABI (by the syscall), seccomp, the LSM list."""
    problems: list[str] = []
    if not sys.platform.startswith("linux"):
        return SandboxSupport(0, False, None, ("the OS sandbox needs Linux",))
    abi = _landlock_abi(problems)
    if 0 < abi < MIN_LANDLOCK_ABI:
        problems.append(f"Landlock ABI {abi} is older than the {MIN_LANDLOCK_ABI} needed")
    seccomp = _seccomp_available(problems)
    try:
        lsm = tuple(Path("/sys/kernel/security/lsm").read_text().strip().split(","))
    except OSError:
        lsm = None
    return SandboxSupport(abi, seccomp, lsm, tuple(problems))


def _landlock_abi(problems: list[str]) -> int:
    """The Landlock ABI version, or 0 with the reason added to ``problems``."""
    try:
        import landlockpy

        abi = int(landlockpy.abi_version())
    except Exception as exc:  # the binding missing or the syscall failing: no Landlock
        problems.append(f"Landlock is unavailable ({type(exc).__name__}: {exc})")
        return 0
    if abi == 0:
        problems.append(
            "Landlock is not enabled in this kernel (needs CONFIG_SECURITY_LANDLOCK and "
            "'landlock' in the lsm= boot list)"
        )
    return abi


def _seccomp_available(problems: list[str]) -> bool:
    """Whether seccomp filters work: kernel support and libseccomp through pyseccomp."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        status = ""
    if "Seccomp_filters:" not in status and "Seccomp:" not in status:
        problems.append("seccomp is not enabled in this kernel (needs CONFIG_SECCOMP_FILTER)")
        return False
    try:
        import pyseccomp  # noqa: F401  (loads libseccomp)
    except Exception as exc:  # RuntimeError when libseccomp is not installed
        problems.append(f"seccomp is unavailable: {exc} (install libseccomp2)")
        return False
    return True


_UNSAFE_ALLOWED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "veritask_unsafe_no_sandbox", default=False
)


def unsafe_allowed() -> bool:
    """True inside ``allow_unsafe_no_sandbox()`` (what a worker process must be told)."""
    return _UNSAFE_ALLOWED.get()


@contextlib.contextmanager
def allow_unsafe_no_sandbox(allowed: bool = True) -> Iterator[None]:
    """Within the block, workers on a machine without the OS sandbox run code anyway (with only
    the resource limits and the audit hook) instead of raising :class:`SandboxUnavailable`.

    On a machine with the sandbox this changes nothing: the sandbox is always used.
    """
    token = _UNSAFE_ALLOWED.set(allowed)
    try:
        yield
    finally:
        _UNSAFE_ALLOWED.reset(token)


def require_sandbox(unsafe_no_sandbox: bool = False) -> SandboxSupport:
    """The support report, after checking that code we did not write may run: the OS sandbox
    is available, or running without it was allowed (``unsafe_no_sandbox``, or
    :func:`allow_unsafe_no_sandbox`), which is warned about once. Children are confined exactly
    when the report says ``available``.

    Raises:
        SandboxUnavailable: The sandbox is unavailable and running without it was not allowed.
    """
    support = sandbox_support()
    if support.available:
        return support
    reasons = "; ".join(support.problems)
    if not (unsafe_no_sandbox or _UNSAFE_ALLOWED.get()):
        raise SandboxUnavailable(
            f"refusing to run code we did not write: the OS sandbox is unavailable ({reasons}); "
            + UNSAFE_HINT
        )
    _warn_unsandboxed(reasons)
    return support


@functools.lru_cache(maxsize=1)
def _warn_unsandboxed(reasons: str) -> None:
    """Warn once per process (per reason) that code runs without the OS sandbox."""
    warnings.warn(
        f"running code we did not write WITHOUT the OS sandbox ({reasons}), as asked",
        RuntimeWarning,
        stacklevel=3,
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
        file_mb: The largest file the child may write (inside its directory); the kernel's
            file-size limit, ``min(file_mb, disk_mb)``, makes a longer write fail.
        disk_mb: What the child's directory may hold in all (``file_mb`` bounds one file,
            not how many): measured every :data:`DISK_WATCH_SECONDS` while a call runs and
            after it; past it the child is stopped, its directory removed, and the call is
            an ``error`` naming the limit.
        unsafe_no_sandbox: Where the kernel lacks the OS sandbox (Landlock, seccomp), run the
            code anyway with only the limits and the audit hook instead of raising
            :class:`SandboxUnavailable`. No effect where the sandbox is available.
    """

    imports: frozenset[str] = DEFAULT_IMPORTS
    cpu_seconds: float = 2.0
    memory_mb: int = 512
    wall_seconds: float = 10.0
    lifetime_cpu_seconds: int = 600
    file_mb: int = 64
    disk_mb: int = 256
    unsafe_no_sandbox: bool = False


CHILD_ENV = {"PYTHONHASHSEED": "0", "PYTHONIOENCODING": "utf-8", "PYTHONDONTWRITEBYTECODE": "1"}
"""The child's whole environment: nothing is inherited from the parent (no keys, no paths)."""


class _Child:
    """One running child: the process, its directory, and a line reader with deadlines."""

    def __init__(self, code: str, filename: str, limits: SandboxLimits) -> None:
        self.confined = require_sandbox(limits.unsafe_no_sandbox).available
        self.home = tempfile.mkdtemp(prefix="vt-sandbox-")
        self.stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed by _reap)
        self.proc = subprocess.Popen(
            [sys.executable, "-s", "-P", str(CHILD_SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=CHILD_ENV,
            cwd=self.home,
            close_fds=True,
            start_new_session=True,
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
            "fsize": min(limits.file_mb, limits.disk_mb) * 1024 * 1024,
            "home": self.home,
            "parent": os.getpid(),
            "landlock_abi": _max_landlock_abi(),
            "sandbox": self.confined,
            "libraries": _libraries() if self.confined else {},
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

    def read(self, wall_seconds: float, disk_mb: int) -> dict[str, Any] | SandboxResult:
        """The next JSON line, or the SandboxResult saying why none came in time (or why the
        child was stopped while it ran: its directory outgrew ``disk_mb``)."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + wall_seconds
        searched = 0
        while (newline := self.buffer.find(b"\n", searched)) < 0:
            searched = len(self.buffer)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return SandboxResult(
                    "timeout", error=f"wall-clock limit of {wall_seconds} s exceeded"
                )
            wait = min(remaining, DISK_WATCH_SECONDS)
            if not self.poller.poll(max(1, math.ceil(wait * 1000))):
                if over_disk(self.home, disk_mb):
                    self.close()
                    return _disk_error(disk_mb)
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return self.death()
            self.buffer += chunk
            if len(self.buffer) > MAX_LINE:
                return SandboxResult("error", error=f"result larger than {MAX_LINE} bytes")
        line = bytes(self.buffer[:newline])
        del self.buffer[: newline + 1]
        try:
            message = loads_untrusted(line)
        except ValueError:
            return SandboxResult("error", error=MALFORMED)
        if not isinstance(message, dict):
            return SandboxResult("error", error=MALFORMED)
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
            if -code == 31 and self.confined:  # SIGSYS: seccomp killed it
                return SandboxResult(
                    "forbidden",
                    error="the OS sandbox (seccomp) stopped the code at a forbidden system call "
                    "(exec, fork, socket, ptrace, a signal to another process, signal-driven "
                    "I/O, mknod, xattr...)",
                )
            if -code == 25:  # SIGXFSZ: the code restored its default action, then wrote past
                return SandboxResult("error", error="disk limit reached (file-size limit)")
            return SandboxResult("error", error=f"killed by signal {-code}")
        self.stderr.seek(0)
        lines = self.stderr.read()[-MAX_STDERR:].decode(errors="replace").strip().splitlines()
        return _exit_reason(lines, code, self.confined)

    def close(self) -> None:
        """Kill the child and remove its directory."""
        self.finalizer()


def _exit_reason(lines: list[str], code: int, confined: bool) -> SandboxResult:
    """Why a child exited, from the end of its stderr: memory, an operation the OS sandbox
    refused (a fatal error after a PermissionError), or its last line."""
    if lines and "MemoryError" in lines[-1]:
        return SandboxResult("memory", error="memory limit exceeded")
    refused = [line for line in lines if line.startswith("PermissionError")]
    if confined and refused:
        return SandboxResult(
            "forbidden",
            error=f"the sandboxed process died: {refused[-1]} (refused by the OS sandbox)",
        )
    fatal = [line for line in lines if line.startswith("Fatal Python error")]
    last = fatal[-1] if fatal else lines[-1] if lines else f"exited with code {code}"
    return SandboxResult("error", error=last)


@functools.lru_cache(maxsize=1)
def _libraries() -> dict[str, str | None]:
    """The shared libraries the child's seccomp binding loads, found once by the parent."""
    import ctypes.util

    return {name: ctypes.util.find_library(name) for name in ("c", "seccomp")}


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
    _spent: float = field(default=0.0, init=False, repr=False)
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
        reply = self._child.read(self.limits.wall_seconds, self.limits.disk_mb)
        if isinstance(reply, dict) and "sandbox_error" in reply:
            self._drop()
            raise SandboxUnavailable(  # no opt-out hint: where the kernel reports the sandbox,
                # children are always confined, so --unsafe-no-sandbox would change nothing
                f"refusing to run code we did not write: the kernel reports the OS sandbox but "
                f"the child could not apply it ({reply['sandbox_error']}); a container's own "
                "seccomp profile refusing the Landlock or seccomp calls is the usual cause"
            )
        if isinstance(reply, dict):  # the child is confined; from here on the code may write
            reply = (  # lines of its own, so a reply is data to check, never an instruction
                self._child.read(self.limits.wall_seconds, self.limits.disk_mb)
                if reply == {"kind": "ready"}
                else SandboxResult("error", error=MALFORMED)
            )
        result = _result(reply)
        if result.ok and over_disk(self._child.home, self.limits.disk_mb):
            result = _disk_error(self.limits.disk_mb)
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
            reply = child.read(self.limits.wall_seconds, self.limits.disk_mb)
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
            cpu = _cpu_seconds(reply.get("cpu"))
            if cpu is None or cpu < child.cpu:
                self._drop()
                return [*out, SandboxResult("error", error=MALFORMED)]
            child.cpu = cpu
            if over_disk(child.home, self.limits.disk_mb):
                self._drop()
                return [*out, _disk_error(self.limits.disk_mb)]
            out.append(_result(reply))
        return out

    def cpu_used(self) -> float:
        """CPU seconds the sandboxed code has used over the worker's life, every child's
        included (as each child last reported it)."""
        child = self._child
        return self._spent + (child.cpu if child is not None else 0.0)

    def _drop(self) -> None:
        if self._child is not None:
            self._spent += self._child.cpu
            self._child.close()
            self._child = None


def over_disk(home: str, disk_mb: int) -> bool:
    """Whether the files under ``home`` take more than ``disk_mb`` MB of disk.

    Each entry counts at least one 4 KB block and at least ``1 / MAX_ENTRIES`` of the limit,
    so a flood of empty files counts too and a walk never lists more than
    :data:`MAX_ENTRIES` entries before it says yes."""
    limit, total, stack = disk_mb * 1024 * 1024, 0, [home]
    floor = max(4096, limit // MAX_ENTRIES)
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                total += max(entry.stat(follow_symlinks=False).st_blocks * 512, floor)
            except OSError:
                continue
            if total > limit:
                return True
    return False


def _max_landlock_abi() -> int | None:
    """The Landlock ABI cap from :data:`MAX_LANDLOCK_ABI_ENV` (None when unset or not a number)."""
    value = os.environ.get(MAX_LANDLOCK_ABI_ENV, "").strip()
    return int(value) if value.isdigit() else None


def _disk_error(disk_mb: int) -> SandboxResult:
    return SandboxResult("error", error=f"disk limit of {disk_mb} MB exceeded (sandbox directory)")


def _cpu_seconds(value: Any) -> float | None:
    """A reply's CPU figure, or None unless it is a finite, non-negative number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    seconds = float(value)
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _rng_state(data: Any) -> tuple[Any, ...] | None:
    """A reply's RNG state, checked by loading it into a generator (None when it does not)."""
    try:
        state = decode_rng_state(data)
        random.Random().setstate(state)
    except (KeyError, TypeError, ValueError, OverflowError, struct.error, binascii.Error):
        return None
    return state


def _result(reply: dict[str, Any] | SandboxResult) -> SandboxResult:
    """A protocol reply as a SandboxResult.

    The sandboxed code can write lines of its own to the channel, so every field is checked:
    one that does not fit the protocol makes the reply an ``error``, never an exception here.
    """
    if isinstance(reply, SandboxResult):
        return reply
    kind, error, state = reply.get("kind"), reply.get("error"), reply.get("rng_state")
    if kind not in ("ok", "timeout", "cpu", "memory", "forbidden", "error"):
        return SandboxResult("error", error=f"the sandboxed process sent an unknown kind {kind!r}")
    rng = None if state is None else _rng_state(state)
    bad_error = not isinstance(error, str) if kind != "ok" else error is not None
    if bad_error or (state is not None and rng is None):
        return SandboxResult("error", error=MALFORMED)
    return SandboxResult(kind, reply.get("value"), error, rng)


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
    unsafe_no_sandbox: bool = False,
) -> SandboxResult:
    """Define ``code`` in a sandboxed child process and return ``function(*args)``.

    Arguments and the return value travel as JSON (a value JSON cannot carry exactly, such as a
    set or a dict with int keys, is an error). Each violation gets its own ``kind``: ``timeout``
    (wall clock), ``cpu`` (CPU-time limit), ``memory`` (address-space limit), ``forbidden`` (an
    import, file, network or process operation the audit hook refused) and ``error`` (any other
    exception, with its message).

    Raises:
        SandboxUnavailable: The OS sandbox is unavailable and ``unsafe_no_sandbox`` is False
            (nor allowed by :func:`allow_unsafe_no_sandbox`).
    """
    limits = SandboxLimits(
        imports=imports,
        cpu_seconds=cpu_seconds,
        memory_mb=memory_mb,
        wall_seconds=wall_seconds,
        lifetime_cpu_seconds=cpu_seconds + 1,
        unsafe_no_sandbox=unsafe_no_sandbox,
    )
    with SandboxWorker(code, limits) as worker:
        return worker.call(function, args)
