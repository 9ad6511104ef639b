"""The trainer extras accept a user's CUDA build of torch; only the dev extras pin the CPU one."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _extras() -> dict[str, list[Requirement]]:
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    extras = data["project"]["optional-dependencies"]
    return {name: [Requirement(r) for r in reqs] for name, reqs in extras.items()}


def _torch(extra: str) -> Requirement:
    return next(r for r in _extras()[extra] if r.name == "torch")


@pytest.mark.parametrize("extra", ["trl", "verl"])
@pytest.mark.parametrize("build", ["2.13.0+cu128", "2.13.0+cu126", "2.8.0+cu129", "2.13.0+cpu"])
def test_trainer_extras_keep_a_cuda_build_of_torch(extra: str, build: str) -> None:
    assert _torch(extra).specifier.contains(build), f"{extra} would replace torch {build}"


@pytest.mark.parametrize("extra", ["trl", "verl"])
def test_trainer_extras_bound_torch_both_ways(extra: str) -> None:
    spec = _torch(extra).specifier
    assert not spec.contains("1.13.1") and not spec.contains("3.0.0")


def test_only_the_dev_extras_pin_the_cpu_build() -> None:
    assert str(_torch("dev").specifier) == "==2.13.0"
    pinned = [
        n
        for n, reqs in _extras().items()
        for r in reqs
        if r.name == "torch" and "==" in str(r.specifier)
    ]
    assert pinned == ["dev"]


def test_no_extra_pulls_in_litellm_through_areal_or_rllm() -> None:
    """areal 1.0 and rllm 0.3 declare litellm[proxy]; veritask never depends on LiteLLM, not
    even through an extra, so those extras carry only what the adapters need."""
    named = {r.name for reqs in _extras().values() for r in reqs}
    assert not named & {"areal", "rllm", "litellm"}
    assert _extras()["areal"] and _extras()["rllm"]
