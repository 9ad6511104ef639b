"""The sandboxed code writes lines of its own to the protocol channel, or fills its directory;
the host survives both.

Code in the child can reach the channel the child answers on (here simply by writing to every
open descriptor). What it forges is data, never an instruction: a reply with fields that do not
fit the protocol (a CPU figure that is not a number, an RNG state that does not load, nesting
past the JSON parser's depth) is an ``error`` result, and a forged "the OS sandbox could not be
applied" after the child confined itself is not believed. Nothing raises in the host. A directory
that outgrows ``disk_mb`` (many files under the per-file limit) stops the child.
"""

from __future__ import annotations

import pytest

from veritask.logic import SandboxWorker, run_sandboxed, sandbox_support
from veritask.logic._sandbox import MALFORMED, SandboxLimits

UNSAFE = not sandbox_support().available  # the protocol is the same without the OS layers

FORGE = """
import os

def f():
    for fd in range(3, 12):
        try:
            os.write(fd, {line!r})
        except OSError:
            pass
    return 1
"""

FORGED_REPLIES = [
    b'{"kind": "ok", "value": 1, "id": 1, "i": 0, "cpu": "abc"}\n',
    b'{"kind": "ok", "value": 1, "id": 1, "i": 0, "cpu": [1]}\n',
    b'{"kind": "ok", "value": 1, "id": 1, "i": 0, "cpu": NaN}\n',
    b'{"kind": "ok", "value": 1, "id": 1, "i": 0, "cpu": -1e308}\n',
    b'{"kind": "ok", "value": 1, "id": 1, "i": 0, "cpu": 0, "rng_state": 5}\n',
    b'{"kind": "ok", "value": 1, "id": 1, "i": 0, "cpu": 0, "rng_state": {"words": "x"}}\n',
    b'{"kind": "ok", "value": 1, "id": 1, "i": 0, "cpu": 0, "rng_state": '
    b'{"version": 3, "words": 2, "mt": "AAAAAAAAAAA=", "gauss": null}}\n',
    b'{"kind": "ok", "value": 1, "id": 1, "i": 0, "cpu": 0, "error": {"x": 1}}\n',
    b'{"kind": "error", "id": 1, "i": 0, "cpu": 0}\n',
    b"[" * 100_000 + b"\n",
    b'{"kind": "ok", "value": ' + b"9" * 5000 + b', "id": 1, "i": 0, "cpu": 0}\n',
]


@pytest.mark.parametrize("line", FORGED_REPLIES, ids=range(len(FORGED_REPLIES)))
def test_a_forged_reply_is_an_error_result(line: bytes) -> None:
    result = run_sandboxed(FORGE.format(line=line), "f", [], unsafe_no_sandbox=UNSAFE)
    assert result.kind == "error" and result.error == MALFORMED


def test_a_forged_sandbox_error_is_not_believed() -> None:
    code = FORGE.format(line=b'{"kind": "error", "sandbox_error": "forged"}\n') + "f()\n"
    result = run_sandboxed(code, "f", [], unsafe_no_sandbox=UNSAFE)  # no SandboxUnavailable
    assert result.kind == "error"


def test_the_worker_goes_on_after_a_forged_reply() -> None:
    code = FORGE.format(line=b'{"kind": "ok", "cpu": "x", "id": 1, "i": 0}\n')
    code += "\ndef g():\n    return 2\n"
    limits = SandboxLimits(unsafe_no_sandbox=UNSAFE)
    with SandboxWorker(code, limits) as worker:
        assert worker.call("f").kind == "error"
        again = worker.call("g")
        assert (again.kind, again.value) == ("ok", 2)
        assert worker.starts == 2


DISK = """
def write(files, size):
    for n in range(files):
        with open(f"f{n}", "wb") as fh:
            fh.write(b"x" * size)
    return files


def listed():
    import os
    return len(os.listdir("."))
"""


@pytest.mark.parametrize(("files", "size"), [(12, 1 << 20), (2000, 0)], ids=["bytes", "inodes"])
def test_a_directory_past_disk_mb_stops_the_child(files: int, size: int) -> None:
    """``file_mb`` bounds one file; many files (or many empty ones) hit ``disk_mb``."""
    limits = SandboxLimits(disk_mb=4, unsafe_no_sandbox=UNSAFE)
    with SandboxWorker(DISK, limits) as worker:
        assert worker.call("write", [1, 1024]).ok  # a little is fine
        result = worker.call("write", [files, size])
        assert result.kind == "error" and "disk limit of 4 MB" in (result.error or "")
        fresh = worker.call("listed")
        assert (fresh.kind, fresh.value, worker.starts) == ("ok", 0, 2)
