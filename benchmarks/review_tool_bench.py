"""The reviewers' ``run_python`` tool: what one run costs in the OS sandbox.

Run: ``.venv/bin/python benchmarks/review_tool_bench.py [--workers 5] [--runs 10]``

For each of ``--workers`` fresh tools (one per reviewer conversation) it times the first run
(the child starts, loads the harness and builds the family module) and ``--runs`` later runs of
the same search code, then the first run of a blind solver's tool (no family). Prints JSON with
the median, minimum and maximum of each, in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from veritask.logic import family_from_source, make_instance
from veritask.logic._code_tool import CodeTool

FAMILY_FILE = (
    Path(__file__).parents[1] / "tests" / "fixtures" / "families" / "pick_residue.py"
).read_text(encoding="utf-8")
"""A family with many right answers per question (the test suite's fixture)."""

SEARCH = """import family
most = 0
for sample in family.samples:
    i = sample["inputs"]
    most = max(most, len([x for x in range(1, i["top"] + 1) if x % 3 == i["r"]]))
print(most)
"""


def _timed(tool: CodeTool, code: str) -> float:
    start = time.perf_counter()
    run = tool.run(code)
    elapsed = time.perf_counter() - start
    if run.kind != "ok":
        raise RuntimeError(f"the benchmark code failed: {run.error}")
    return elapsed


def _summary(seconds: list[float]) -> dict[str, Any]:
    return {
        "n": len(seconds),
        "median_ms": round(statistics.median(seconds) * 1000, 1),
        "min_ms": round(min(seconds) * 1000, 1),
        "max_ms": round(max(seconds) * 1000, 1),
    }


def main() -> None:
    """Time the tool and print the figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=5)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    family = family_from_source(FAMILY_FILE, "<pick_residue>")
    samples = [make_instance(family, d, split="review", seed=0, index=0) for d in (1, 5, 10)]
    first, later, blind = [], [], []
    try:
        for _ in range(args.workers):
            tool = CodeTool(family, samples)
            first.append(_timed(tool, SEARCH))
            later += [_timed(tool, SEARCH) for _ in range(args.runs)]
            tool.close()
            solver = CodeTool(None)
            blind.append(_timed(solver, "print(sum(range(10)))"))
            solver.close()
    finally:
        family.close()
    figures = {"first_run": _summary(first), "later_runs": _summary(later)}
    figures["blind_first_run"] = _summary(blind)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
