"""Rollout benchmark: symbolic agents on generated task sets, scores and episodes per second.

Run: ``.venv/bin/python benchmarks/rollout_bench.py [--n 1000] [--domains travel ...]``

For each domain it generates N tasks, then runs the oracle, noop and random agents with the
scripted user through the full episode loop (verification included) and reports pass^1, how
many non-refusal tasks noop solved (must be 0), the mean final proximity to the target and the
share of tasks whose distance to the target the agent changed (non-refusal tasks), and episodes
per second. The oracle's rate is
the baseline: it replays the witness, so the rate measures the loop, the user simulator and the
verifiers rather than any model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from veritask.domains import builtin_domains
from veritask.pipeline import run_batch
from veritask.reward import proximity
from veritask.rollout import RoleFactory, TaskSource, summarize
from veritask.synth import generate


def run_domain(domain: str, n: int, root: Path) -> dict[str, Any]:
    generate(domain, n, 0, root / domain)
    source = TaskSource.load(root / domain)
    refusal = {p.id for p in source.packages if p.refusal}
    row: dict[str, Any] = {
        "domain": domain,
        "tasks": len(source.packages),
        "refusals": len(refusal),
    }
    for agent in ("oracle", "noop", "random"):
        t0 = time.perf_counter()
        trajs = asyncio.run(run_batch(source, RoleFactory(agent=agent), concurrency=16))
        elapsed = time.perf_counter() - t0
        row[f"{agent}_pass^1"] = round(summarize(trajs, 1)["pass^1"], 4)
        row[f"{agent}_episodes_per_s"] = round(len(trajs) / elapsed, 1)
        row[f"{agent}_non_refusal_solved"] = sum(
            1 for t in trajs if t.reward == 1.0 and t.task_id not in refusal
        )
        real = [t for t in trajs if t.task_id not in refusal]
        row[f"{agent}_mean_final_proximity"] = round(
            statistics.mean(proximity(t.final_distance, t.initial_distance) for t in real), 4
        )
        row[f"{agent}_distance_changed"] = round(
            sum(t.final_distance != t.initial_distance for t in real) / len(real), 4
        )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument(
        "--domains", nargs="+", default=[d for d in builtin_domains() if d != "mock"]
    )
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="veritask-rollout-bench-"))
    try:
        rows = [run_domain(d, args.n, root) for d in args.domains]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
