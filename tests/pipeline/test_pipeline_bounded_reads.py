"""Run directories we did not write: a deep or malformed ``run-manifest.json`` and a deep unit
file of an evolution are refused with the file named."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from veritask._util import InputError
from veritask.pipeline import RunManifest
from veritask.pipeline._evolution import EvolutionStage

DEEP = "[" * 100_000 + "]" * 100_000


def test_deep_run_manifest_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run-manifest.json"
    path.write_text(DEEP, encoding="utf-8")
    with pytest.raises(InputError, match=r"run-manifest\.json: JSON is nested more than 200"):
        RunManifest.read(path)


def test_run_manifest_of_the_wrong_shape_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run-manifest.json"
    path.write_text('{"job": "x", "config": 3, "units": []}', encoding="utf-8")
    with pytest.raises(InputError, match="is not a run manifest"):
        RunManifest.read(path)


def test_deep_evolution_unit_is_refused(tmp_path: Path) -> None:
    stage = EvolutionStage(cast(Any, SimpleNamespace(name="loop")), tmp_path)
    stage.path("u1").write_text('{"state": ' + DEEP + "}", encoding="utf-8")
    with pytest.raises(InputError, match=r"u1\.json: JSON is nested more than 200"):
        stage.read("u1")
