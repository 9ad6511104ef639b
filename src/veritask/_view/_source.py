"""Which kind of record a path holds, and its pages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from veritask._view._dataset_pages import DatasetPages
from veritask._view._logic_pages import LogicPages
from veritask._view._pages import Pages
from veritask._view._trajectory_pages import TrajectoryPages

Kind = Literal["dataset", "trajectories", "logic"]


class ViewError(ValueError):
    """A path the viewer cannot show (and why)."""


def _first_record(path: Path) -> dict[str, object]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ViewError(f"{path}: the first line is not JSON: {exc.msg}") from None
                if not isinstance(record, dict):
                    raise ViewError(f"{path}: the first line is not a JSON object")
                return record
    raise ViewError(f"{path}: the file is empty")


def detect(path: Path) -> Kind:
    """The kind of record at ``path``: a dataset directory (it has ``manifest.jsonl``), a
    trajectories JSONL (lines with ``task_id`` and ``messages``) or a logic JSONL (lines with
    ``family`` and ``question``).

    Raises:
        ViewError: None of these.
    """
    if path.is_dir():
        if (path / "manifest.jsonl").exists():
            return "dataset"
        raise ViewError(f"{path}: a directory without manifest.jsonl (not a dataset directory)")
    if not path.is_file():
        raise ViewError(f"{path}: no such file or directory")
    record = _first_record(path)
    if {"task_id", "messages"} <= record.keys():
        return "trajectories"
    if {"family", "question", "answer"} <= record.keys():
        return "logic"
    raise ViewError(
        f"{path}: neither trajectories nor logic instances (first line's keys: "
        f"{sorted(record)[:8]})"
    )


def open_pages(path: Path, *, dataset: Path | None = None, check: bool = False) -> Pages:
    """The pages of whatever ``path`` holds.

    Args:
        path: A dataset directory, a trajectories JSONL or a logic JSONL.
        dataset: The dataset a trajectories file was run on (final diffs and verdicts).
        check: For a dataset, replay and ground every task (certified / grounded columns).

    Raises:
        ViewError: The path is none of these, or its records do not load.
    """
    kind = detect(path)
    if dataset is not None and kind != "trajectories":
        raise ViewError("--dataset goes with a trajectories file")
    try:
        if kind == "dataset":
            return DatasetPages(path, check=check)
        if kind == "trajectories":
            return TrajectoryPages(path, dataset)
        return LogicPages(path)
    except ValueError as exc:  # DatasetError and bad lines are ValueErrors
        raise ViewError(str(exc)) from None
