"""Evolve run pages: per stream and iteration, what was made, verified, rolled out, attributed
and accepted, and how the plans changed; accepted tasks link to the final dataset's pages.

The run's figures come from ``veritask.evolve`` (``status``, ``read_report``); the iteration
details are the unit artifacts the run writes under ``evolve-run/`` (one JSON per unit), read
as files, so a run that is not finished shows the units it has.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from veritask._util import read_json, read_jsonl
from veritask._view._charts import bars
from veritask._view._compose import manifest_ids
from veritask._view._pages import Page, Query, slug
from veritask._view._site import inside
from veritask.evolve import RUN_DIR, read_report, status
from veritask.pipeline import RunManifest

STATUSES = ("rejected", "SUCCESS", "TRAJECTORY", "TASK")
"""A selected candidate's outcome: rejected by task verification, solved by the assistant,
failed by the assistant (kept), or failed because of the task (dropped)."""
_PLAN_FIELDS = ("archetypes", "difficulty_mix", "rules", "tool_patterns")


def is_evolve_run(path: Path) -> bool:
    """True when ``path`` is the output directory of ``veritask evolve run``."""
    return (path / RUN_DIR / "run-manifest.json").is_file()


def trajectory_index(root: Path) -> dict[str, int]:
    """Task id -> the line (from 0) of its verified trajectory in the run's
    ``trajectories.jsonl`` (the trajectory pages are numbered the same way)."""
    path = root / "trajectories.jsonl"
    if not path.is_file():
        return {}
    rows = read_jsonl(path)  # bounded: a hostile run directory ends in one ViewError line
    return {str(r.get("task_id") if isinstance(r, dict) else None): i for i, r in enumerate(rows)}


def candidate_rows(unit: dict[str, Any], final: set[str]) -> list[dict[str, Any]]:
    """One row per selected candidate of an iteration: its verdict, rollout and outcome."""
    rollouts = {r["id"]: r for r in unit["rollouts"]}
    rows = []
    for verdict in unit["verification"]:
        record = rollouts.get(verdict["id"], {})
        if verdict["verdict"] != "PASS":
            state = "rejected"
        else:
            state = record.get("attribution", record.get("outcome", "rejected"))
        rows.append(
            {
                "id": verdict["id"],
                "slug": slug(verdict["id"]),
                "status": state,
                "reasons": verdict["reasons"],
                "rationale": verdict.get("rationale", ""),
                "reward": record.get("reward"),
                "credit": record.get("partial_credit"),
                "stop": record.get("stop_reason", ""),
                "detail": record.get("detail", ""),
                "accepted": state in ("SUCCESS", "TRAJECTORY"),
                "in_dataset": verdict["id"] in final,
            }
        )
    return rows


def _rejections(unit: dict[str, Any]) -> dict[str, int]:
    kinds = Counter(k for v in unit["verification"] for k in {r["kind"] for r in v["reasons"]})
    return dict(sorted(kinds.items()))


def _plan_view(plan: dict[str, Any]) -> dict[str, Any]:
    synthesis, evaluation = plan["synthesis"], plan["evaluation"]
    return {
        "weights": {name: synthesis.get(name, {}) for name in _PLAN_FIELDS},
        "synthesis": {
            k: v
            for k, v in synthesis.items()
            if k not in _PLAN_FIELDS and k not in ("stream", "schema_version")
        },
        "evaluation": {
            k: v for k, v in evaluation.items() if k not in ("stream", "schema_version")
        },
    }


class EvolvePages:
    """The pages of one evolve run directory (``veritask evolve run --out DIR``)."""

    kind = "evolve"

    def __init__(self, root: Path, *, tasks_at: str | None = None) -> None:
        """``tasks_at``: where the final dataset's task pages are, relative to the site root."""
        self.root = root
        self.name = root.resolve().name
        self.tasks_at = tasks_at
        self.status = status(root)
        manifest = RunManifest.read(root / RUN_DIR / "run-manifest.json")
        units = manifest.units if manifest is not None else []
        self.units: dict[str, dict[str, Any]] = {}
        for unit_id in units:
            body = _unit_body(root / RUN_DIR, unit_id)
            if body is not None:
                self.units[unit_id] = body
        self.iterations = [u for u in self.units if u != "plans"]
        self.by_slug = {slug(u): u for u in self.iterations}
        finished = self.status["finished"]
        self.report = read_report(root) if finished else None
        has_dataset = (root / "manifest.jsonl").is_file()
        self.final = manifest_ids(root) if finished and has_dataset else set()
        self.trajectories = trajectory_index(root) if self.final else {}
        self.nav = [("index.html", "run"), ("plans.html", "plans")]

    def paths(self) -> list[str]:
        """The run's overview, the initial plans and one page per finished iteration."""
        return ["index.html", "plans.html", *[f"iteration/{s}.html" for s in self.by_slug]]

    def page(self, path: str, query: Query) -> Page | None:
        """The page at ``path``."""
        if path == "index.html":
            return self.index_page(query)
        if path == "plans.html":
            return self.plans_page()
        name = self.by_slug.get(path.removeprefix("iteration/").removesuffix(".html"))
        if path.startswith("iteration/") and name is not None:
            return self.iteration_page(name, query)
        return None

    def row(self, unit_id: str) -> dict[str, Any]:
        """The overview's row of one iteration."""
        unit = self.units[unit_id]
        return {
            "unit": unit_id,
            "slug": slug(unit_id),
            "stream": unit["stream"],
            "iteration": unit["iteration"],
            "counts": unit["counts"],
            "rejected": _rejections(unit),
            "reflection": unit["reflection"],
            "changes": len(unit["plan_diff"]),
        }

    def index_page(self, query: Query) -> Page:
        """Progress, coverage, totals and one row per iteration (``stream`` filters)."""
        rows = [self.row(u) for u in self.iterations]
        streams = sorted({r["stream"] for r in rows})
        wanted = query.get("stream", "")
        shown = [r for r in rows if not wanted or r["stream"] == wanted]
        plans = self.units.get("plans", {})
        coverage = plans.get("coverage", {})
        shares = [
            (k.replace("_", " "), float(v["share"])) for k, v in coverage.items() if k != "plans"
        ]
        accepted = [(r["unit"], float(r["counts"]["accepted"])) for r in rows]
        return Page(
            "evolve_index.html",
            "run",
            {
                "run": self.status,
                "config": self.status["config"],
                "report": self.report,
                "coverage": coverage,
                "charts": {"coverage": bars(shares, scale=1.0), "accepted": bars(accepted)},
                "rows": shown,
                "total": len(rows),
                "streams": streams,
                "query": dict(query),
                "dataset": self.tasks_at is not None and bool(self.final),
            },
        )

    def plans_page(self) -> Page:
        """The initial plan of every stream."""
        plans = self.units.get("plans", {})
        views = [(p["synthesis"]["stream"], _plan_view(p)) for p in plans.get("plans", [])]
        return Page("evolve_plans.html", "plans", {"plans": views})

    def iteration_page(self, unit_id: str, query: Query) -> Page:
        """One iteration: its plan, candidates and their outcomes (``status`` filters), the
        accepted tasks and the plan changes reflection made."""
        unit = self.units[unit_id]
        rows = candidate_rows(unit, self.final)
        wanted = query.get("status", "")
        index = self.iterations.index(unit_id)
        return Page(
            "evolve_iteration.html",
            unit_id,
            {
                "unit": unit,
                "unit_id": unit_id,
                "unit_slug": slug(unit_id),
                "plan": _plan_view(unit["plan"]),
                "rows": [r for r in rows if not wanted or r["status"] == wanted],
                "total": len(rows),
                "outcomes": Counter(r["status"] for r in rows),
                "statuses": STATUSES,
                "query": dict(query),
                "tasks_at": self.tasks_at if self.final else None,
                "trajectories": self.trajectories if self.tasks_at is not None else {},
                "finished": self.status["finished"],
                "previous": self._neighbour(index - 1),
                "next": self._neighbour(index + 1),
            },
        )

    def _neighbour(self, index: int) -> tuple[str, str] | None:
        """``(unit id, slug)`` of the iteration at ``index``, if there is one."""
        if 0 <= index < len(self.iterations):
            return self.iterations[index], slug(self.iterations[index])
        return None


def _unit_body(folder: Path, unit_id: str) -> dict[str, Any] | None:
    """A unit's artifact, or None when it has none yet or its id would name a file outside
    ``folder`` (or one the file system cannot name)."""
    try:
        path = inside(folder, f"{unit_id}.json")
        if not path.is_file():
            return None
        data: dict[str, Any] = read_json(path)
    except (ValueError, OSError):
        return None
    return data
