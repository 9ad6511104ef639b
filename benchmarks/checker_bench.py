"""Per-task checker acceptance run: every predicate true on s_target and false on s_origin.

Run: ``.venv/bin/python benchmarks/checker_bench.py [--n 1000] [--domain retail] [--seed 0]``

Generates N packages of one domain (one worker), builds each package's checkers from its diff
(``veritask.verify.make_checkers``, which refuses a set that does not separate the states), then
evaluates every predicate again on a fresh environment restored to s_target and to s_origin and
counts. A refusal task (s_target = s_origin) has no checkers; the exact state match checks it.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from veritask.env import CompiledDomain, Environment
from veritask.synth import generate
from veritask.task import DatasetDir, TaskPackage, load_dataset
from veritask.verify import CheckerError, evaluate_checkers, make_checkers


def _package(env: Environment, ds: DatasetDir, pkg: TaskPackage, tally: dict[str, Any]) -> None:
    origin, target = ds.read_state(pkg.origin), ds.read_state(pkg.target)
    try:
        checkers = make_checkers(env, origin, target)
    except CheckerError as exc:
        tally["refused"].append(f"{pkg.id}: {exc}")
        return
    if not checkers:
        tally["no_checkers"] += 1
        return
    tally["with_checkers"] += 1
    tally["predicates"] += len(checkers)
    env.restore(target)
    on_target = evaluate_checkers(checkers, env)
    env.restore(origin)
    on_origin = evaluate_checkers(checkers, env)
    tally["true_on_target"] += sum(on_target)
    tally["false_on_origin"] += sum(1 for v in on_origin if not v)
    bad = [c.name for c, t, o in zip(checkers, on_target, on_origin, strict=True) if not t or o]
    tally["violations"] += [f"{pkg.id}: {name}" for name in bad]


def run(domain: str, n: int, seed: int, root: Path) -> dict[str, Any]:
    """Generate ``n`` packages of ``domain`` into ``root`` and check every checker."""
    out = root / domain
    generate(domain, n, seed, out, workers=1)
    ds = DatasetDir(out)
    packages = load_dataset(out)
    tally: dict[str, Any] = {
        "domain": domain,
        "seed": seed,
        "packages": len(packages),
        "with_checkers": 0,
        "no_checkers": 0,
        "predicates": 0,
        "true_on_target": 0,
        "false_on_origin": 0,
        "refused": [],
        "violations": [],
    }
    compiled = CompiledDomain.from_spec(ds.domain_spec(domain))
    env = Environment(compiled)
    try:
        for pkg in packages:
            _package(env, ds, pkg, tally)
    finally:
        env.close()
    return tally


def main() -> None:
    """Parse arguments, run, print one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--domain", default="retail")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps(run(args.domain, args.n, args.seed, Path(tmp)), indent=1))


if __name__ == "__main__":
    main()
