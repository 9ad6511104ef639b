"""Text-only gate and difficulty levels of every built-in family, measured.

Run: ``.venv/bin/python benchmarks/logic_levels.py [--per-level 1000] [--family ID]``

For each family, ``per-level`` instances at each difficulty 1-10 (split ``gate1``, seed 0,
indices ``0..per-level-1``, as Gate 1 makes them):

- the text-only check: the family's text solver reads each question alone and must agree with
  the validator pool (undetermined, disagreeing and erroring instances are counted);
- the share of questions each level shares with the level below (at most 5% passes);
- the mean size measure per level (it must strictly increase);
- the time of generation with the validator pool, and of the text solver, per instance.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time
from typing import Any

from veritask.logic import Family, builtin_families, make_instance
from veritask.logic._textonly import text_only_gate_on


def measure(family: Family, per_level: int) -> dict[str, Any]:
    """The figures of one family."""
    t0 = time.perf_counter()
    instances = [
        make_instance(family, d, split="gate1", seed=0, index=i)
        for d in range(1, 11)
        for i in range(per_level)
    ]
    make_us = (time.perf_counter() - t0) * 1e6 / len(instances)
    gate = text_only_gate_on(family, instances)
    measure_size = family.size or (lambda _inputs: 0)
    means = [
        statistics.mean(measure_size(dict(i.inputs)) for i in instances if i.difficulty == d)
        for d in range(1, 11)
    ]
    return {
        "text_only": gate.text.to_json(),
        "max_overlap": max(gate.overlap.values(), default=0.0),
        "overlap": {d: round(s, 4) for d, s in gate.overlap.items()},
        "size_means": [round(m, 2) for m in means],
        "size_strict": all(b > a for a, b in itertools.pairwise(means)),
        "make_us": round(make_us, 1),
        "text_us": round(gate.text.seconds * 1e6 / max(gate.text.checked, 1), 1),
        "passed": gate.passed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-level", type=int, default=1000)
    parser.add_argument("--family", action="append", help="Only these families (repeatable).")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    families = builtin_families()
    chosen = args.family or sorted(families)
    results = {fid: measure(families[fid], args.per_level) for fid in chosen}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(
        "| family | text-only failures | max adjacent overlap | size strictly up |"
        " make us | text us |"
    )
    print("|---|---:|---:|---|---:|---:|")
    for fid, r in results.items():
        t = r["text_only"]
        fails = t["undetermined"] + t["disagreements"] + t["errors"]
        print(
            f"| {fid} | {fails}/{t['checked']} | {r['max_overlap']:.1%} |"
            f" {'yes' if r['size_strict'] else 'no'} | {r['make_us']} | {r['text_us']} |"
        )
        for problem in t["problems"][:3]:
            print(f"    {problem}")
        if not r["size_strict"]:
            print(f"    sizes {r['size_means']}")
    passed = sum(r["passed"] and r["size_strict"] for r in results.values())
    print(f"\n{passed}/{len(results)} families pass (text-only, overlap, strict size)")


if __name__ == "__main__":
    main()
