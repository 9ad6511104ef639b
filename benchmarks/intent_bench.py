"""Requests keep their intent: the acceptance run of issue 27 on every domain.

Run: ``.venv/bin/python benchmarks/intent_bench.py [--n 1000] [--seeds 0 11] [--domains ...]``

For each built-in domain and each spec in ``tests/fixtures/unseen_domains/`` (or the
``--domains`` given, names or spec paths) and each seed, it generates N packages, runs
``check`` (certified, grounded, spoiler-free, semantic lint) and ``report`` (thresholds,
repeated texts, cast), and plays every package with the faithful agent (pass^1). It prints one
markdown row per run and exits 1 when an acceptance figure misses its target.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from veritask.agent import FaithfulAgent, ScriptedUser
from veritask.domains import builtin_domains, load_domain
from veritask.env import CompiledDomain
from veritask.rollout import EpisodeTask, run_episode
from veritask.synth import generate
from veritask.task import DatasetDir, check_dataset, load_dataset, report_dataset

FIXTURES = Path(__file__).parents[1] / "tests" / "fixtures" / "unseen_domains"


def faithful_pass(out: Path, domain: str) -> tuple[int, list[str]]:
    """(packages the faithful agent solves, ids it fails)."""
    spec = load_domain(domain)
    compiled = CompiledDomain.from_spec(spec)
    ds = DatasetDir(out)
    solved, failed = 0, []
    for pkg in load_dataset(out):
        task = EpisodeTask(
            pkg, compiled, "policy", ds.read_state(pkg.origin), ds.read_state(pkg.target)
        )
        traj = asyncio.run(run_episode(task, FaithfulAgent(spec), ScriptedUser(pkg)))
        if traj.final_distance == 0:
            solved += 1
        else:
            failed.append(pkg.id)
    return solved, failed


def run(domain: str, n: int, seed: int, root: Path) -> dict[str, Any]:
    """One domain at one seed."""
    out = root / f"{Path(domain).stem}-{seed}"
    t0 = time.perf_counter()
    generate(domain, n, seed, out)
    check = check_dataset(out).to_json()
    report = report_dataset(out)
    solved, failed = faithful_pass(out, domain)
    tasks = report["tasks"]
    return {
        "domain": Path(domain).stem,
        "seed": seed,
        "tasks": tasks,
        "certified": check["certified"],
        "grounded": check["grounded"],
        "spoiler_free": check["spoiler_free"],
        "pass1": solved / tasks if tasks else 0.0,
        "failed": failed[:5],
        "lint": check["lint"]["counts"],
        "boundary": report["boundary_density"],
        "rules": report["rule_coverage"],
        "tools": report["tool_coverage"],
        "L1": report["difficulty"]["L1"] / tasks if tasks else 0.0,
        "L3": report["difficulty"]["L3"] / tasks if tasks else 0.0,
        "refusals": report["refusal_share"],
        "repeated": report["repeated_texts"],
        "cast": report["cast"]["max_over_uniform"],
        "seconds": round(time.perf_counter() - t0),
    }


def misses(r: dict[str, Any]) -> list[str]:
    """The acceptance figures of one run that miss their targets."""
    n = r["tasks"]
    checks = {
        "certified": r["certified"] == n,
        "grounded": r["grounded"] == n,
        "spoiler-free": r["spoiler_free"] == n,
        "pass^1": r["pass1"] == 1.0,
        "lint": not r["lint"],
        "boundary": r["boundary"] >= 0.60,
        "rule coverage": r["rules"] >= 0.90,
        "tool coverage": r["tools"] >= 0.90,
        "L1": r["L1"] <= 0.10,
        "L3": r["L3"] >= 0.25,
        "refusals": r["refusals"] <= 0.05,
    }
    return [name for name, ok in checks.items() if not ok]


def row(r: dict[str, Any]) -> str:
    lint = ", ".join(f"{k} {v}" for k, v in r["lint"].items()) or "0"
    return (
        f"| {r['domain']} | {r['seed']} | {r['tasks']} | {r['certified']} | {r['grounded']} | "
        f"{r['spoiler_free']} | {r['pass1']:.3f} | {lint} | {r['boundary']:.3f} | "
        f"{r['rules']:.3f} | {r['tools']:.3f} | {r['L1']:.1%} | {r['L3']:.1%} | "
        f"{r['refusals']:.1%} | {r['repeated']} | {r['cast']:.2f} | {r['seconds']} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 11])
    default = sorted(builtin_domains()) + [str(p) for p in sorted(FIXTURES.glob("*.yaml"))]
    parser.add_argument("--domains", nargs="+", default=default)
    args = parser.parse_args()
    print(
        "| domain | seed | tasks | certified | grounded | spoiler-free | pass^1 | lint | "
        "boundary | rule cov. | tool cov. | L1 | L3 | refusals | repeated texts | "
        "cast max/uniform | s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    root = Path(tempfile.mkdtemp(prefix="veritask-intent-bench-"))
    bad = 0
    try:
        for domain in args.domains:
            for seed in args.seeds:
                r = run(domain, args.n, seed, root)
                print(row(r), flush=True)
                missed = misses(r)
                if missed:
                    bad += 1
                    print(f"  misses: {', '.join(missed)}; failed {r['failed']}", flush=True)
                shutil.rmtree(root / f"{Path(domain).stem}-{seed}", ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
