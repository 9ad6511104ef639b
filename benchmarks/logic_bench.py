"""Logic-family benchmark: instances per second per family, validator pool checking every one.

Run: ``.venv/bin/python benchmarks/logic_bench.py [--per-level 100]``

Each family generates ``per-level`` instances at every difficulty 1-10 through ``make_instance``
(generation, rendering, and consensus of all validators). The figure to compare with is
reasoning-gym's median of about 4,400 instances/s on this machine class (issue #6).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from veritask.logic import builtin_families, make_instance


def rate(family_id: str, per_level: int) -> float:
    family = builtin_families()[family_id]
    t0 = time.perf_counter()
    for difficulty in range(1, 11):
        for index in range(per_level):
            make_instance(family, difficulty, split="train", seed=0, index=index)
    return 10 * per_level / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-level", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rates = {fid: round(rate(fid, args.per_level), 1) for fid in sorted(builtin_families())}
    median = statistics.median(rates.values()) if rates else 0.0
    if args.json:
        print(json.dumps({"median": median, "families": rates}, indent=2))
        return
    print("| family | instances/s |\n|---|---:|")
    for fid, r in sorted(rates.items(), key=lambda kv: -kv[1]):
        print(f"| {fid} | {r:,.0f} |")
    print(f"\nmedian over {len(rates)} families: {median:,.0f} instances/s")


if __name__ == "__main__":
    main()
