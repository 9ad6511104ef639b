"""The sandbox stops what untrusted family code must not do, and runs what it may."""

from __future__ import annotations

from veritask.logic._sandbox import DEFAULT_IMPORTS, run_sandboxed

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
