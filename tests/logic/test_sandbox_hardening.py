"""Hardening of the sandbox: signal-driven I/O without Landlock's signal scope, a child that
outlives its parent, the disk cap during a call, the opt-out hint, and family source too deep
for the parser.

The signal-driven I/O attacks run with the Landlock ABI capped at 5 (what Linux 6.2-6.11
offer: no ``LANDLOCK_SCOPE_SIGNAL``), so the seccomp filter has to stop them on its own. Tests
that need the OS sandbox skip with the reason where the kernel lacks it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import veritask
from veritask._cli.main import cli
from veritask.logic import FamilyFileError, _sandbox, parse_family_source, sandbox_support
from veritask.logic._filefamily import MAX_NESTING, MAX_SOURCE_CHARS
from veritask.logic._sandbox import (
    DEFAULT_IMPORTS,
    MAX_LANDLOCK_ABI_ENV,
    SandboxLimits,
    SandboxUnavailable,
    SandboxWorker,
)

SUPPORT = sandbox_support()
needs_sandbox = pytest.mark.skipif(
    not SUPPORT.available, reason=f"no OS sandbox here: {'; '.join(SUPPORT.problems)}"
)
UNSAFE = not SUPPORT.available
"""Where the kernel lacks the sandbox, the limits tests still run (the limits are not part of
the OS confinement)."""

HOOK_OFF = """\
import gc, sys
sys.modules["__main__"].BANNED_EVENTS = ("x",)
for _o in gc.get_objects():
    if type(_o).__name__ == "function" and _o.__name__ == "hook":
        _free = _o.__code__.co_freevars
        _ns = {}
        exec("def outer():\\n" + "".join(f"    {n} = None\\n" for n in _free)
             + "    def hook(event, args):\\n        return (" + "".join(f"{n}, " for n in _free)
             + ")\\n    return hook\\n", _ns)
        _o.__code__ = _ns["outer"]().__code__
"""
"""Switch the audit hook off from inside, so only the OS layers stand in the way."""

PIPE_FD = """\
import os, stat
fd = next(n for n in range(3, 64) if _is_pipe(n))
"""
HELPERS = """
def _is_pipe(n):
    import os, stat
    try:
        return stat.S_ISFIFO(os.fstat(n).st_mode)
    except OSError:
        return False
"""

ATTACKS = {
    "f_setown": "fcntl.fcntl(fd, 8, {victim})",
    "f_setown_ex": "fcntl.fcntl(fd, 15, struct.pack('ii', 1, {victim}))",
    "f_setsig": "fcntl.fcntl(fd, 10, 9)",
    "o_async": "fcntl.fcntl(fd, 4, fcntl.fcntl(fd, 3) | os.O_ASYNC)",
    "fioasync": "fcntl.ioctl(fd, 0x5452, struct.pack('i', 1))",
    "fiosetown": "fcntl.ioctl(fd, 0x8901, struct.pack('i', {victim}))",
    "siocspgrp": "fcntl.ioctl(fd, 0x8902, struct.pack('i', -{victim}))",
    "whole_chain": "fcntl.fcntl(fd, 8, {victim})\n"
    "fcntl.fcntl(fd, 10, 9)\n"
    "fcntl.fcntl(fd, 4, fcntl.fcntl(fd, 3) | os.O_ASYNC)",
}
"""Ways to have the kernel signal another process on a pipe's I/O: set the owner, the signal
(SIGKILL) and O_ASYNC on the protocol pipe, and the parent's next write delivers it."""

IMPORTS = DEFAULT_IMPORTS | {"fcntl", "os", "stat", "struct", "termios"}


@pytest.fixture
def victim() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def abi5(monkeypatch: pytest.MonkeyPatch) -> None:
    """Children use Landlock as ABI 5 would: no signal scope."""
    monkeypatch.setenv(MAX_LANDLOCK_ABI_ENV, "5")


def _function(body: str) -> str:
    return HELPERS + "\ndef f():\n" + "".join(f"    {line}\n" for line in body.splitlines())


@needs_sandbox
@pytest.mark.usefixtures("abi5")
@pytest.mark.parametrize("hook_off", [False, True], ids=["as_written", "hook_off"])
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_signal_driven_io_is_stopped_without_the_landlock_scope(
    attack: str, hook_off: bool, victim: subprocess.Popen[bytes]
) -> None:
    body = (HOOK_OFF if hook_off else "") + "import fcntl, struct\n" + PIPE_FD
    body += ATTACKS[attack].format(victim=victim.pid) + "\nreturn 'armed'\n"
    limits = SandboxLimits(imports=IMPORTS)
    with SandboxWorker(_function(body), limits) as worker:
        result = worker.call("f")
        assert result.kind == "forbidden" and "seccomp" in (result.error or ""), result
        again = worker.call("f")  # the parent writes to a fresh child's pipes: no signal
        assert again.kind == "forbidden", again
        assert worker.starts == 2
    assert victim.poll() is None, "the victim process was killed"


