"""Dual control and hand-offs on the telecom desk: generate, certify and ground every package,
then play every task with the faithful agent and the scripted user calling its own tools.

    PYTHONPATH=src python benchmarks/dual_bench.py --n 1000 --seed 0 --out OUT_DIR

Prints one JSON object: packages, certified, grounded, tasks with user-side calls, hand-offs by
reason, declined hand-offs, faithful pass^1 (and the noop agent's on hand-off tasks), timings.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from veritask.domains import load_domain
from veritask.env import Environment
from veritask.pipeline import run_batch
from veritask.rollout import RoleFactory, TaskSource, summarize
from veritask.synth import generate
from veritask.task._dual import declined_handoff, handoff_reason, user_calls
from veritask.task._grounded import certify_grounded


def _check(source: TaskSource) -> dict[str, int]:
    certified = grounded = 0
    for pkg in source.packages:
        task = source.episode_task(pkg)
        cert, ungrounded = certify_grounded(pkg, Environment(task.domain), task.origin, task.target)
        certified += cert.certified
        grounded += ungrounded == []
    return {"certified": certified, "grounded": grounded}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    spec = load_domain("telecom")
    out: dict[str, Any] = {"n": args.n, "seed": args.seed}
    start = time.perf_counter()
    generate("telecom", args.n, args.seed, args.out)
    out["generate_s"] = round(time.perf_counter() - start, 1)
    source = TaskSource.load(args.out)
    out["packages"] = len(source.packages)
    start = time.perf_counter()
    out |= _check(source)
    out["check_s"] = round(time.perf_counter() - start, 1)
    out["user_call_tasks"] = sum(1 for p in source.packages if user_calls(p, spec))
    out["user_calls"] = sum(user_calls(p, spec) for p in source.packages)
    reasons = Counter(r for p in source.packages if (r := handoff_reason(p, spec)))
    out["handoffs"] = dict(sorted(reasons.items()))
    out["declined_handoffs"] = sum(declined_handoff(p, spec) for p in source.packages)
    start = time.perf_counter()
    trajs = asyncio.run(run_batch(source, RoleFactory(agent="faithful"), concurrency=8))
    out["faithful_pass^1"] = summarize(trajs, 1)["pass^1"]
    out["faithful_user_steps"] = sum(1 for t in trajs for s in t.steps if s.by == "user")
    out["eval_s"] = round(time.perf_counter() - start, 1)
    handoff = [p for p in source.packages if handoff_reason(p, spec)]
    noop = asyncio.run(
        run_batch(TaskSource(source.root, handoff), RoleFactory(agent="noop"), concurrency=8)
    )
    out["noop_on_handoffs_pass^1"] = summarize(noop, 1)["pass^1"] if noop else None
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
