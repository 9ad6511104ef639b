"""The sandboxed child process of :mod:`veritask.logic._sandbox`.

The parent runs this file as a script (``python -s -P _sandbox_child.py``) with a clean
environment; it imports only the standard library and the two confinement libraries, never the
``veritask`` package. Protocol: the first line on stdin is the spec (code, limits, directory,
whether to confine); the child answers whether the code loaded, then one JSON line per call.

Order of work, all before the untrusted code is compiled:

1. move the protocol streams off file descriptors 0 and 1;
2. die with the parent (``PR_SET_PDEATHSIG``), then check the parent is still the one that
   started it (it may have died before the signal was set);
3. resource limits (``SIGXFSZ`` ignored, so a write past the file-size limit fails with
   ``EFBIG``), move into its own directory, import the allowed modules;
4. confinement (unless the parent ran it without the OS sandbox): drop every capability,
   Landlock (read-only: the interpreter's libraries, stdlib and site-packages; read-write: its
   directory; scoped signals and abstract sockets where the ABI has them), then a seccomp
   allow-list with ``no_new_privs`` (hostile calls such as exec, fork or socket kill the child
   outright; ``fcntl`` and ``ioctl`` filtered by argument, so no file can be set to signal
   another process);
5. the audit hook, a friendly first layer that names what was refused.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import functools
import json
import os
import random
import resource
import signal
import struct
import sys
import sysconfig
import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

MIN_LANDLOCK_ABI = 3
"""Landlock ABI needed: 3 is the first that governs truncation (``O_TRUNC``, ``ftruncate``)."""

ALLOWED_SYSCALLS = (
    "read", "write", "readv", "writev", "pread64", "pwrite64", "lseek", "close", "open",
    "openat", "stat", "fstat", "lstat", "newfstatat", "statx", "access", "faccessat",
    "faccessat2", "getdents64", "getcwd", "chdir", "fchdir", "readlink", "readlinkat", "mkdir",
    "mkdirat", "unlink", "unlinkat", "rmdir", "rename", "renameat", "renameat2", "ftruncate",
    "truncate", "fsync", "fdatasync", "dup", "dup2", "dup3", "flock", "mmap", "munmap",
    "mprotect", "mremap", "madvise", "brk", "rt_sigaction", "rt_sigprocmask", "rt_sigreturn",
    "sigaltstack", "setitimer", "getitimer", "clock_gettime", "clock_getres",
    "clock_nanosleep", "nanosleep", "gettimeofday", "time", "getpid", "getppid", "gettid",
    "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups", "getpgrp",
    "getrusage", "times", "sysinfo", "uname", "getrandom", "futex", "sched_yield",
    "sched_getaffinity", "poll", "ppoll", "select", "pselect6", "exit", "exit_group",
    "restart_syscall", "umask", "getrlimit",
)  # fmt: skip
"""System calls the child may make after confinement (files are further limited by Landlock).
Any other call fails with ``EPERM``; the ones in :data:`KILLING_SYSCALLS` end the child."""

KILLING_SYSCALLS = (
    "execve", "execveat", "fork", "vfork", "clone", "clone3", "socket", "socketpair", "connect",
    "bind", "listen", "accept", "accept4", "sendto", "sendmsg", "recvfrom", "recvmsg", "ptrace",
    "process_vm_readv", "process_vm_writev", "rt_sigqueueinfo", "rt_tgsigqueueinfo",
    "pidfd_open", "pidfd_send_signal", "pidfd_getfd", "mknod", "mknodat", "setxattr",
    "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr", "chmod", "fchmod",
    "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat", "utime", "utimes",
    "utimensat", "futimesat", "link", "linkat", "symlink", "symlinkat", "setrlimit", "mount",
    "umount2", "pivot_root", "chroot", "unshare", "setns", "bpf", "perf_event_open",
    "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "keyctl", "add_key",
    "request_key", "memfd_create", "name_to_handle_at", "open_by_handle_at", "kcmp", "prctl",
    "capset", "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups",
    "fsopen", "fsmount", "fsconfig", "open_tree", "move_mount", "mount_setattr", "reboot",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "swapon",
    "swapoff", "iopl", "ioperm", "sethostname", "setdomainname", "settimeofday",
    "clock_settime", "adjtimex", "clock_adjtime", "acct", "quotactl", "syslog", "shmget",
    "shmat", "msgget", "semget", "mq_open", "personality", "modify_ldt",
)  # fmt: skip
"""System calls that kill the child at once (``SECCOMP_RET_KILL_PROCESS``, seen by the parent as
SIGSYS and reported as ``forbidden``): no return value to misread, no handler to remove."""

ALLOWED_IOCTLS = (0x5401, 0x5421, 0x5450, 0x5451)
"""``TCGETS`` (``isatty``), ``FIONBIO`` (``os.set_blocking``), ``FIONCLEX`` and ``FIOCLEX``: the
only ioctl requests allowed."""

KILLING_IOCTLS = (0x5452, 0x8901, 0x8902, 0x8903, 0x8904)
"""``FIOASYNC``, ``FIOSETOWN``, ``SIOCSPGRP``, ``FIOGETOWN``, ``SIOCGPGRP``: the ioctl way to
signal-driven I/O (the same mechanism as ``F_SETOWN`` and ``O_ASYNC``), which ends the child."""

F_SETFL, O_ASYNC = 4, 0o20000
ALLOWED_FCNTLS = (0, 1, 2, 3, 5, 6, 7, 36, 37, 38, 1030, 1032, 1034)
"""``fcntl`` commands allowed: ``F_DUPFD``, ``F_GETFD``, ``F_SETFD``, ``F_GETFL``, the record
and open-file locks (``F_GETLK``, ``F_SETLK``, ``F_SETLKW``, ``F_OFD_*``), ``F_DUPFD_CLOEXEC``,
``F_GETPIPE_SZ``, ``F_GET_SEALS``; and ``F_SETFL`` without ``O_ASYNC``. Any other command fails
with ``EPERM``, and those in :data:`KILLING_FCNTLS` end the child."""

KILLING_FCNTLS = (8, 10, 15, 1024, 1026)
"""``F_SETOWN``, ``F_SETSIG``, ``F_SETOWN_EX``, ``F_SETLEASE`` and ``F_NOTIFY``: each makes the
kernel send signals on the file's events (to an owner of the caller's choosing, or SIGKILL as the
signal), which Landlock scopes only from ABI 6 (Linux 6.12); ``F_SETFL`` with ``O_ASYNC`` too."""

PR_SET_PDEATHSIG = 1

BANNED_EVENTS = (
    "socket.", "subprocess.", "os.system", "os.exec", "os.posix_spawn", "os.fork", "os.spawn",
    "ctypes.", "os.kill", "os.killpg", "signal.pthread_kill", "os.remove", "os.rename",
    "os.rmdir", "shutil.", "os.link", "os.symlink", "os.truncate", "os.chmod", "os.chown",
    "os.mkdir", "os.utime", "os.putenv", "os.unsetenv", "os.setxattr", "os.removexattr",
    "builtins.input", "resource.setrlimit", "resource.prlimit", "gc.get_",
)  # fmt: skip
"""Audit events the friendly layer refuses by name."""

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


class Forbidden(Exception):
    """An operation refused by the sandbox (the audit hook or the OS layer)."""


class CpuExceeded(BaseException):
    """The per-call CPU timer fired."""


def main() -> None:
    """Run the child: read the spec, set up, confine, load the code, answer calls."""
    proto_in, proto_out = _protocol_streams()
    spec = json.loads(proto_in.readline())
    send = _sender(proto_out)
    die_with_parent(int(spec["parent"]))
    _limit_resources(spec)
    home = os.path.realpath(spec["home"])
    os.chdir(home)
    _preimport(spec["imports"])
    roots = readable_roots()
    if spec["sandbox"]:
        try:
            confine(home, roots, spec["libraries"], spec.get("landlock_abi"))
        except Exception as exc:  # any failure to confine means: run nothing
            send({"kind": "error", "sandbox_error": f"{type(exc).__name__}: {exc}"})
            return
    signal.signal(signal.SIGPROF, _on_cpu)
    sys.addaudithook(make_hook(home, roots, spec["imports"], spec["denied"]))
    send({"kind": "ready"})  # before any code we did not write runs: it cannot forge this one
    _serve(spec, proto_in, send)


def _protocol_streams() -> tuple[IO[str], IO[str]]:
    """The protocol streams, moved off fds 0 and 1 (which then point at /dev/null)."""
    proto_in = os.fdopen(os.dup(0), "r", encoding="utf-8")
    proto_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 (lives as long as the child)
    sys.stdout = sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
    return proto_in, proto_out


def _sender(proto_out: IO[str]) -> Callable[[dict[str, Any]], None]:
    """A function writing one JSON line to the parent."""

    def send(message: dict[str, Any]) -> None:
        proto_out.write(json.dumps(message, allow_nan=False) + "\n")
        proto_out.flush()

    return send


def die_with_parent(parent: int) -> None:
    """Have the kernel SIGKILL this process when the parent dies (``PR_SET_PDEATHSIG``), and exit
    at once if it already has (then this process was handed to another parent before the
    signal was set, and no death signal would ever come).

    The death signal follows the parent *thread* that started the child; a worker started from
    a thread that then ends loses its child, and the next call starts a fresh one.
    """
    if not sys.platform.startswith("linux"):
        return
    before = set(sys.modules)
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    failed = libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0
    code = ctypes.get_errno()
    _forget_modules(before)
    if failed:
        raise OSError(code, "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:
        os._exit(1)


def _forget_modules(before: set[str]) -> None:
    """Drop the modules imported since ``before`` (later imports go through the audit hook)."""
    for name in set(sys.modules) - before:
        del sys.modules[name]


def _limit_resources(spec: dict[str, Any]) -> None:
    """Lifetime CPU, address space and file size limits; no core dumps. ``SIGXFSZ`` is ignored,
    so a write past the file-size limit fails with ``EFBIG`` instead of killing the child."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    cpu = int(spec["lifetime_cpu"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (spec["memory"], spec["memory"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (spec["fsize"], spec["fsize"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _preimport(names: Iterable[str]) -> None:
    """Import the allowed modules now (their own imports, such as contextlib, load with them)."""
    for name in sorted(names):
        with contextlib.suppress(ImportError):
            __import__(name)


