"""The sandbox stops what untrusted family code must not do, and runs what it may."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.logic import _sandbox
from veritask.logic._sandbox import (
    DEFAULT_IMPORTS,
    SandboxSupport,
    SandboxUnavailable,
    SandboxWorker,
    allow_unsafe_no_sandbox,
    run_sandboxed,
    sandbox_support,
)

GOOD = """
import itertools, math
def solution(n):
    return sum(math.comb(n, k) for k in range(n + 1)) + len(list(itertools.permutations(range(3))))
"""


def test_runs_allowed_code() -> None:
    result = run_sandboxed(GOOD, "solution", [5])
    assert result.ok and result.value == 32 + 6


def test_stops_an_infinite_loop() -> None:
    result = run_sandboxed(
        "def f():\n    while True:\n        pass\n", "f", [], cpu_seconds=1, wall_seconds=10
    )
    assert result.kind in ("cpu", "timeout"), result


def test_stops_a_memory_bomb() -> None:
    result = run_sandboxed(
        "def f():\n    return len(bytearray(4 * 1024**3))\n", "f", [], memory_mb=256
    )
    assert result.kind == "memory", result


def test_stops_a_socket_connect() -> None:
    code = "def f():\n    import socket\n    s = socket.socket()\n    s.connect(('127.0.0.1', 9))\n"
    # by default the socket modules cannot even be imported
    result = run_sandboxed(code, "f", [])
    assert result.kind == "forbidden" and "socket" in (result.error or ""), result
    # and with them importable, the audit hook still refuses the socket itself
    importable = DEFAULT_IMPORTS | {"socket", "_socket", "selectors", "select", "errno", "os"}
    result = run_sandboxed(code, "f", [], imports=importable)
    assert result.kind == "forbidden" and "socket.__new__" in (result.error or ""), result


def test_refuses_a_disallowed_import() -> None:
    result = run_sandboxed("def f():\n    import subprocess\n    return 1\n", "f", [])
    assert result.kind == "forbidden" and "subprocess" in (result.error or "")


def test_stops_a_write_outside_its_directory_but_allows_inside() -> None:
    outside = run_sandboxed("def f():\n    open('/tmp/vt-escape.txt', 'w').write('x')\n", "f", [])
    assert outside.kind == "forbidden" and "outside" in (outside.error or ""), outside
    inside = run_sandboxed(
        "def f():\n    open('scratch.txt', 'w').write('x')\n    return open('scratch.txt').read()\n",
        "f",
        [],
    )
    assert inside.ok and inside.value == "x"


def test_reports_an_ordinary_exception() -> None:
    result = run_sandboxed("def f():\n    return 1 / 0\n", "f", [])
    assert result.kind == "error" and "ZeroDivisionError" in (result.error or "")


# --- the OS sandbox: what this kernel offers, the confined child, refusal without it ----------


def _without_os_sandbox(monkeypatch: pytest.MonkeyPatch, reason: str) -> None:
    """Pretend the kernel has neither Landlock nor seccomp."""
    missing = SandboxSupport(0, False, None, (reason,))
    monkeypatch.setattr(_sandbox, "sandbox_support", lambda: missing)


def test_support_report_is_consistent() -> None:
    support = sandbox_support()
    data = support.to_json()
    assert data["available"] == (not data["problems"])
    if support.available:
        assert support.landlock_abi >= _sandbox.MIN_LANDLOCK_ABI and support.seccomp


def test_the_child_is_confined_and_inherits_nothing() -> None:
    code = "import time\ndef nap():\n    time.sleep(1.5)\n"
    if not sandbox_support().available:
        with pytest.raises(SandboxUnavailable, match="--unsafe-no-sandbox"):
            SandboxWorker(code).load()
        return
    with SandboxWorker(code) as worker:
        nap = threading.Thread(target=worker.call, args=("nap",))
        nap.start()
        time.sleep(0.5)
        assert worker._child is not None
        pid = worker._child.proc.pid
        status = dict(
            line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        )
        fds = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        nap.join()
    assert status["NoNewPrivs"].strip() == "1" and status["Seccomp"].strip() == "2"
    assert int(status["CapEff"], 16) == 0 and int(status["CapBnd"], 16) == 0
    assert all(fd == "/dev/null" or fd.startswith("pipe:") or "(deleted)" in fd for fd in fds)
    assert sorted(e.split(b"=")[0] for e in environ if e) == sorted(
        k.encode() for k in _sandbox.CHILD_ENV
    )


def test_refuses_without_the_os_sandbox_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    _without_os_sandbox(monkeypatch, "no Landlock (python argument test)")
    with pytest.raises(SandboxUnavailable, match="--unsafe-no-sandbox") as refused:
        run_sandboxed(GOOD, "solution", [5])
    assert "no Landlock (python argument test)" in str(refused.value)
    with pytest.warns(RuntimeWarning, match="WITHOUT the OS sandbox"):
        result = run_sandboxed(GOOD, "solution", [5], unsafe_no_sandbox=True)
    assert result.ok and result.value == 38
    with allow_unsafe_no_sandbox():
        assert run_sandboxed(GOOD, "solution", [5]).ok
    with pytest.raises(SandboxUnavailable):
        run_sandboxed(GOOD, "solution", [5])  # the permission ended with the block


FAMILY = """
FAMILY = {"id": "plain_sum", "version": "1", "category": "symbolic", "title": "Sum",
          "template": "Add [Input Slot 1].", "answer_format": "An integer."}
def generate(difficulty, rng):
    n = [rng.randint(1, 9) for _ in range(3)]
    return {"n": n}, [", ".join(map(str, n))]
def solution(inputs):
    return sum(inputs["n"])
def solution_loop(inputs):
    total = 0
    for x in inputs["n"]:
        total += x
    return total
"""


def test_cli_refuses_family_files_without_the_os_sandbox(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _without_os_sandbox(monkeypatch, "no Landlock (CLI test)")
    (tmp_path / "plain_sum.py").write_text(FAMILY, encoding="utf-8")
    out = tmp_path / "out.jsonl"
    args = ["logic", "generate", "plain_sum", "--n", "2", "--difficulty", "1",
            "--families-dir", str(tmp_path), "--out", str(out)]  # fmt: skip
    refused = CliRunner().invoke(cli, args)
    assert refused.exit_code == 1 and "--unsafe-no-sandbox" in refused.output
    assert "no Landlock (CLI test)" in refused.output and not out.exists()
    with pytest.warns(RuntimeWarning):
        allowed = CliRunner().invoke(cli, [*args, "--unsafe-no-sandbox"])
    assert allowed.exit_code == 0, allowed.output
    assert "WITHOUT the OS sandbox" in allowed.output and len(out.read_text().splitlines()) == 2
    builtin = CliRunner().invoke(
        cli, ["logic", "generate", "arithmetic_chain", "--n", "2", "--difficulty", "1",
              "--out", str(tmp_path / "builtin.jsonl")],
    )  # fmt: skip
    assert builtin.exit_code == 0, builtin.output  # our own families need no sandbox


def test_cli_reports_kernel_support() -> None:
    result = CliRunner().invoke(cli, ["logic", "sandbox", "--json"])
    data = json.loads(result.output)
    assert set(data) == {"available", "landlock_abi", "seccomp", "lsm", "problems"}
    assert result.exit_code == (0 if data["available"] else 1)
