"""The cast and its boundaries: the acceptance run of the Set Designer's archetypes (issue 29).

Run: ``.venv/bin/python benchmarks/cast_bench.py [--n 1000] [--seed 0] [--domains travel ...]``

For each built-in domain it generates N packages, runs ``check`` (certified, grounded), checks
every package's archetype construction on its origin state (``construction_problem``), plays
every package with the faithful agent (pass^1), and reads ``report``'s archetype mix (shares of
the non-refusal tasks) and boundary-seeded packages per boundary kind and per rule category. It
prints one markdown row per domain and exits 1 when an acceptance figure misses its target.
"""

from __future__ import annotations

import argparse
import asyncio
import os
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
from veritask.synth import DomainModel, generate
from veritask.synth._boundaries import Boundaries
from veritask.synth._cast import CastBuilder, construction_problem
from veritask.task import ARCHETYPES, DatasetDir, check_dataset, load_dataset, report_dataset


def faithful_pass(out: Path, domain: str) -> int:
    """Packages the faithful agent solves (as in ``intent_bench``)."""
    spec = load_domain(domain)
    compiled = CompiledDomain.from_spec(spec)
    ds = DatasetDir(out)
    solved = 0
    for pkg in load_dataset(out):
        task = EpisodeTask(
            pkg, compiled, "policy", ds.read_state(pkg.origin), ds.read_state(pkg.target)
        )
        traj = asyncio.run(run_episode(task, FaithfulAgent(spec), ScriptedUser(pkg)))
        solved += traj.final_distance == 0
    return solved


def run(domain: str, n: int, seed: int, root: Path) -> dict[str, Any]:
    """One domain."""
    out = root / domain
    t0 = time.perf_counter()
    generate(domain, n, seed, out)
    took = time.perf_counter() - t0
    check = check_dataset(out).to_json()
    report = report_dataset(out)
    spec = load_domain(domain)
    builder = CastBuilder(CompiledDomain.from_spec(spec), DomainModel.from_spec(spec))
    ds = DatasetDir(out)
    packages = load_dataset(out)
    problems = [
        f"{p.id}: {why}"
        for p in packages
        if (why := construction_problem(builder, p, ds.read_state(p.origin))) is not None
    ]
    solved = faithful_pass(out, domain)
    kinds = {sh.kind for sh in Boundaries(spec).shapes.values() if sh.kind is not None}
    tasks = report["tasks"]
    return {
        "domain": domain,
        "asked": n,
        "tasks": tasks,
        "seconds": round(took, 1),
        "total": round(time.perf_counter() - t0, 1),
        "certified": check["certified"],
        "grounded": check["grounded"],
        "pass1": solved / tasks if tasks else 0.0,
        "shares": report["archetypes"]["shares"],
        "built": len(packages) - len(problems),
        "problems": problems[:3],
        "kinds": report["boundaries"]["kinds"],
        "kinds_in_spec": sorted(kinds),
        "categories": report["boundaries"]["categories"],
        "categories_in_spec": sorted({r.category for r in spec.rules}),
        "preference": report["tags"].get("preference", 0),
        "cast": report["cast"]["max_over_uniform"],
    }


def misses(r: dict[str, Any]) -> list[str]:
    """The acceptance figures of one run that miss their targets."""
    n = r["tasks"]
    checks = {
        "n packages": n == r["asked"],
        "certified": r["certified"] == n,
        "grounded": r["grounded"] == n,
        "pass^1": r["pass1"] == 1.0,
        "constructions": r["built"] == n,
        "archetypes >= 15%": min(r["shares"].values()) >= 0.15,
        "every boundary kind": set(r["kinds_in_spec"]) <= set(r["kinds"]),
        "every rule category": set(r["categories_in_spec"]) <= set(r["categories"]),
        "preference >= 10%": r["preference"] >= 0.1 * n,
        "cast <= 2x uniform": r["cast"] <= 2.0,
    }
    return [name for name, ok in checks.items() if not ok]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--domains", nargs="*", default=None)
    parser.add_argument("--keep", type=Path, default=None, help="write datasets here, kept")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="cast-bench-"))
    header = (
        "| domain | tasks | generate s | total s | certified | grounded | pass^1 | built | "
        + " | ".join(ARCHETYPES)
    )
    print(
        header + " | preference | cast max/uniform | boundary kinds (seeded / in spec) | "
        "rule categories (seeded / in spec) | misses |"
    )
    failed = False
    try:
        for domain in args.domains or builtin_domains():
            r = run(domain, args.n, args.seed, root)
            miss = misses(r)
            failed |= bool(miss)
            shares = " | ".join(f"{r['shares'][a]:.2f}" for a in ARCHETYPES)
            kinds = ", ".join(f"{k} {v}" for k, v in r["kinds"].items())
            cats = ", ".join(f"{k} {v}" for k, v in r["categories"].items())
            print(
                f"| {domain} | {r['tasks']} | {r['seconds']} | {r['total']} | {r['certified']} | "
                f"{r['grounded']} | {r['pass1']:.3f} | {r['built']} | {shares} | "
                f"{r['preference']} ({r['preference'] / max(r['tasks'], 1):.1%}) | "
                f"{r['cast']:.2f} | {kinds} ({len(r['kinds'])}/{len(r['kinds_in_spec'])}) | "
                f"{cats} ({len(r['categories'])}/{len(r['categories_in_spec'])}) | "
                f"{', '.join(miss) or '-'} |",
                flush=True,
            )
            for p in r["problems"]:
                print(f"  construction: {p}", flush=True)
            load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
            print(f"  load average after {domain}: {load}", flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
