"""Tool files and trajectory files given to ``simulate``: deep nesting, binary and non-UTF-8
files are refused with a located message."""

from __future__ import annotations

from pathlib import Path

import pytest

from veritask._util import InputError
from veritask.simulate._fidelity import _key as fidelity_key
from veritask.simulate._sources import load_catalog
from veritask.simulate._synthesize import _key as synthesize_key

DEEP = "[" * 100_000 + "]" * 100_000


def test_deep_tools_json_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    path.write_text('{"tools": ' + DEEP + "}", encoding="utf-8")
    with pytest.raises(InputError, match=r"tools\.json: JSON is nested more than 200 levels"):
        load_catalog(str(path))


@pytest.mark.parametrize(
    ("data", "message"),
    [(b"\x89PNG\r\n\x1a\n\x00", r"is binary \(a NUL byte\)"), (b'{"a": "\xe9"}\n', "not UTF-8")],
)
def test_binary_or_latin1_trajectories_are_refused(
    tmp_path: Path, data: bytes, message: str
) -> None:
    path = tmp_path / "seed.jsonl"
    path.write_bytes(data)
    with pytest.raises(InputError, match=message):
        load_catalog(str(path))


def test_deep_trajectory_rows_are_skipped_not_crashed_on(tmp_path: Path) -> None:
    path = tmp_path / "seed.jsonl"
    path.write_text(DEEP + "\n", encoding="utf-8")
    assert load_catalog(str(path)).tools == {}


def test_unit_keys_of_deep_lines_are_none() -> None:
    assert fidelity_key('{"task_id": ' + DEEP + "}") is None
    assert synthesize_key('{"unit_id": ' + DEEP + "}") is None
    assert fidelity_key('{"task_id": "t1"}') == "t1"
