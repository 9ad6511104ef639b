"""Blueprint DAG and cross-domain fusion benchmark.

Run: ``.venv/bin/python benchmarks/fusion_bench.py [--n 200] [--pair travel clinic] [--json]``

1. The blueprint DAG on the scripted answers of ``tests/blueprint/dag_script.py`` (3 topics),
   stage by stage: wall time and the Section 4 counts (domains ... paths, grounded, filtered,
   tasks).
2. In the same run, generation throughput (one worker, the same seed and N) on each domain of
   the pair and on their fusion (``fuse_specs``), with the share of fused tasks whose accepted
   writes span both services, ``check`` figures, and the fused/single ratios.
3. Grounding and execution filtering of every template path (once per path) on each domain and
   on the fusion (creation mode): the kept share and the failure classes.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from veritask._cli.blueprint_run_cmds import generate_service_tasks
from veritask.blueprint import (
    STAGES,
    BlueprintDag,
    DagConfig,
    build_tool_graph,
    enumerate_paths,
    fuse_specs,
    stage_report,
    task_template,
)
from veritask.blueprint._ground import Mode, ground_paths
from veritask.domains import load_domain
from veritask.model import ScriptedProvider
from veritask.policy import DomainSpec, dump_spec, load_spec
from veritask.synth import fused_services, generate
from veritask.synth._analysis import DomainModel
from veritask.task import check_dataset, load_dataset

SCRIPT = Path(__file__).resolve().parent.parent / "tests" / "blueprint"


def dag_run(root: Path) -> dict[str, Any]:
    """The scripted DAG, one stage at a time."""
    sys.path.insert(0, str(SCRIPT))
    import dag_script  # type: ignore[import-not-found]  # the scripted answers of the tests

    config = DagConfig(topics=tuple(dag_script.TOPICS), batch=4)
    provider = ScriptedProvider(dag_script.answer)
    dag = BlueprintDag(
        root / "dag", config, provider, "scripted", make_tasks=generate_service_tasks
    )
    timings = {}
    for stage in STAGES:
        t0 = time.perf_counter()
        dag.run(start=stage, until=stage)
        timings[stage] = round(time.perf_counter() - t0, 2)
    report = stage_report(root / "dag")
    return {"timings_s": timings, "counts": report["counts"], "stages": report["stages"]}


def throughput(domain: str, n: int, seed: int, out: Path) -> dict[str, Any]:
    """Generate ``n`` tasks with one worker; time, check and (fused) span figures."""
    t0 = time.perf_counter()
    summary = generate(domain, n, seed, out, workers=1)
    seconds = time.perf_counter() - t0
    check = check_dataset(out)
    spec = load_spec(domain) if domain.endswith(".yaml") else load_domain(domain)
    row: dict[str, Any] = {
        "domain": spec.name,
        "tasks": summary.tasks,
        "generate_s": round(seconds, 2),
        "packages_per_s": round(summary.tasks / seconds, 2),
        "certified": check.certified,
        "grounded": check.grounded,
        "discarded": dict(sorted(summary.discarded.items())),
    }
    packages = load_dataset(out)
    row["mean_witness_calls"] = round(sum(len(p.witness) for p in packages) / len(packages), 2)
    fused = fused_services(spec)
    if fused is not None:
        model = DomainModel.from_spec(spec)
        row["spanning_both"] = sum(1 for p in packages if len(fused.written(p.witness, model)) >= 2)
    return row


def grounding(spec: DomainSpec, mode: Mode) -> dict[str, Any]:
    graph = build_tool_graph(spec)
    templates = [task_template(spec, graph, p) for p in enumerate_paths(graph)]
    t0 = time.perf_counter()
    report = ground_paths(spec, templates, mode, seed=0)
    return {**report.to_json(), "seconds": round(time.perf_counter() - t0, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pair", nargs=2, default=["travel", "clinic"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        dag = dag_run(root)
        specs = [load_domain(d) for d in args.pair]
        fused = fuse_specs(specs).spec
        fused_path = root / "fused.yaml"
        fused_path.write_text(dump_spec(fused, "fused"))
        rows = [throughput(d, args.n, args.seed, root / d) for d in args.pair]
        rows.append(throughput(str(fused_path), args.n, args.seed, root / "fused"))
        single = sum(r["packages_per_s"] for r in rows[:-1]) / len(rows[:-1])
        ratios = {
            f"fused/{r['domain']}": round(rows[-1]["packages_per_s"] / r["packages_per_s"], 3)
            for r in rows[:-1]
        }
        ratios["fused/mean single"] = round(rows[-1]["packages_per_s"] / single, 3)
        ground = [grounding(s, "sampling") for s in specs] + [grounding(fused, "creation")]
    result = {
        "machine": f"{platform.machine()} Python {platform.python_version()}",
        "dag": dag,
        "throughput": rows,
        "ratios": ratios,
        "grounding": ground,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
