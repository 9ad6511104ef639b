"""Which kind of record a path holds, and its pages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from veritask._util import loads_untrusted
from veritask._view._blueprint_pages import BlueprintPages, is_blueprint_run
from veritask._view._compose import Composite, dataset_of
from veritask._view._dataset_pages import DatasetPages
from veritask._view._evolve_pages import EvolvePages, is_evolve_run
from veritask._view._logic_pages import LogicPages
from veritask._view._pages import Pages
from veritask._view._trajectory_pages import TrajectoryPages

Kind = Literal["dataset", "trajectories", "logic", "evolve", "blueprint"]

TRAJECTORIES = "trajectories.jsonl"
"""The verified trajectories a dataset directory may hold (an evolve run writes them)."""


class ViewError(ValueError):
    """A path the viewer cannot show (and why)."""


def _first_record(path: Path) -> dict[str, object]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                try:
                    record = loads_untrusted(line)
                except ValueError as exc:
                    why = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                    raise ViewError(f"{path}: the first line is not JSON: {why}") from None
                if not isinstance(record, dict):
                    raise ViewError(f"{path}: the first line is not a JSON object")
                return record
    raise ViewError(f"{path}: the file is empty")


def _detect_dir(path: Path) -> Kind:
    if is_evolve_run(path):
        return "evolve"
    if is_blueprint_run(path):
        return "blueprint"
    if (path / "manifest.jsonl").exists():
        return "dataset"
    raise ViewError(
        f"{path}: a directory without manifest.jsonl (not a dataset directory), evolve-run/ "
        "(not an evolve run) or stages/ (not a blueprint run)"
    )


def detect(path: Path) -> Kind:
    """The kind of record at ``path``: an evolve run directory (it has ``evolve-run/``), a
    blueprint run directory (``stages/``), a dataset directory (``manifest.jsonl``), a
    trajectories JSONL (lines with ``task_id`` and ``messages``) or a logic JSONL (lines with
    ``family`` and ``question``).

    Raises:
        ViewError: None of these.
    """
    if path.is_dir():
        return _detect_dir(path)
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


def _task_ids(path: Path) -> set[str]:
    out: set[str] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                out.add(str(loads_untrusted(line).get("task_id", "")))
            except (ValueError, AttributeError):
                continue
    return out


def _has_lines(path: Path) -> bool:
    return path.is_file() and any(line.strip() for line in path.open(encoding="utf-8"))


def _dataset_site(
    root: Path, check: bool, *, folder: str = ""
) -> tuple[DatasetPages, list[tuple[str, str, Pages]]]:
    """A dataset's pages and the mounts that go with them when they sit under ``folder``:
    the dataset itself (unless at the root) and its trajectories, if it holds any."""
    pages = DatasetPages(root, check=check)
    mounts: list[tuple[str, str, Pages]] = [(folder, "dataset", pages)] if folder else []
    traj = root / TRAJECTORIES
    if _has_lines(traj):
        runs = TrajectoryPages(traj, root, tasks_at=f"{folder}task/")
        pages.runs = runs.runs("trajectories/")
        mounts.append(("trajectories/", "trajectories", runs))
    return pages, mounts


def _open(path: Path, kind: Kind, dataset: Path | None, check: bool, gates: Path | None) -> Pages:
    if kind == "dataset":
        main, mounts = _dataset_site(path, check)
        return Composite(main, mounts) if mounts else main
    if kind == "trajectories":
        ds = dataset if dataset is not None else dataset_of(path, _task_ids(path))
        if ds is None:
            return TrajectoryPages(path)
        runs = TrajectoryPages(path, ds, tasks_at="dataset/task/")
        tasks = DatasetPages(ds, check=check)
        tasks.runs = runs.runs("")
        return Composite(runs, [("dataset/", "dataset", tasks)])
    if kind == "evolve":
        evolve = EvolvePages(path, tasks_at="dataset/task/")
        if not (evolve.status["finished"] and (path / "manifest.jsonl").is_file()):
            return evolve
        return Composite(evolve, _dataset_site(path, check, folder="dataset/")[1])
    if kind == "blueprint":
        return BlueprintPages(path)
    return LogicPages(path, gates=gates)


def open_pages(
    path: Path, *, dataset: Path | None = None, check: bool = False, gates: Path | None = None
) -> Pages:
    """The pages of whatever ``path`` holds.

    A trajectories file brings its dataset's pages (``dataset/``) when the dataset is given or
    the file sits inside or next to it; a dataset with ``trajectories.jsonl`` and an evolve
    run bring those trajectories (``trajectories/``), and an evolve run its final dataset.

    Args:
        path: A dataset directory, a trajectories JSONL, a logic JSONL, or an evolve or
            blueprint run directory.
        dataset: The dataset a trajectories file was run on (final diffs, verdicts, task links).
        check: For a dataset, replay and ground every task (certified / grounded columns).
        gates: For a logic file, a directory of gate records (default: next to the file).

    Raises:
        ViewError: The path is none of these, or its records do not load.
    """
    kind = detect(path)
    if dataset is not None and kind != "trajectories":
        raise ViewError("--dataset goes with a trajectories file")
    if gates is not None and kind != "logic":
        raise ViewError("--gates goes with a logic file")
    try:
        return _open(path, kind, dataset, check, gates)
    except ValueError as exc:  # DatasetError and bad lines are ValueErrors
        raise ViewError(str(exc)) from None
