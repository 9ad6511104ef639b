"""Viewer benchmark: the initial state and the policy of every task of a large dataset.

Run: ``.venv/bin/python benchmarks/view_bench.py [--domain travel] [--n 1000] [--seed 0]
[--dataset DIR] [--json]``

Generates ``--n`` packages of ``--domain`` (or reads ``--dataset``), opens the dataset in the
viewer and, for every task, renders its task page, the state page its "initial state" link
points to (every table of that state, each table selected in turn, so every row of every table
is drawn once per state) and the policy page its rule links point to, checking that each
rule link's anchor is on the policy page. Reports the tasks, the distinct initial states, the
pages rendered, the errors (a page that raised, was missing, or a rule anchor not found) and
the wall time of each part.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from veritask._view import Site, open_pages
from veritask._view._state_pages import policy_path, rule_anchor, state_path
from veritask.synth import generate
from veritask.task import load_dataset


def _render(site: Site, path: str, query: dict[str, str], errors: list[str]) -> str:
    try:
        html = site.render(path, query)
    except Exception as exc:  # the benchmark counts every failure
        errors.append(f"{path} {query}: {type(exc).__name__}: {exc}")
        return ""
    if html is None:
        errors.append(f"{path}: no page")
        return ""
    return html


def measure(root: Path) -> dict[str, Any]:
    """Render the task, state and policy pages of every task of the dataset at ``root``."""
    started = time.perf_counter()
    site = Site(open_pages(root))
    opened = time.perf_counter() - started
    packages = load_dataset(root)
    errors: list[str] = []
    pages = 0
    timing = {"task": 0.0, "state": 0.0, "policy": 0.0}
    policies: dict[str, str] = {}
    states_done: set[str] = set()
    for pkg in packages:
        t0 = time.perf_counter()
        task = _render(site, f"task/{pkg.id}.html", {}, errors)
        pages += 1
        timing["task"] += time.perf_counter() - t0
        if f'href="../{state_path(pkg.origin)}"' not in task:
            errors.append(f"{pkg.id}: no link to its state")
        t0 = time.perf_counter()
        first = _render(site, state_path(pkg.origin), {}, errors)
        pages += 1
        if pkg.origin not in states_done:  # every table of a state, once per state
            states_done.add(pkg.origin)
            for table in re.findall(r'data-table="([^"]+)"', first):
                _render(site, state_path(pkg.origin), {"table": table}, errors)
                pages += 1
        timing["state"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        if pkg.domain not in policies:
            policies[pkg.domain] = _render(site, policy_path(pkg.domain), {}, errors)
        pages += 1
        for rule in pkg.rules_exercised:
            if f'id="{rule_anchor(rule)}"' not in policies[pkg.domain]:
                errors.append(f"{pkg.id}: rule {rule} has no anchor")
        timing["policy"] += time.perf_counter() - t0
    return {
        "tasks": len(packages),
        "states": len(states_done),
        "pages": pages,
        "errors": len(errors),
        "first_errors": errors[:5],
        "open_s": round(opened, 2),
        **{f"{k}_s": round(v, 2) for k, v in timing.items()},
        "total_s": round(time.perf_counter() - started, 2),
    }


def main() -> None:
    """Generate (or read) a dataset and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", default="travel")
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dataset", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.dataset
        generated = 0.0
        if root is None:
            root = Path(tmp) / args.domain
            t0 = time.perf_counter()
            generate(args.domain, args.n, args.seed, root)
            generated = time.perf_counter() - t0
        figures = {"domain": args.domain, "generate_s": round(generated, 2), **measure(root)}
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    for key, value in figures.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
