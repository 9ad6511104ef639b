"""The final dataset and report of an evolve run, assembled from its unit artifacts.

The dataset is the union of the streams' accepted tasks in unit order (stream, then iteration):
a normal dataset directory (``manifest.jsonl``, content-addressed states and policies,
``run.json``, the ``digest.json`` seal) plus ``checkers.jsonl`` (each task's SQL checkers),
``trajectories.jsonl`` (the verified trajectories) and ``report.json``. A domain given as a
spec file is kept as the dataset's ``spec.yaml`` (one per dataset, so a run takes at most one). Two streams never talk,
so the same (origin, target) pair can come out of two of them; the later one is left out of the
union and counted in the report.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from veritask._util import atomic_write_text, read_json, write_lines_atomic
from veritask.pipeline import RunManifest, Unit
from veritask.task import DatasetDir, TaskPackage

RUN_DIR = "evolve-run"
"""Where an evolve run keeps its manifest, units and candidate pools, inside the output folder."""


class FinishedRun(Protocol):
    """What assembling needs of a run: its directory and its finished units."""

    @property
    def run_dir(self) -> Path:
        """The run's own directory."""
        ...

    def units(self) -> list[Unit[Any]]:
        """The run's units, plans first."""
        ...

    def read(self, unit_id: str) -> dict[str, Any]:
        """A finished unit's artifact."""
        ...


REPORT = "report.json"


def _json_line(value: Any) -> bytes:
    return (json.dumps(value, sort_keys=True) + "\n").encode("utf-8")


def _copy(pool: DatasetDir, ds: DatasetDir, pkg: TaskPackage) -> None:
    for digest in (pkg.origin, pkg.target):
        ds.put_state(pool.read_state(digest))
    ds.put_policy(pool.read_policy(pkg.policy))


def _row(unit: dict[str, Any]) -> dict[str, Any]:
    """One stream iteration in the report."""
    extra = {"workflow": _workflow(unit["workflow"])} if "workflow" in unit else {}
    return {
        "stream": unit["stream"],
        "iteration": unit["iteration"],
        **unit["counts"],
        "rejected": _rejections(unit["verification"]),
        "reflection": unit["reflection"],
        "plan_diff": unit["plan_diff"],
        "selection": unit.get("selection", []),
        **extra,
    }


def _workflow(record: dict[str, Any]) -> dict[str, Any]:
    """The workflow version an iteration ran, its diff, figures and the decision on it."""
    following = record["next"]
    return {
        "version": record["ran"]["version"],
        "parent": record["ran"]["parent"],
        "diff": record["diff"],
        "figures": record["figures"],
        "kept": record["kept"],
        "reason": record["reason"],
        "next_version": following["version"] if following is not None else None,
        "proposal": record["proposal"],
        "rolled_back_so_far": len(record["rolled_back"]),
    }


def _rejections(verdicts: Sequence[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for verdict in verdicts:
        for kind in sorted({r["kind"] for r in verdict["reasons"]}):
            out[kind] = out.get(kind, 0) + 1
    return dict(sorted(out.items()))


def _totals(rows: list[dict[str, Any]]) -> dict[str, int]:
    keys = ("candidates", "selected", "verified", "rolled_out", "succeeded", "TASK", "TRAJECTORY")
    return {k: sum(r[k] for r in rows) for k in (*keys, "accepted")}


def assemble(stage: FinishedRun, out: Path, config: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Write the dataset ``out`` and its report from the finished units; the task count and
    the report."""
    ds = DatasetDir(out)
    packages: list[TaskPackage] = []
    checkers: list[bytes] = []
    trajectories: list[bytes] = []
    seen: set[tuple[str, str]] = set()
    rows: list[dict[str, Any]] = []
    dropped = 0
    for unit in stage.units()[1:]:
        body = stage.read(unit.id)
        rows.append(_row(body))
        pool_root = stage.run_dir / "pool" / body["stream"] / f"iter{body['iteration']}"
        for item in body["accepted"]:
            pkg = TaskPackage.model_validate(item["package"])
            if (pkg.origin, pkg.target) in seen:
                dropped += 1
                continue
            seen.add((pkg.origin, pkg.target))
            pool = DatasetDir(pool_root / item["pool"])
            _copy(pool, ds, pkg)
            if pool.spec_path.exists() and not ds.spec_path.exists():
                ds.put_spec(pool.spec_path.read_text(encoding="utf-8"))
            packages.append(pkg)
            checkers.append(_json_line({"id": pkg.id, "checkers": item["checkers"]}))
            if item["trajectory"] is not None:
                trajectories.append(_json_line(item["trajectory"]))
    ds.write_run({"job": "evolve", **config})
    write_lines_atomic(ds.manifest, (p.model_dump_json().encode() + b"\n" for p in packages))
    write_lines_atomic(ds.root / "checkers.jsonl", checkers)
    write_lines_atomic(ds.root / "trajectories.jsonl", trajectories)
    plans = stage.read("plans")
    report = {
        "config": config,
        "coverage": plans["coverage"],
        "iterations": rows,
        "totals": {**_totals(rows), "duplicates_across_streams": dropped},
        "tasks": len(packages),
    }
    atomic_write_text(ds.root / REPORT, json.dumps(report, indent=2, sort_keys=True) + "\n")
    ds.seal(packages)  # last: the seal lists every file of the directory
    return len(packages), report


def read_report(out: str | Path) -> dict[str, Any]:
    """The report of a finished run."""
    data: dict[str, Any] = read_json(Path(out) / REPORT)
    return data


def status(out: str | Path) -> dict[str, Any]:
    """How far a run has come: ``{"config", "units", "done", "pending", "finished"}``."""
    root = Path(out)
    manifest = RunManifest.read(root / RUN_DIR / "run-manifest.json")
    if manifest is None:
        raise ValueError(f"{root} holds no evolve run")
    done = [u for u in manifest.units if (root / RUN_DIR / f"{u}.json").exists()]
    return {
        "config": manifest.config,
        "units": len(manifest.units),
        "done": len(done),
        "pending": [u for u in manifest.units if u not in done],
        "finished": (root / REPORT).exists() and len(done) == len(manifest.units),
    }
