"""Tasks instantiated from kept tool paths: the share and the certificates.

Run: ``PYTHONPATH=src .venv/bin/python benchmarks/blueprint_path_tasks.py [--n 30] [--json]``

1. The blueprint DAG on the scripted answers of ``tests/blueprint/dag_script.py`` (3 topics,
   34 tasks asked per service), its ``tasks`` stage instantiating from the kept paths: tasks
   made, from kept paths, certified, grounded; then the same with ``--fallback symbolic``.
2. ``fuse travel clinic`` then ``tool-graph FUSED --tasks N``: the same figures.
3. ``fuse travel clinic --tasks N``: tasks from fused trajectories (candidate pairs, pruned ex
   ante, fused, made and kept by the feasibility check).

Each run also reports the semantic templates judged and passed and the soft storyline edges.

4. Policy harmonization: ``fuse travel clinic`` and the pair built to conflict in
   ``tests/blueprint/test_harmonize.py`` (the mock library twice, minimum ages 18 and 21):
   conflicts, bridge rules, and whether every example of the fused spec passes.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from veritask._cli.blueprint_fusion_tasks import fused_trajectory_tasks
from veritask._cli.blueprint_path_tasks import path_tasks
from veritask._cli.blueprint_run_cmds import (
    checked_counts,
    path_service_tasks,
    with_symbolic_fallback,
)
from veritask.blueprint import (
    BlueprintDag,
    DagConfig,
    build_tool_graph,
    enumerate_paths,
    fuse_specs,
    stage_report,
    task_template,
)
from veritask.blueprint._dag_paths import with_templates
from veritask.blueprint._examples import example_failures
from veritask.blueprint._ground import ground_paths
from veritask.blueprint._semantic import judged_templates
from veritask.blueprint._trajectory_fusion import DEFAULT_MAX_PAIRS
from veritask.domains import load_domain
from veritask.model import ScriptedProvider
from veritask.policy import dump_spec

ROOT = Path(__file__).resolve().parent.parent
EXTRA = (
    "per_service",
    "templates_judged",
    "templates_passed",
    "soft_edges",
    "candidates",
    "pruned_ex_ante",
    "fused",
    "trajectories_used",
    "discarded",
)


def _dag(root: Path, fallback: bool) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "tests" / "blueprint"))
    import dag_script  # the scripted answers the DAG tests use

    config = DagConfig(topics=("education", "healthcare", "fitness"), batch=4)
    maker = with_symbolic_fallback if fallback else path_service_tasks
    start = time.perf_counter()
    dag = BlueprintDag(
        root, config, ScriptedProvider(dag_script.answer), "scripted", make_tasks=maker
    )
    dag.run()
    stages = stage_report(root)["stages"]
    judged = {k: stages["paths"][k] for k in ("templates_judged", "templates_passed", "soft_edges")}
    units = json.loads((root / "tasks.json").read_text())["units"]
    return {
        **stages["tasks"],
        **judged,
        "per_service": {u["unit"]: u["from_paths"] for u in units},
        "asked": 3 * config.tasks_per_service,
        "seconds": time.perf_counter() - start,
    }


def _fused(root: Path, n: int) -> dict[str, Any]:
    spec = fuse_specs([load_domain("travel"), load_domain("clinic")]).spec
    root.mkdir(parents=True, exist_ok=True)
    path = root / "fused.yaml"
    path.write_text(dump_spec(spec))
    start = time.perf_counter()
    graph = build_tool_graph(spec)
    templates = [task_template(spec, graph, p) for p in enumerate_paths(graph, limit=200)]
    report = ground_paths(spec, templates, "creation", 0)
    kept_ids = {o.template for o in report.outcomes if o.kept}
    judged = with_templates(
        {}, judged_templates(spec, [t for t in templates if t.id in kept_ids], 0)
    )
    made = path_tasks(path, judged["kept_paths"], n, 0, root / "tasks")
    made.pop("origins")
    checked = checked_counts(root / "tasks")
    seconds = time.perf_counter() - start
    return {
        "asked": n,
        "paths": report.paths,
        "kept": report.kept,
        "templates_judged": judged["templates_judged"],
        "templates_passed": judged["templates_passed"],
        **made,
        **checked,
        "seconds": seconds,
    }


def _trajectories(root: Path, n: int) -> dict[str, Any]:
    sources = [load_domain("travel"), load_domain("clinic")]
    fusion = fuse_specs(sources)
    root.mkdir(parents=True, exist_ok=True)
    path = root / "fused.yaml"
    path.write_text(dump_spec(fusion.spec))
    start = time.perf_counter()
    made = fused_trajectory_tasks(sources, fusion, path, n, 0, root / "tasks", DEFAULT_MAX_PAIRS)
    made["from_paths"] = made["from_fused"]
    return {**made, "seconds": time.perf_counter() - start}


def _harmonization() -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "tests" / "blueprint"))
    from test_harmonize import _library  # the pair built to conflict

    pairs = {
        "travel + clinic": [load_domain("travel"), load_domain("clinic")],
        "library 18 + library 21": [_library("lenient", 18), _library("strict", 21)],
    }
    out: dict[str, Any] = {}
    for name, specs in pairs.items():
        fusion = fuse_specs(specs)
        out[name] = {
            "conflicts": [f"{c.kind} on {c.column}" for c in fusion.conflicts],
            "bridges": [c.bridge for c in fusion.conflicts if c.bridge],
            "example_failures": len(example_failures(fusion.spec)),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        result = {
            "blueprint_run": _dag(root / "dag", fallback=False),
            "blueprint_run_fallback": _dag(root / "dag_fallback", fallback=True),
            "fuse_travel_clinic": _fused(root / "fused", args.n),
            "fuse_travel_clinic_trajectories": _trajectories(root / "traj", args.n),
        }
    harmonization = _harmonization()
    if args.json:
        print(json.dumps({**result, "harmonization": harmonization}, indent=1, default=str))
        return
    for name, row in result.items():
        share = row["from_paths"] / row["tasks"] if row["tasks"] else 0.0
        print(
            f"{name}: asked {row['asked']}, made {row['tasks']}, from kept paths"
            f" {row['from_paths']} ({share:.1%} of made), certified {row['certified']},"
            f" grounded {row['grounded']}, {row['seconds']:.1f} s"
        )
        extra = {k: row[k] for k in EXTRA if k in row}
        if extra:
            print("   ", ", ".join(f"{k} {v}" for k, v in extra.items()))
    for name, row in harmonization.items():
        print(
            f"harmonization {name}: conflicts {row['conflicts']}, bridge rules"
            f" {row['bridges']}, failing examples {row['example_failures']}"
        )


if __name__ == "__main__":
    main()
