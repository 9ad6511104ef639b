"""An evolve run directory we did not write: a deep report or run manifest is refused with the
file named (``evolve report`` / ``evolve status``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from veritask._util import InputError
from veritask.evolve import RUN_DIR, read_report, status
from veritask.evolve._assemble import REPORT

DEEP = "[" * 100_000 + "]" * 100_000


def test_deep_report_is_refused(tmp_path: Path) -> None:
    (tmp_path / REPORT).write_text(DEEP, encoding="utf-8")
    with pytest.raises(InputError, match="JSON is nested more than 200 levels deep"):
        read_report(tmp_path)


def test_deep_run_manifest_is_refused_by_status(tmp_path: Path) -> None:
    (tmp_path / RUN_DIR).mkdir()
    (tmp_path / RUN_DIR / "run-manifest.json").write_text(DEEP, encoding="utf-8")
    with pytest.raises(InputError, match=r"run-manifest\.json: JSON is nested"):
        status(tmp_path)
