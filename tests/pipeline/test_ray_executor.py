"""The Ray executor gives the local executor's bytes and resumes the same way (needs Ray).

Run with ``make test-ray`` (a virtualenv with the ``ray`` extra); skipped where Ray is missing.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from veritask.logic import ProduceSettings, all_families, produce_file
from veritask.pipeline import RayExecutor, executor_for, run_batch, use_executor
from veritask.rollout import RoleFactory, TaskSource
from veritask.synth import generate

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ray") / "mock"
    generate("mock", 12, 4, out)
    return out


def test_use_executor_overrides_the_local_choice() -> None:
    chosen = RayExecutor(2)
    with use_executor(chosen):
        assert executor_for(1) is chosen
    assert executor_for(1) is not chosen


@pytest.mark.usefixtures("local_ray")
def test_ray_and_local_write_the_same_manifest(tmp_path: Path) -> None:
    generate("mock", 24, 4, tmp_path / "local", workers=2)
    with use_executor(RayExecutor(2)):
        generate("mock", 24, 4, tmp_path / "ray", workers=2)
    for name in ("manifest.jsonl", "digest.json"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()


@pytest.mark.usefixtures("local_ray")
def test_a_ray_run_resumes_from_the_units_it_finished(tmp_path: Path) -> None:
    generate("mock", 24, 4, tmp_path / "local")
    out = tmp_path / "ray"
    with use_executor(RayExecutor(2)):
        generate("mock", 24, 4, out)
    parts = sorted((out / "parts").iterdir())
    parts[-1].unlink()  # as if the run was killed before its last unit finished
    (out / "manifest.jsonl").unlink()
    with use_executor(RayExecutor(2)):
        summary = generate("mock", 24, 4, out)
    assert summary.resumed_units == len(parts) - 1
    assert (out / "manifest.jsonl").read_bytes() == (
        tmp_path / "local" / "manifest.jsonl"
    ).read_bytes()


def _rollout(dataset: Path, out: Path) -> list[str]:
    source = TaskSource.load(dataset)
    roles = RoleFactory(agent="oracle", user="scripted")
    trajectories = asyncio.run(run_batch(source, roles, trials=2, seed=7, concurrency=3, out=out))
    return [t.model_dump_json() for t in trajectories]


@pytest.mark.usefixtures("local_ray")
def test_ray_and_local_rollouts_write_the_same_bytes(dataset: Path, tmp_path: Path) -> None:
    local = _rollout(dataset, tmp_path / "local.jsonl")
    with use_executor(RayExecutor(2)):
        remote = _rollout(dataset, tmp_path / "ray.jsonl")
    assert remote == local and len(local) == 24
    assert (tmp_path / "ray.jsonl").read_bytes() == (tmp_path / "local.jsonl").read_bytes()


@pytest.mark.usefixtures("local_ray")
def test_ray_and_local_logic_generate_write_the_same_bytes(tmp_path: Path) -> None:
    families = list(all_families(()).values())[:6]
    settings = ProduceSettings(10, difficulty=2, seed=2)
    produce_file(tmp_path / "local.jsonl", families, settings)
    with use_executor(RayExecutor(2)):
        produce_file(tmp_path / "ray.jsonl", families, settings)
    assert (tmp_path / "ray.jsonl").read_bytes() == (tmp_path / "local.jsonl").read_bytes()


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_a_killed_ray_rollout_resumes_to_the_local_bytes(dataset: Path, tmp_path: Path) -> None:
    """kill -9 of the whole run (driver and the Ray processes it started) after its first
    episodes are written; the rerun finishes with the bytes of an uninterrupted local run."""
    cli = [sys.executable, "-m", "veritask._cli.main", "rollout", str(dataset), "--trials", "8"]
    local, killed = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    subprocess.run([*cli, "--out", str(local)], check=True, capture_output=True)
    total = _lines(local)
    ray_cli = [*cli, "--out", str(killed), "--executor", "ray", "--workers", "2"]
    run = subprocess.Popen(
        [*ray_cli, "--concurrency", "1"],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while _lines(killed) < 2:  # wait for the first episodes, checking the run is alive
            try:
                run.wait(timeout=0.05)
                break
            except subprocess.TimeoutExpired:
                continue
        assert run.poll() is None, "the run ended before it could be killed"
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
    written = _lines(killed)
    assert 2 <= written < total
    done = subprocess.run(ray_cli, check=True, capture_output=True, text=True)
    assert f"{total} trajectories" in done.stdout
    assert killed.read_bytes() == local.read_bytes()
