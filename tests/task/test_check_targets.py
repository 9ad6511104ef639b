"""How ``check`` reads states: each origin hashed once per run, each target read once without
being kept, and every byte still verified (an edited target is caught under its own name)."""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.task.test_check_paths import _rewrite_packs

import veritask.task._integrity as integrity
from veritask._util import sha256
from veritask.task import DatasetDir, check_dataset, load_dataset
from veritask.task._check import _Checker, _Domain
from veritask.task._compact import make_runs_delta


@pytest.fixture
def pristine(generated: Callable[[str, int, int], Path]) -> Path:
    return generated("travel", 6, 11)  # shared with other tests: read only


def _domain(checker: _Checker, name: str) -> _Domain:
    dom = checker.domain(name)
    assert isinstance(dom, _Domain)
    return dom


def test_a_target_is_read_once_without_being_kept(pristine: Path) -> None:
    ds = DatasetDir(pristine)
    pkg = next(p for p in load_dataset(pristine) if p.target != p.origin)
    checker = _Checker(ds)
    try:
        problem, data = checker.target(_domain(checker, pkg.domain), pkg)
    finally:
        checker.close()
    assert problem is None and data is not None and sha256(data) == pkg.target
    assert pkg.target not in ds._cache  # the origin it was rebuilt from is kept
    assert pkg.origin in ds._cache
    assert DatasetDir(pristine).read_state(pkg.target) == data


def test_each_state_is_hashed_once_per_run(pristine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A scene's tasks share their origin: it is hashed once, each target once."""
    hashed: Counter[str] = Counter()

    def counting(data: bytes) -> str:
        digest = sha256(data)
        hashed[digest] += 1
        return digest

    monkeypatch.setattr(integrity, "sha256", counting)
    packages = load_dataset(pristine)
    assert check_dataset(pristine).ok
    states = {p.origin for p in packages} | {p.target for p in packages}
    assert len({p.origin for p in packages}) < len(packages)  # shared origins
    assert {d: hashed[d] for d in states} == dict.fromkeys(states, 1)


def test_an_edited_target_is_caught_and_its_scene_still_checks(
    pristine: Path, tmp_path: Path
) -> None:
    """The target's bytes are verified when they are read, even after its origin (and the
    other targets of its scene) were verified in the same run."""
    data = Path(shutil.copytree(pristine, tmp_path / "ds"))
    packages = load_dataset(data)
    pkg = next(p for p in packages[1:] if p.target != p.origin and p.origin == packages[0].origin)
    _rewrite_packs(data, make_runs_delta, 2, edit=pkg.target)
    DatasetDir(data).seal(load_dataset(data))  # resealed: the state check does not trust it
    report = check_dataset(data)
    assert {f["id"] for f in report.failures} == {pkg.id}
    assert all("does not hash to its name" in f["detail"] for f in report.failures)
    assert report.certified == len(packages) - 1
