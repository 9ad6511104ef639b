"""The Ray executor gives the local executor's bytes and resumes the same way (needs Ray)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from veritask.pipeline import RayExecutor, executor_for, use_executor
from veritask.synth import generate

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


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
