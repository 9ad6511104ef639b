"""Resource injection and preference requests on every built-in domain (issue 29, items 3-4).

Run: ``.venv/bin/python benchmarks/inject_bench.py [--scenes 20] [--noise 200] [--data DIR ...]``

Part 1 designs ``--scenes`` origin states per built-in domain (seed-filled, as ``generate``
does without history) and prints the records each injection strategy added per scene, with the
plan's ``--noise`` volume and without it. Part 2 reads dataset directories made by ``veritask
generate`` (``--data``) and prints, per directory, the share of packages tagged ``preference``
and, over the witness reads of the tables that hold noise, the share that filter or sort
rather than list (a read with no filter, order or offset on a table with more rows than a page).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from veritask.domains import builtin_domains, load_domain
from veritask.env import CompiledDomain
from veritask.synth._analysis import DomainModel
from veritask.synth._designer import SymbolicSetDesigner
from veritask.task import load_dataset

STRATEGIES = ("clone", "substitute", "trade_off", "noise")
_PAGING = {"order_by", "limit", "offset", "descending"}


def design_counts(domain: str, scenes: int, noise: int | None) -> Counter[str]:
    """Records each strategy injected over ``scenes`` origin states of ``domain``."""
    spec = load_domain(domain)
    designer = SymbolicSetDesigner(CompiledDomain.from_spec(spec), DomainModel.from_spec(spec))
    designer.noise = noise
    for i in range(scenes):
        designer.design(i, 1000 + i, fill=False)
    return designer.injector.counts


def dataset_row(root: Path) -> str:
    """One markdown row: preference share and how reads of big tables narrow their rows."""
    packages = load_dataset(root)
    preference = sum("preference" in p.tags for p in packages)
    narrowed = listed = 0
    for pkg in packages:
        for call in pkg.witness:
            if not call.tool.startswith("query_") or not isinstance(call.result, dict):
                continue
            if int(call.result.get("total", 0)) <= 20:
                continue
            filters = set(call.args) - _PAGING
            if filters or "order_by" in call.args:
                narrowed += 1
            else:
                listed += 1
    reads = narrowed + listed
    share = f"{narrowed / reads:.3f}" if reads else "-"
    return (
        f"| {root.name} | {len(packages)} | {preference} ({preference / len(packages):.1%}) "
        f"| {reads} | {share} |"
    )


def main(argv: list[str] | None = None) -> int:
    """Print both tables."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenes", type=int, default=20)
    parser.add_argument("--noise", type=int, default=200)
    parser.add_argument("--data", nargs="*", default=[])
    args = parser.parse_args(argv)
    print("| domain | plan noise | " + " | ".join(STRATEGIES) + " |")
    print("|---|---:|" + "---:|" * len(STRATEGIES))
    for domain in builtin_domains():
        for noise in (None, args.noise):
            counts = design_counts(domain, args.scenes, noise)
            cells = " | ".join(f"{counts[s] / args.scenes:.1f}" for s in STRATEGIES)
            print(f"| {domain} | {noise or 0} | {cells} |", flush=True)
    if args.data:
        print("\n| dataset | packages | preference | reads of tables over a page | narrowed |")
        print("|---|---:|---:|---:|---:|")
        for root in args.data:
            print(dataset_row(Path(root)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
