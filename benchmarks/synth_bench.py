"""Synthesis benchmark and acceptance run: certified packages per second per worker, per domain.

Run: ``.venv/bin/python benchmarks/synth_bench.py [--n 1000] [--domains travel retail ...]``

For each domain it generates N packages with one worker into a fresh directory, times it, then runs
``check`` and ``report`` on the result and prints the quality figures next to the throughput.
The baseline for throughput is the same run's own check pass (replaying every witness), which
shows how much of the cost is exploration rather than execution.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import sqlite3
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from veritask.domains import builtin_domains
from veritask.synth import generate
from veritask.task import check_dataset, load_dataset, report_dataset


def run_domain(domain: str, n: int, seed: int, root: Path) -> dict[str, Any]:
    out = root / domain
    t0 = time.perf_counter()
    summary = generate(domain, n, seed, out, workers=1)
    gen_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    check = check_dataset(out).to_json()
    check_s = time.perf_counter() - t1
    report = report_dataset(out)
    packages = load_dataset(out)
    changed = sum(1 for p in packages if not p.refusal and p.origin != p.target)
    users = Counter(p.user_profile.user_id for p in packages)
    return {
        "domain": domain,
        "tasks": summary.tasks,
        "generate_s": round(gen_s, 2),
        "packages_per_s_per_worker": round(summary.tasks / gen_s, 1),
        "check_s": round(check_s, 2),
        "replays_per_s": round(summary.tasks / check_s, 1),
        "certified": check["certified"],
        "spoiler_free": check["spoiler_free"],
        "duplicates": check["duplicates"],
        "non_refusal_changed": changed,
        "boundary_density": report["boundary_density"],
        "rule_coverage": report["rule_coverage"],
        "tool_coverage": report["tool_coverage"],
        "L1": report["difficulty"]["L1"] / report["tasks"],
        "L3": report["difficulty"]["L3"] / report["tasks"],
        "refusal_share": report["refusal_share"],
        "mean_witness_calls": report["mean_witness_calls"],
        "users": len(users),
        "max_user_share": max(users.values()) / len(packages) if packages else 0.0,
        "discarded": summary.discarded,
    }


def markdown(rows: list[dict[str, Any]], machine: str) -> str:
    head = (
        "| domain | tasks | packages/s/worker | check replays/s | certified | spoiler-free | duplicates | "
        "non-refusal, target != origin | boundary density | rule cov. | tool cov. | L1 | L3 | refusals | mean calls | "
        "users | max user share |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    lines = [f"Machine: {machine}", "", head]
    for r in rows:
        lines.append(
            f"| {r['domain']} | {r['tasks']} | {r['packages_per_s_per_worker']} | {r['replays_per_s']} | "
            f"{r['certified']} | {r['spoiler_free']} | {r['duplicates']} | {r['non_refusal_changed']} | {r['boundary_density']:.3f} | "
            f"{r['rule_coverage']:.3f} | {r['tool_coverage']:.3f} | {r['L1']:.1%} | {r['L3']:.1%} | "
            f"{r['refusal_share']:.1%} | {r['mean_witness_calls']} | {r['users']} | "
            f"{r['max_user_share']:.1%} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--domains", nargs="+", default=[d for d in builtin_domains() if d != "mock"]
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="veritask-synth-bench-"))
    try:
        rows = [run_domain(d, args.n, args.seed, root) for d in args.domains]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    machine = (
        f"{platform.machine()}, Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}"
    )
    print(
        json.dumps({"machine": machine, "rows": rows}, indent=2)
        if args.json
        else markdown(rows, machine)
    )


if __name__ == "__main__":
    main()
