"""``eval`` and ``logic generate`` killed with SIGKILL at several points, then rerun, end with the
bytes of an uninterrupted run and no record twice.

The harness kills the real CLI process once a given number of records is on disk (the output
lines of ``eval --out``, the unit parts of ``logic generate``), so a kill can land between two
records or in the middle of writing one; nothing here depends on timing to pass.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from veritask.synth import generate

CLI = [sys.executable, "-m", "veritask._cli.main"]
ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}


def _records(path: Path) -> int:
    """Complete lines in ``path`` (0 when it does not exist yet)."""
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


def _parts(folder: Path) -> int:
    """Part files in ``folder`` (0 when it does not exist yet)."""
    try:
        return sum(1 for p in folder.iterdir() if p.suffix == ".json")
    except OSError:
        return 0


def kill_when(args: list[str], ready: Callable[[], bool]) -> bool:
    """Run the CLI and SIGKILL it once ``ready()``; whether it was killed before it finished."""
    proc = subprocess.Popen([*CLI, *args], env=ENV, stdout=subprocess.DEVNULL)
    try:
        while proc.poll() is None:
            if ready():
                os.kill(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.005)  # polling only: the outcome does not depend on it
    finally:
        proc.wait()
    return proc.returncode == -signal.SIGKILL


def finish(args: list[str]) -> None:
    done = subprocess.run([*CLI, *args], env=ENV, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kill9") / "mock"
    generate("mock", 8, 2, out)
    return out


@pytest.fixture(scope="module")
def whole_eval(dataset: Path) -> bytes:
    out = dataset.parent / "whole.jsonl"
    finish(["eval", str(dataset), "--trials", "2", "--concurrency", "1", "--out", str(out)])
    return out.read_bytes()


@pytest.mark.parametrize("after", [1, 11])
def test_eval_killed_after_n_records_resumes_to_the_same_bytes(
    dataset: Path, whole_eval: bytes, tmp_path: Path, after: int
) -> None:
    out = tmp_path / "killed.jsonl"
    args = ["eval", str(dataset), "--trials", "2", "--concurrency", "1", "--out", str(out)]
    assert kill_when(args, lambda: _records(out) >= after)
    finish(args)
    assert out.read_bytes() == whole_eval
    keys = [(r["task_id"], r["trial"]) for r in map(json.loads, out.read_text().splitlines())]
    assert len(keys) == len(set(keys)) == 16


LOGIC = ["logic", "generate", "all", "--n", "12", "--difficulty", "2", "--seed", "4"]


@pytest.fixture(scope="module")
def whole_logic(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    out = tmp_path_factory.mktemp("logic") / "whole.jsonl"
    finish([*LOGIC, "--out", str(out)])
    return out.read_bytes()


@pytest.mark.parametrize("after", [2])
def test_logic_generate_killed_after_n_units_resumes_to_the_same_bytes(
    whole_logic: bytes, tmp_path: Path, after: int
) -> None:
    out = tmp_path / "killed.jsonl"
    parts = out.with_name(out.name + ".parts")
    assert kill_when([*LOGIC, "--out", str(out)], lambda: _parts(parts) >= after)
    finish([*LOGIC, "--out", str(out)])
    assert out.read_bytes() == whole_logic
    questions = [
        (r["family"], r["question"]) for r in map(json.loads, out.read_text().splitlines())
    ]
    assert len(questions) == len(set(questions))