def readable_roots() -> tuple[str, ...]:
    """What the child may read: stdlib, lib-dynload, site-packages, and the shared libraries
    the interpreter has mapped (all resolved, existing paths)."""
    paths = sysconfig.get_paths()
    found = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    found |= {p for p in sys.path if p.endswith(".zip")}
    found |= set(_mapped_files())
    return tuple(sorted({os.path.realpath(p) for p in found if p and os.path.exists(p)}))


def _mapped_files() -> list[str]:
    """Files mapped into this process (the interpreter and its shared libraries)."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            fields = [line.split(maxsplit=5) for line in maps]
    except OSError:
        return []
    return [f[5].strip() for f in fields if len(f) == 6 and f[5].startswith("/")]


def confine(
    home: str,
    roots: Iterable[str],
    libraries: dict[str, str | None],
    max_abi: int | None = None,
) -> None:
    """Drop capabilities, then Landlock, then seccomp; raise if any of them cannot apply.

    ``libraries`` names the shared libraries (``c``, ``seccomp``) as the parent found them;
    ``max_abi`` caps the Landlock ABI used (to run as a kernel with an older one would).
    """
    before = set(sys.modules)
    with _known_libraries(libraries):
        import pyseccomp  # loads libseccomp while it can still be read

        drop_capabilities()
        apply_landlock(home, roots, max_abi)
    apply_seccomp(pyseccomp)
    _forget_modules(before)  # ctypes, subprocess...: imports go through the hook


def drop_capabilities() -> None:
    """Empty every capability set (bounding, ambient, effective, permitted, inheritable).

    Only matters when the parent runs as root. Uses ``prctl`` and ``capset`` through ctypes:
    the PyPI bindings for capabilities are unmaintained, and this is a few calls.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    pr_capbset_drop, pr_cap_ambient, pr_cap_ambient_clear_all = 24, 47, 4
    libc.prctl(pr_cap_ambient, pr_cap_ambient_clear_all, 0, 0, 0)
    for cap in range(64):  # fails harmlessly without CAP_SETPCAP and past the last capability
        libc.prctl(pr_capbset_drop, cap, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()
    if libc.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def apply_landlock(home: str, roots: Iterable[str], max_abi: int | None = None) -> None:
    """Landlock: read-only ``roots``, read-write ``home``, nothing else; signals and abstract
    UNIX sockets scoped to this process (ABI 6 and later); ``no_new_privs`` set.

    Only the rights and scopes of ``min(kernel ABI, max_abi)`` are used."""
    import landlockpy
    from landlockpy import AccessFS, Ruleset, Scope, fs_for_abi, net_for_abi, scope_for_abi

    abi = landlockpy.abi_version()
    abi = abi if max_abi is None else min(abi, max_abi)
    if abi < MIN_LANDLOCK_ABI:
        raise OSError(f"Landlock ABI {abi} is below the {MIN_LANDLOCK_ABI} needed")
    read_file, read_dir = AccessFS.READ_FILE, AccessFS.READ_FILE | AccessFS.READ_DIR
    write = (
        read_dir | AccessFS.WRITE_FILE | AccessFS.TRUNCATE | AccessFS.MAKE_REG
        | AccessFS.MAKE_DIR | AccessFS.REMOVE_FILE | AccessFS.REMOVE_DIR | AccessFS.REFER
    )  # fmt: skip
    scoped = (Scope.ABSTRACT_UNIX_SOCKET | Scope.SIGNAL) & scope_for_abi(abi)
    with Ruleset(
        handled_fs=fs_for_abi(abi), handled_net=net_for_abi(abi), scoped=scoped
    ) as ruleset:
        for root in roots:
            ruleset.allow_path(root, read_dir if os.path.isdir(root) else read_file)
        ruleset.allow_path(home, write)
        ruleset.restrict()


def apply_seccomp(sc: Any) -> None:
    """Load the seccomp allow-list (``EPERM`` by default, the child killed for the calls in
    :data:`KILLING_SYSCALLS`) with the ``pyseccomp`` module ``sc``."""
    me = os.getpid()
    f = sc.SyscallFilter(sc.ERRNO(errno.EPERM))
    _add_rules(sc, f, sc.ALLOW, ALLOWED_SYSCALLS)
    _add_rules(sc, f, sc.KILL_PROCESS, KILLING_SYSCALLS)
    for name in ("kill", "tgkill", "tkill"):  # only to this process
        f.add_rule(sc.ALLOW, name, sc.Arg(0, sc.EQ, me))
        f.add_rule(sc.KILL_PROCESS, name, sc.Arg(0, sc.NE, me))
    f.add_rule(sc.ALLOW, "prlimit64", sc.Arg(2, sc.EQ, 0))  # read a limit, never set one
    f.add_rule(sc.KILL_PROCESS, "prlimit64", sc.Arg(2, sc.NE, 0))
    for request in ALLOWED_IOCTLS:
        f.add_rule(sc.ALLOW, "ioctl", sc.Arg(1, sc.EQ, request))
    for request in KILLING_IOCTLS:
        f.add_rule(sc.KILL_PROCESS, "ioctl", sc.Arg(1, sc.EQ, request))
    _fcntl_rules(sc, f)
    f.load()


def _fcntl_rules(sc: Any, f: Any) -> None:
    """``fcntl`` by command: :data:`ALLOWED_FCNTLS` and ``F_SETFL`` without ``O_ASYNC`` pass,
    :data:`KILLING_FCNTLS` and ``F_SETFL`` with ``O_ASYNC`` end the child, the rest is
    ``EPERM``. The comparisons are on all 64 bits, so a command with high bits set (which the
    kernel would read as its low 32) matches no allow rule and fails."""
    arch = sc.system_arch()
    for name in ("fcntl", "fcntl64"):
        if sc.resolve_syscall(arch, name) < 0:
            continue
        for command in ALLOWED_FCNTLS:
            f.add_rule(sc.ALLOW, name, sc.Arg(1, sc.EQ, command))
        for command in KILLING_FCNTLS:
            f.add_rule(sc.KILL_PROCESS, name, sc.Arg(1, sc.EQ, command))
        f.add_rule(sc.ALLOW, name, sc.Arg(1, sc.EQ, F_SETFL), sc.Arg(2, sc.MASKED_EQ, O_ASYNC, 0))
        f.add_rule(
            sc.KILL_PROCESS,
            name,
            sc.Arg(1, sc.EQ, F_SETFL),
            sc.Arg(2, sc.MASKED_EQ, O_ASYNC, O_ASYNC),
        )


@contextlib.contextmanager
def _known_libraries(libraries: dict[str, str | None]) -> Iterator[None]:
    """Within the block, ``ctypes.util.find_library`` answers with the names the parent found:
    both confinement libraries look up libc (and pyseccomp libseccomp) with it, which would
    otherwise run ``ldconfig`` in a subprocess from this child."""
    import ctypes.util

    original = ctypes.util.find_library

    def known(name: str) -> str | None:
        return libraries[name] if name in libraries else original(name)

    ctypes.util.find_library = known
    try:
        yield
    finally:
        ctypes.util.find_library = original


def _add_rules(sc: Any, f: Any, action: int, names: Iterable[str]) -> None:
    """Add one rule per system call known on this architecture (others do not exist here)."""
    arch = sc.system_arch()
    for name in names:
        if sc.resolve_syscall(arch, name) >= 0:
            f.add_rule(action, name)


def make_hook(
    home: str, roots: Iterable[str], imports: Iterable[str], denied: Iterable[str]
) -> Callable[[str, tuple[Any, ...]], None]:
    """The audit hook: refuses with a message naming what and why (a courtesy, not a boundary;
    the OS layers are the boundary)."""
    allowed, refused = frozenset(imports), frozenset(denied)
    readable = tuple(roots)
    builtin = frozenset(sys.builtin_module_names)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "import":
            top = str(args[0]).split(".")[0]
            private = top.startswith("_") and top not in refused
            if top not in allowed and top not in builtin and not private:
                raise Forbidden(f"import of {args[0]!r} is not allowed")
        elif event == "open":
            _check_open(args, home, readable)
        elif event.startswith(BANNED_EVENTS):
            raise Forbidden(f"{event} is not allowed")

    return hook


def _check_open(args: tuple[Any, ...], home: str, readable: tuple[str, ...]) -> None:
    """Refuse writing outside ``home`` and reading outside it and ``readable``."""
    path, mode, flags = args[0], args[1], args[2]
    if isinstance(path, int):
        return
    real = os.path.realpath(os.fspath(path))
    writing = isinstance(mode, str) and any(c in mode for c in "wax+")
    writing = writing or (isinstance(flags, int) and bool(flags & _WRITE_FLAGS))
    inside = real == home or real.startswith(home + os.sep)
    if writing and not inside:
        raise Forbidden(f"writing {path!r} outside the sandbox directory")
    if not inside and not any(real == r or real.startswith(r + os.sep) for r in readable):
        raise Forbidden(f"reading {path!r} outside the sandbox directory")


def _on_cpu(signum: int, frame: Any) -> None:
    """SIGPROF: the call used up its CPU time."""
    del signum, frame
    raise CpuExceeded()


def plain(value: Any, where: str) -> Any:
    """``value`` as JSON data (tuples become lists), or TypeError naming where it is not."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise TypeError(f"{where} is {value!r}, which JSON cannot carry")
        return value
    if isinstance(value, list | tuple):
        return [plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"{where} has a {type(k).__name__} key {k!r}; keys must be strings")
            out[k] = plain(v, f"{where}[{k!r}]")
        return out
    raise TypeError(f"{where} is a {type(value).__name__}, not JSON data")


def guarded(action: Callable[[], dict[str, Any]], spec: dict[str, Any]) -> dict[str, Any]:
    """Run ``action`` under the CPU timer; every failure becomes a reply with its kind."""
    cpu = spec["cpu"]
    signal.setitimer(signal.ITIMER_PROF, cpu)
    try:
        return action()
    except Forbidden as exc:
        return {"kind": "forbidden", "error": str(exc)}
    except PermissionError as exc:
        if not spec["sandbox"]:
            return {"kind": "error", "error": f"PermissionError: {exc}"}
        return {"kind": "forbidden", "error": f"{exc} (refused by the OS sandbox)"}
    except CpuExceeded:
        return {"kind": "cpu", "error": f"CPU-time limit of {cpu} s exceeded"}
    except MemoryError:
        return {"kind": "memory", "error": "memory limit exceeded"}
    except OSError as exc:
        if exc.errno != errno.EFBIG:
            return {"kind": "error", "error": f"{type(exc).__name__}: {exc}"}
        return {"kind": "error", "error": _file_limit(spec["fsize"], exc)}
    except BaseException as exc:
        return {"kind": "error", "error": f"{type(exc).__name__}: {exc}"}
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)


def _file_limit(fsize: int, exc: OSError) -> str:
    """The error of a write stopped at the file-size limit."""
    return (
        f"disk limit reached: a file may hold at most {fsize // (1024 * 1024)} MB "
        f"(file-size limit; {type(exc).__name__}: {exc})"
    )


def call(scope: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    """One call of a function the loaded code defines (an RNG argument rebuilt from its state)."""
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
    out = {"kind": "ok", "value": plain(function(*args), "the result")}
    if rng is not None:
        version, words, gauss = rng.getstate()
        mt = base64.b64encode(struct.pack(f"<{len(words)}I", *words)).decode()
        out["rng_state"] = {"version": version, "words": len(words), "mt": mt, "gauss": gauss}
    return out


def _serve(spec: dict[str, Any], proto_in: IO[str], send: Callable[[dict[str, Any]], None]) -> None:
    """Load the code, say whether it loaded, then answer requests until stdin closes."""
    scope: dict[str, Any] = {"__name__": "family"}

    def load() -> dict[str, Any]:
        exec(compile(spec["code"], spec["filename"], "exec"), scope)
        return {"kind": "ok"}

    loaded = guarded(load, spec)
    send(loaded)
    if loaded["kind"] != "ok":
        return
    for line in proto_in:
        request = json.loads(line)
        for i, item in enumerate(request["calls"]):
            out = guarded(functools.partial(call, scope, item), spec)
            out.update(id=request["id"], i=i, cpu=time.process_time())
            try:
                send(out)
            except (TypeError, ValueError) as exc:
                send({"kind": "error", "error": f"unserializable result: {exc}",
                      "id": request["id"], "i": i, "cpu": time.process_time()})  # fmt: skip


if __name__ == "__main__":
    main()
