"""The DAG stages after ``seed``: template paths grounded and filtered on each service
(``paths``, AgentSkiller Steps 9-10 and 14-16), and certified tasks generated from each service
(``tasks``). Neither calls a model.

The ``tasks`` stage runs a :data:`TaskMaker` the caller hands to the DAG with the service's kept
paths: each kept path is a task skeleton the maker grounds, executes and projects (the command
line passes one built on the synthesis package; ``blueprint`` sits beside it and does not import
it). Without one, the stage records each service as ``skipped``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from veritask.blueprint._ground import FAILURE_KINDS, ground_paths
from veritask.blueprint._toolgraph import (
    build_tool_graph,
    check_tool_graph,
    enumerate_paths,
    task_template,
)
from veritask.policy import load_spec

Json = dict[str, Any]

TaskMaker = Callable[[Path, list[Json], int, int, Path], Json]
"""``make(spec_path, kept_paths, n, seed, out) -> counts``: make ``n`` tasks from a service spec
and its kept paths (``{"template", "tools"}`` each) into ``out`` (resumable) and return at least
``tasks``, ``from_paths``, ``certified`` and ``grounded``."""


def paths_work(spec_path: Path, max_paths: int, seed: int) -> Json:
    """The tool graph of one service, its checks, its template paths, and each path grounded
    once (sampling mode) and executed: kept or classified."""
    spec = load_spec(spec_path)
    graph = build_tool_graph(spec)
    issues = check_tool_graph(graph)
    paths = enumerate_paths(graph, limit=max_paths)
    templates = [task_template(spec, graph, p) for p in paths]
    report = ground_paths(spec, templates, mode="sampling", seed=seed)
    return {
        "service": spec.name,
        "nodes": graph.number_of_nodes(),
        "edges": graph.number_of_edges(),
        "checks": [f"{i.check}: {i.message}" for i in issues],
        **report.to_json(),
        "kept_templates": [o.template for o in report.outcomes if o.kept],
        "kept_paths": [
            {"template": o.template, "tools": o.tools} for o in report.outcomes if o.kept
        ],
    }


def tasks_work(
    maker: TaskMaker | None, spec_path: Path, paths: list[Json], n: int, out: Path
) -> Json:
    """Make ``n`` tasks from one service's kept ``paths`` with ``maker`` (``skipped``
    without one)."""
    if maker is None or n == 0:
        return {"status": "skipped", "tasks": 0}
    counts = maker(spec_path, paths, n, 0, out)
    return {"status": "generated", **counts}


def paths_section(units: list[Json]) -> Json:
    """The ``paths`` stage in the report: summed over services, the failure classes as
    scalars (``policy_violation``, ``invalid_entity_data``, ``spec_bug``)."""
    failures: dict[str, int] = {}
    for unit in units:
        for kind, count in unit["failures"].items():
            failures[kind] = failures.get(kind, 0) + count
    grounded = sum(u["grounded"] for u in units)
    kept = sum(u["kept"] for u in units)
    return {
        "services": len(units),
        "topology_failures": sum(len(u["checks"]) for u in units),
        "paths": sum(u["paths"] for u in units),
        "grounded": grounded,
        "kept": kept,
        "filtered": grounded - kept,
        "kept_share": round(kept / grounded, 4) if grounded else 0.0,
        **{kind: failures.get(kind, 0) for kind in FAILURE_KINDS},
    }


def tasks_section(units: list[Json]) -> Json:
    """The ``tasks`` stage in the report: summed over services, with the share of tasks
    instantiated from kept paths (the rest came from the requested fallback)."""
    sums = {
        key: sum(int(u.get(key, 0)) for u in units)
        for key in ("tasks", "from_paths", "fallback", "certified", "grounded", "spoiler_free")
    }
    share = round(sums["from_paths"] / sums["tasks"], 4) if sums["tasks"] else 0.0
    return sums | {
        "from_paths_share": share,
        "skipped": sum(1 for u in units if u["status"] == "skipped"),
    }