@needs_sandbox
@pytest.mark.usefixtures("abi5")
def test_the_fcntl_calls_the_interpreter_needs_still_work() -> None:
    body = (
        "import fcntl\n" + PIPE_FD + "flags = fcntl.fcntl(fd, fcntl.F_GETFL)\n"
        "os.set_blocking(fd, False)\nos.set_blocking(fd, True)\n"
        "fcntl.fcntl(fd, fcntl.F_SETFD, fcntl.fcntl(fd, fcntl.F_GETFD))\n"
        "os.close(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10))\n"
        "return fcntl.fcntl(fd, fcntl.F_GETFL) == flags\n"
    )
    with SandboxWorker(_function(body), SandboxLimits(imports=IMPORTS)) as worker:
        result = worker.call("f")
    assert (result.kind, result.value) == ("ok", True), result


@needs_sandbox
def test_a_landlock_abi_below_the_minimum_is_refused_without_the_opt_out_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cap reaches the child (ABI 2 is below the 3 needed, so it cannot confine itself),
    and since the kernel reports the sandbox, --unsafe-no-sandbox would change nothing: the
    refusal does not suggest it."""
    monkeypatch.setenv(MAX_LANDLOCK_ABI_ENV, "2")
    with pytest.raises(SandboxUnavailable) as refused:
        SandboxWorker("x = 1\n").load()
    message = str(refused.value)
    assert "could not apply" in message and "ABI 2" in message
    assert "unsafe" not in message


ORPHAN_PARENT = """
from veritask.logic import SandboxLimits, SandboxWorker
limits = SandboxLimits(cpu_seconds=60, wall_seconds=60, unsafe_no_sandbox=True)
worker = SandboxWorker("def f():\\n    while True:\\n        pass\\n", limits)
assert worker.load().ok
print(worker._child.proc.pid, flush=True)
worker.call("f")
"""
"""A parent whose sandbox child loads the code, says its pid (then waits for a request, using
no CPU), and is then sent a call that loops forever."""


def _children(pid: int) -> list[int]:
    """The pids whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def _state(pid: int) -> tuple[str, int] | None:
    """A process's state letter and user CPU ticks, None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], int(fields[11])


def _poll(what: str, check: Callable[[], Any], deadline_s: float = 60.0) -> Any:
    """``check()`` once it is truthy, polled every 20 ms until a deadline (the deadline only
    bounds a failing test; a passing one returns as soon as the condition holds)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_the_child_dies_with_its_parent() -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(veritask.__file__).parents[1])}
    parent = subprocess.Popen(
        [sys.executable, "-c", ORPHAN_PARENT], env=env, stdout=subprocess.PIPE
    )
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert child in _children(parent.pid)
        loaded = (_state(child) or ("", 0))[1]
        # the loop is running once the child uses CPU again after loading (5 ticks: 50 ms)
        _poll("the child to loop", lambda: (_state(child) or ("", 0))[1] >= loaded + 5)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        assert _poll("the child to die", lambda: _dead(child))
    finally:
        parent.kill()
        parent.wait()


def _dead(pid: int) -> bool:
    """Gone, or a zombie waiting for a reaper."""
    state = _state(pid)
    return state is None or state[0] in ("Z", "X")


def test_a_1gb_write_stops_at_the_256mb_cap() -> None:
    cap = 256 * 1024 * 1024
    code = """
import os
def fill():
    chunk = b"x" * (1 << 20)
    with open("big", "wb", buffering=0) as fh:
        try:
            for _ in range(1024):
                fh.write(chunk)
        except OSError as exc:
            size = os.fstat(fh.fileno()).st_size
            raise OSError(exc.errno, f"stopped with {size} bytes in the file") from None
    return "all 1 GB written"
"""
    limits = SandboxLimits(file_mb=1024, disk_mb=256, unsafe_no_sandbox=UNSAFE)
    with SandboxWorker(code, limits) as worker:
        result = worker.call("fill")
    assert result.kind == "error" and "256 MB" in (result.error or ""), result
    found = re.search(r"stopped with (\d+) bytes", result.error or "")
    assert found is not None, result
    assert int(found.group(1)) <= cap


def test_the_disk_cap_holds_during_a_call_across_many_files() -> None:
    """Files under the per-file limit, then a call that never returns: the parent stops the
    child for the disk, not at the CPU or wall-clock limit."""
    code = """
def fill():
    for n in range(16):
        with open(f"f{n}", "wb") as fh:
            fh.write(b"x" * (1 << 20))
    while True:
        pass
"""
    limits = SandboxLimits(disk_mb=4, cpu_seconds=30, wall_seconds=30, unsafe_no_sandbox=UNSAFE)
    start = time.monotonic()
    with SandboxWorker(code, limits) as worker:
        result = worker.call("fill")
    assert result.kind == "error" and "disk limit of 4 MB" in (result.error or ""), result
    assert time.monotonic() - start < 20


