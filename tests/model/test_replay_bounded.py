"""A replay file we did not write: deep nesting, binary and non-UTF-8 text are refused with the
file and line, never a RecursionError or UnicodeDecodeError."""

from __future__ import annotations

from pathlib import Path

import pytest

from veritask._util import InputError
from veritask.model import get_provider

GOOD = '{"hash": "h", "request": {"model": "m"}, "response": {"text": "hi"}}\n'


@pytest.mark.parametrize(
    ("body", "message", "line"),
    [
        (
            GOOD + "[" * 100_000 + "]" * 100_000 + "\n",
            "JSON is nested more than 200 levels deep",
            2,
        ),
        (GOOD.encode() + b'{"hash": "\xff"}\n', "is not UTF-8 text", 2),
        (b"\x00\x01\x02", "is binary (a NUL byte), not text", 1),
        (GOOD + '{"hash": "h", "response": {"a": 1e999999}}\n', "1e999999 is out of range", 2),
    ],
)
def test_replay_file_is_refused_with_its_line(
    tmp_path: Path, body: str | bytes, message: str, line: int
) -> None:
    path = tmp_path / "replay.jsonl"
    path.write_bytes(body.encode() if isinstance(body, str) else body)
    with pytest.raises(InputError) as info:
        get_provider(f"replay:{path}")
    assert message in str(info.value)
    assert str(info.value).startswith(f"{path}:{line}: ")
