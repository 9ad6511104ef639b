"""Grounded implies solvable over many random specs: the benchmark run of the property that
``tests/synth/test_random_specs.py`` checks on 200 specs in ``make test``.

Run: ``.venv/bin/python benchmarks/random_specs_bench.py [--specs 2000] [--n 4] [--first 0]``

For each spec seed it builds a random valid domain spec (``tests/_random_specs.py``), checks
that ``validate --examples`` accepts it, generates N packages, runs ``check`` and plays every
package ``check`` calls grounded with the faithful agent. It prints the totals and every
counterexample (spec seed, package id), and exits 1 when there is one.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

from tests._random_specs import random_spec_text
from tests.synth.test_random_specs import grounded_but_failed, validate_problems, write_spec


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=int, default=2000)
    parser.add_argument("--n", type=int, default=4, help="packages per spec")
    parser.add_argument("--first", type=int, default=0, help="first spec seed")
    parser.add_argument("--every", type=int, default=50, help="print the totals every N specs")
    args = parser.parse_args()
    # a run stopped early (SIGTERM, Ctrl-C) still prints the totals of the specs it finished
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    t0 = time.perf_counter()
    specs = packages = invalid = 0
    failed: list[str] = []
    done = 0

    def totals(word: str) -> None:
        print(
            f"{word}: {specs} specs ({invalid} refused by validate), {packages} grounded "
            f"packages, {len(failed)} grounded but failed by the faithful agent; "
            f"{time.perf_counter() - t0:.0f} s",
            flush=True,
        )

    try:
        with tempfile.TemporaryDirectory() as tmp:
            for seed in range(args.first, args.first + args.specs):
                text = random_spec_text(seed)
                out = Path(tmp) / str(seed)
                _, spec, domain = write_spec(text, out)  # parsed and compiled once per spec
                done += 1
                if problems := validate_problems(spec, domain):
                    invalid += 1
                    print(f"spec {seed}: validate --examples refuses it: {problems}", flush=True)
                    continue
                grounded, bad = grounded_but_failed(text, seed, args.n, out, domain)
                shutil.rmtree(out)
                specs += 1
                packages += grounded
                failed += [f"spec {seed}: {pid}" for pid in bad]
                for line in failed[-len(bad) :] if bad else []:
                    print("grounded but failed:", line, flush=True)
                if done % args.every == 0:
                    totals(f"after seed {seed}")
    except KeyboardInterrupt:
        totals("stopped early")
        return 1
    totals("done")
    return 1 if failed or invalid else 0


if __name__ == "__main__":
    raise SystemExit(main())