def test_a_flood_of_empty_files_hits_the_entry_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound is the parent's (``MAX_ENTRIES``, lowered here to keep the test short)."""
    monkeypatch.setattr(_sandbox, "MAX_ENTRIES", 64)
    code = """
def flood(n):
    for i in range(n):
        open(f"e{i}", "w").close()
    return n
"""
    limits = SandboxLimits(disk_mb=256, unsafe_no_sandbox=UNSAFE)
    with SandboxWorker(code, limits) as worker:
        assert worker.call("flood", [60]).ok
        result = worker.call("flood", [70])
    assert result.kind == "error" and "disk limit of 256 MB" in (result.error or ""), result


def test_a_write_past_the_file_limit_with_sigxfsz_restored_is_reported() -> None:
    code = """
import signal
def fill():
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    with open("big", "wb", buffering=0) as fh:
        for _ in range(8):
            fh.write(b"x" * (1 << 20))
"""
    limits = SandboxLimits(file_mb=2, disk_mb=64, unsafe_no_sandbox=UNSAFE)
    with SandboxWorker(code, limits) as worker:
        result = worker.call("fill")
    assert result.kind == "error" and "file-size limit" in (result.error or ""), result


FAMILY = """
FAMILY = {{"id": "{id}", "version": "1", "category": "symbolic", "title": "Deep",
          "template": "What is [Input Slot 1]?", "answer_format": "An integer."}}
def generate(difficulty, rng):
    return {{"n": {expr}}}, ["1"]
def solution(inputs):
    return 1
def solution_other(inputs):
    return 1
"""

BOMBS = {
    "binop": "1" + "+1" * 120_000,
    "unary": "-" * 200_000 + "1",
    "calls": "int" + "()" * 100_000,
    "parens": "(" * 100_000 + "1" + ")" * 100_000,
    "attributes": "inputs" + ".x" * 100_000,
}


@pytest.mark.parametrize("shape", sorted(BOMBS))
def test_a_deeply_nested_family_file_is_refused_before_parsing(shape: str) -> None:
    source = FAMILY.format(id="deep", expr=BOMBS[shape])
    with pytest.raises(FamilyFileError, match=rf"^deep\.py: nested more than {MAX_NESTING} deep"):
        parse_family_source(source, "deep.py")


@pytest.mark.parametrize(
    "tail", ["#" * MAX_SOURCE_CHARS, "\nx = 1" + "+1" * 200_000], ids=["comment", "expression"]
)
def test_a_family_file_too_long_is_refused(tail: str) -> None:
    source = FAMILY.format(id="long", expr="1") + tail
    with pytest.raises(FamilyFileError, match=rf"^long\.py: .*more than the {MAX_SOURCE_CHARS}"):
        parse_family_source(source, "long.py")


def test_ordinary_nesting_passes_the_pre_scan() -> None:
    expr = "[" + ", ".join(f"({i} + {i}) * 2" for i in range(5000)) + "][0]"
    spec = parse_family_source(FAMILY.format(id="wide", expr=expr), "wide.py")
    assert spec.id == "wide" and spec.validators == ("solution", "solution_other")


def test_the_cli_names_the_deep_file_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "deep.py").write_text(FAMILY.format(id="deep", expr=BOMBS["unary"]))
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(
        cli,
        ["logic", "generate", "deep", "--n", "1", "--difficulty", "1", "--families-dir", str(tmp_path),
         "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "deep.py" in lines[0] and "nested more than" in lines[0], lines
    assert not out.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_child_whose_parent_already_changed_exits_at_once() -> None:
    """The race: the parent died before the death signal was set, so the child (handed to
    another parent) must not go on."""
    script = (  # the child script alone, as the sandbox runs it (without the package)
        "import sys\n"
        f"sys.path.insert(0, {str(_sandbox.CHILD_SCRIPT.parent)!r})\n"
        "from _sandbox_child import die_with_parent\n"
        "die_with_parent(int(sys.argv[1]))\n"
        "print('running')\n"
    )
    run = [sys.executable, "-s", "-c", script]
    orphan = subprocess.run([*run, "0"], capture_output=True, timeout=60)
    assert (orphan.returncode, orphan.stdout) == (1, b""), orphan.stderr
    kept = subprocess.run([*run, str(os.getpid())], capture_output=True, timeout=60)
    assert (kept.returncode, kept.stdout) == (0, b"running\n"), kept.stderr


def test_a_deep_validator_from_a_model_is_sent_back_not_parsed() -> None:
    from veritask.logic._draft import parse_validator

    reply = "```python\ndef solution(inputs):\n    return " + BOMBS["unary"] + "\n```\n"
    with pytest.raises(ValueError, match=r"^the validator: nested more than"):
        parse_validator(reply)
