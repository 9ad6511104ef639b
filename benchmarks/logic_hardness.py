"""Logic hardness benchmark: the measured difficulty per level, copyable answers, level shapes.

Run: ``nice .venv/bin/python benchmarks/logic_hardness.py [--per-level 500] [--json out.json]
[--families a,b]`` (``--families``: only these family ids).

For every built-in family, ``per-level`` instances at each difficulty 1-10 (split ``bench``,
seed 0) through ``make_instance``. Per family it prints:

- the median of the family's measured quantity (``veritask.logic._hardness``) at levels 1, 5
  and 10, and whether level 10 meets 10^6 candidates / 30 steps (or the stated reason why not);
- the largest copyable-answer share over the levels (goal: at most 5%) and the largest copy
  baseline gain over chance (the leak gate's figure);
- the largest share of level L+1 shapes already seen at level L (goal: at most 20%).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from veritask.logic import builtin_families, make_instance
from veritask.logic._hardness import (
    MAX_SHAPE_OVERLAP,
    hardness_of,
    median,
    meets_level10,
    shape_overlap,
)
from veritask.logic._honesty import copy_baselines, is_copyable


def measure(family_id: str, per_level: int) -> dict[str, Any]:
    """The figures of one family (see the module docstring)."""
    family = builtin_families()[family_id]
    hard = hardness_of(family_id)
    medians: dict[int, int] = {}
    copyable: dict[int, float] = {}
    gain: dict[int, float] = {}
    shapes: dict[int, list[tuple[Any, ...]]] = {}
    start = time.perf_counter()
    for d in range(1, 11):
        insts = [make_instance(family, d, split="bench", index=i) for i in range(per_level)]
        copyable[d] = sum(is_copyable(family, i) for i in insts) / len(insts)
        base = copy_baselines(family, insts)
        gain[d] = 0.0 if base is None else base.gain
        if hard is not None:
            medians[d] = median([hard.measure(i.inputs) for i in insts])
            shapes[d] = [hard.shape(i.inputs) for i in insts]
    overlap = shape_overlap(shapes)
    return {
        "family": family_id,
        "kind": None if hard is None else hard.kind,
        "median": medians,
        "level10_ok": None if hard is None else meets_level10(hard, medians.get(10, 0)),
        "why_not": "" if hard is None else hard.why_not,
        "max_copyable": max(copyable.values()),
        "max_copy_gain": max(gain.values()),
        "max_shape_overlap": max(overlap.values(), default=0.0),
        "shape_overlap": overlap,
        "seconds": round(time.perf_counter() - start, 1),
    }


def _fmt(n: int) -> str:
    return f"{n:.1e}" if n >= 10**5 else str(n)


def main() -> None:
    """Measure every family and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-level", type=int, default=500)
    parser.add_argument("--json", default=None, help="also write the figures here")
    parser.add_argument(
        "--families", default=None, help="comma-separated family ids (default: every family)"
    )
    args = parser.parse_args()
    known = builtin_families()
    chosen = sorted(known) if args.families is None else args.families.split(",")
    unknown = [fid for fid in chosen if fid not in known]
    if unknown:
        parser.error(f"unknown families: {', '.join(unknown)}")
    rows = [measure(fid, args.per_level) for fid in chosen]
    print(f"{args.per_level} instances per level, split 'bench', seed 0\n")
    print(
        "| family | quantity | L1 | L5 | L10 | L10 goal met | max copyable | max copy gain"
        " | max shape overlap |"
    )
    print("|---|---|---:|---:|---:|---|---:|---:|---:|")
    for r in rows:
        m = r["median"]
        ok = "yes" if r["level10_ok"] else "no (see why)"
        print(
            f"| {r['family']} | {r['kind']} | {_fmt(m.get(1, 0))} | {_fmt(m.get(5, 0))} | "
            f"{_fmt(m.get(10, 0))} | {ok} | {r['max_copyable']:.1%} | "
            f"{r['max_copy_gain']:.1%} | {r['max_shape_overlap']:.0%} |"
        )
    met = sum(bool(r["level10_ok"]) for r in rows)
    flat = sum(r["max_shape_overlap"] <= MAX_SHAPE_OVERLAP for r in rows)
    print(f"\nlevel 10 goal met: {met}/{len(rows)}; shape overlap <= 20%: {flat}/{len(rows)}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(rows, out, indent=1, default=str)


if __name__ == "__main__":
    main()
