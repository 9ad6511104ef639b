"""A trajectories file we did not write (``curate``, exports): binary or non-UTF-8 bytes and
deep nesting are refused with the file and line, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from veritask.export import read_trajectories


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x1f\x8b\x08\x00\x00\x00", r"traj\.jsonl:1: is binary \(a NUL byte\)"),
        (b'{"task_id": "caf\xe9"}\n', r"traj\.jsonl:1: is not UTF-8 text"),
        (b"[" * 100_000 + b"]" * 100_000 + b"\n", r"traj\.jsonl:1: not a trajectory"),
    ],
)
def test_bad_trajectory_file_is_refused(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "traj.jsonl"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=message):
        read_trajectories(path)
