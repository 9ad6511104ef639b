"""One writer per run output: a second live run into the same output stops at once.

The holder is a real second process that claims the output the way every job does (opening
its run manifest) and then waits on its stdin; the test learns it holds the lock from a line
it prints, so nothing here depends on timing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from veritask.pipeline import RunInUse, RunManifest, release_runs

CLI = [sys.executable, "-m", "veritask._cli.main"]
SRC = str(Path(__file__).parents[2] / "src")

HOLDER = """
import sys
from pathlib import Path
from veritask.pipeline import RunManifest
out = Path(sys.argv[1])
RunManifest("generate", {"held": True}, []).open(out / "run-manifest.json", where=str(out))
print("held", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC, "VERITASK_LOCK_DIR": str(tmp_path / "locks")}


@pytest.fixture
def holder(tmp_path: Path, env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    """A process holding ``data/travel`` (relative to ``tmp_path``) until its stdin closes."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, "data/travel"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def _generate(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    args = ["generate", "--domain", "mock", "--n", "4", "--seed", "1", "--out", "data/travel"]
    return subprocess.run(
        [*CLI, *args], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )


def test_a_second_generate_into_a_held_directory_stops_with_one_line(
    tmp_path: Path, env: dict[str, str], holder: subprocess.Popen[str]
) -> None:
    done = _generate(tmp_path, env)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"Error: data/travel is in use by another veritask run (pid {holder.pid}); "
        "wait for it or choose another --out"
    )
    assert not (tmp_path / "data" / "travel" / "manifest.jsonl").exists()
    holder.communicate("")  # the holder exits normally: the directory is free again
    assert holder.returncode == 0
    again = _generate(tmp_path, env)
    assert "in use" not in again.stderr  # free now, but it holds another run's manifest
    assert "holds a different run of generate" in again.stderr


def test_a_lock_left_by_a_killed_process_does_not_block(
    tmp_path: Path, env: dict[str, str], holder: subprocess.Popen[str]
) -> None:
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    (tmp_path / "data" / "travel" / "run-manifest.json").unlink()  # a fresh run may start
    done = _generate(tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "data" / "travel" / "manifest.jsonl").exists()


def test_the_holder_may_open_its_output_again_and_others_are_named_by_pid(
    tmp_path: Path,
    env: dict[str, str],
    holder: subprocess.Popen[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VERITASK_LOCK_DIR", env["VERITASK_LOCK_DIR"])
    monkeypatch.chdir(tmp_path)
    held = Path("data/travel/run-manifest.json")
    with pytest.raises(RunInUse) as caught:
        RunManifest("generate", {"held": True}, []).open(held, where="data/travel")
    assert caught.value.pid == str(holder.pid)
    mine = RunManifest("generate", {"mine": True}, ["u0"])
    try:
        assert mine.open(Path("data/other/run-manifest.json")) is mine
        assert mine.open(Path("data/other/run-manifest.json")) == mine  # the same process
    finally:
        release_runs()
