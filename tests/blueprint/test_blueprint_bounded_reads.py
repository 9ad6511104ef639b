"""Blueprint files we did not write: seeds YAML with a complex key or an alias bomb, deep stage
summaries and manifests are refused with a located message."""

from __future__ import annotations

from pathlib import Path

import pytest

from veritask._util import InputError
from veritask.blueprint import dag_status, load_seeds, stage_report

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("topics: [a]\n? [x, y]\n: 1\n", r"seeds\.yaml:2: a mapping key is itself a list"),
        ("topics: " + "[" * 5_000 + "]" * 5_000 + "\n", "nested more than 200 levels deep"),
    ],
)
def test_bad_seeds_file_is_refused(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "seeds.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        load_seeds(path)


def test_deep_stage_summary_is_refused(tmp_path: Path) -> None:
    (tmp_path / "domains.json").write_text(DEEP, encoding="utf-8")
    with pytest.raises(InputError, match=r"domains\.json: JSON is nested more than 200"):
        stage_report(tmp_path)


def test_deep_stage_manifest_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "stages" / "seed"
    folder.mkdir(parents=True)
    (folder / "run-manifest.json").write_text(DEEP, encoding="utf-8")
    with pytest.raises(InputError, match="JSON is nested more than 200"):
        dag_status(tmp_path)
