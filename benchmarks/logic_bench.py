"""Logic-family benchmark: instances per second per family, validator pool checking every one.

Run: ``.venv/bin/python benchmarks/logic_bench.py [--per-level 100]``

Each family generates ``per-level`` instances at every difficulty 1-10 through ``make_instance``
(generation, rendering, and consensus of all validators). The figure to compare with is
reasoning-gym's median of about 4,400 instances/s on this machine class (issue #6). The same
instances then go through the family's text-only solver (the Gate 1 check that the question
text alone determines the answer), timed separately: its rate and its cost as a share of
generation are the gate's price.

With ``--reasoning-gym-python PY`` (the interpreter of a virtualenv where ``reasoning-gym`` is
installed; it is not a veritask dependency), the same run also measures reasoning-gym: every
dataset it registers, ``per-level x 10`` entries each through ``create_dataset`` and iteration
(its generation computes the answer once, with no second validator), and prints both medians and
their ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time

from veritask.logic import builtin_families, check_text_only, make_instance


def rates(family_id: str, per_level: int) -> tuple[float, float]:
    """Instances/s through ``make_instance``, and text-only checks/s on the same instances."""
    family = builtin_families()[family_id]
    t0 = time.perf_counter()
    made = [
        make_instance(family, difficulty, split="train", seed=0, index=index)
        for difficulty in range(1, 11)
        for index in range(per_level)
    ]
    make_s = time.perf_counter() - t0
    text = check_text_only(family, made)
    if text.failures:
        raise SystemExit(f"{family_id}: text-only check failed: {text.problems[:3]}")
    return len(made) / make_s, len(made) / max(text.seconds, 1e-9)


_RG_PROBE = """
import json, statistics, sys, time
import reasoning_gym
size = int(sys.argv[1])
rates = {}
for name in sorted(reasoning_gym.factory.DATASETS):
    try:
        t0 = time.perf_counter()
        for _ in reasoning_gym.create_dataset(name, size=size, seed=0):
            pass
        rates[name] = size / (time.perf_counter() - t0)
    except Exception:
        continue
print(json.dumps({"datasets": len(rates), "median": statistics.median(rates.values())}))
"""


def reasoning_gym_median(python: str, size: int) -> dict[str, float]:
    """reasoning-gym's median instances/s, measured by ``python`` in a child process."""
    with tempfile.TemporaryDirectory() as scratch:  # some of its generators write files to cwd
        out = subprocess.run(
            [python, "-c", _RG_PROBE, str(size)],
            capture_output=True,
            text=True,
            check=True,
            cwd=scratch,
        )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-level", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--reasoning-gym-python", help="Interpreter with reasoning-gym installed.")
    args = parser.parse_args()
    both = {fid: rates(fid, args.per_level) for fid in sorted(builtin_families())}
    rates_ = {fid: round(r[0], 1) for fid, r in both.items()}
    text_rates = {fid: round(r[1], 1) for fid, r in both.items()}
    median = statistics.median(rates_.values()) if rates_ else 0.0
    text_median = statistics.median(text_rates.values()) if text_rates else 0.0
    cost = statistics.median(rates_[f] / text_rates[f] for f in rates_) if rates_ else 0.0
    baseline = None
    if args.reasoning_gym_python:
        baseline = reasoning_gym_median(args.reasoning_gym_python, args.per_level * 10)
    if args.json:
        print(
            json.dumps(
                {
                    "median": median,
                    "families": rates_,
                    "text_only_median": text_median,
                    "text_only": text_rates,
                    "text_only_cost_median": cost,
                    "reasoning_gym": baseline,
                },
                indent=2,
            )
        )
        return
    print("| family | instances/s | text-only checks/s | text-only cost |\n|---|---:|---:|---:|")
    for fid, r in sorted(rates_.items(), key=lambda kv: -kv[1]):
        print(f"| {fid} | {r:,.0f} | {text_rates[fid]:,.0f} | {r / text_rates[fid]:.0%} |")
    print(f"\nmedian over {len(rates_)} families: {median:,.0f} instances/s")
    print(
        f"text-only solver: median {text_median:,.0f} checks/s; median cost"
        f" {cost:.0%} of generation with the validator pool"
    )
    if baseline is not None:
        print(
            f"reasoning-gym, same run: median {baseline['median']:,.0f} instances/s over"
            f" {baseline['datasets']:.0f} datasets; ratio {median / baseline['median']:.2f}"
        )


if __name__ == "__main__":
    main()
