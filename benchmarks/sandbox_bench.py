"""Sandbox benchmark: the cost of running a family file in the sandbox, per instance.

Run: ``.venv/bin/python benchmarks/sandbox_bench.py [--instances 300] [--rounds 5]``

Two family files (a light one, a list sum, and a heavy one that searches permutations) make
instances through ``make_instance`` (generate, then every validator) three ways in the same run:

- ``in-process``: the file's functions executed in this process (the baseline: trusted code);
- ``hook only``: a sandboxed worker without the OS layers (the ``--unsafe-no-sandbox`` path,
  forced here by pretending the kernel lacks them): process boundary, limits, audit hook;
- ``OS sandbox``: the real worker: the same plus capabilities dropped, Landlock and seccomp.

Each round measures every mode in turn (the machine is shared, so rounds interleave and the
median round is kept): the per-instance time of a warm worker and the time to start a worker and
load the file. Ratios are against in-process (per instance) and against ``hook only`` (what the
OS layers add).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

from veritask.logic import Family, FileFamily, _sandbox, family_from_source, make_instance

_META = """
FAMILY = {{"id": "{id}", "version": "1", "category": "symbolic", "title": "{id}",
          "template": "Solve [Input Slot 1].", "answer_format": "An integer."}}
"""

LIGHT = (
    _META.format(id="bench_sum")
    + """
def generate(difficulty, rng):
    numbers = [rng.randint(1, 10 * difficulty) for _ in range(2 + difficulty)]
    return {"numbers": numbers}, [", ".join(map(str, numbers))]

def solution(inputs):
    return sum(inputs["numbers"])

def solution_loop(inputs):
    total = 0
    for n in inputs["numbers"]:
        total += n
    return total
"""
)

HEAVY = (
    _META.format(id="bench_orderings")
    + """
import itertools

def generate(difficulty, rng):
    n = 3 + min(difficulty, 4)
    pairs = [sorted(rng.sample(range(n), 2)) for _ in range(n)]
    return {"n": n, "pairs": pairs}, [str(pairs)]

def solution(inputs):
    before = [tuple(p) for p in inputs["pairs"]]
    count = 0
    for order in itertools.permutations(range(inputs["n"])):
        where = {v: i for i, v in enumerate(order)}
        count += all(where[a] < where[b] for a, b in before)
    return count

def solution_recursive(inputs):
    before = [tuple(p) for p in inputs["pairs"]]
    def place(done, left):
        if not left:
            return 1
        return sum(place(done | {v}, left - {v}) for v in left
                   if all(a in done for a, b in before if b == v))
    return place(frozenset(), frozenset(range(inputs["n"])))
"""
)


def in_process(source: str) -> Family:
    """The family file's functions run in this process (trusted code only)."""
    scope: dict[str, Any] = {}
    exec(compile(source, "<bench>", "exec"), scope)
    meta = scope["FAMILY"]
    validators = tuple(v for k, v in scope.items() if k.startswith("solution"))
    return Family(
        id=meta["id"],
        version=meta["version"],
        category=meta["category"],
        title=meta["title"],
        template=meta["template"],
        generate=scope["generate"],
        validators=validators,
        answer_format=meta["answer_format"],
    )


@contextmanager
def hook_only() -> Iterator[None]:
    """Workers started inside run without the OS layers (as on a kernel lacking them)."""
    missing = _sandbox.SandboxSupport(0, False, None, ("benchmark: OS layers off",))
    with (
        mock.patch.object(_sandbox, "sandbox_support", lambda: missing),
        _sandbox.allow_unsafe_no_sandbox(),
        mock.patch.object(_sandbox, "_warn_unsandboxed", lambda _reasons: None),
    ):
        yield


def per_instance(family: Family, instances: int) -> float:
    """Seconds per instance (generate + every validator) on a warm family."""
    make_instance(family, 1, index=-1)  # warm: the worker starts outside the timing
    t0 = time.perf_counter()
    for index in range(instances):
        make_instance(family, 1 + index % 10, index=index)
    return (time.perf_counter() - t0) / instances


def start(source: str, times: int = 5) -> float:
    """Seconds to start a worker and load the file (median of ``times`` starts)."""
    samples = []
    for _ in range(times):
        family = family_from_source(source)
        t0 = time.perf_counter()
        assert family.load_result().ok
        samples.append(time.perf_counter() - t0)
        family.close()
    return statistics.median(samples)


def one_round(source: str, instances: int) -> dict[str, float]:
    """Every mode once, in turn."""
    out: dict[str, float] = {"in-process": per_instance(in_process(source), instances)}
    for mode, context in (("hook only", hook_only), ("OS sandbox", _nothing)):
        with context():
            family = family_from_source(source)
            assert isinstance(family, FileFamily)
            out[mode] = per_instance(family, instances)
            family.close()
            out[f"{mode} start"] = start(source)
    return out


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def measure(source: str, instances: int, rounds: int) -> dict[str, float]:
    """Median over rounds of each figure, with the ratios."""
    runs = [one_round(source, instances) for _ in range(rounds)]
    med: Callable[[str], float] = lambda key: statistics.median(r[key] for r in runs)  # noqa: E731
    figures = {key: med(key) for key in runs[0]}
    return {
        "in_process_us": round(figures["in-process"] * 1e6, 1),
        "hook_only_us": round(figures["hook only"] * 1e6, 1),
        "os_sandbox_us": round(figures["OS sandbox"] * 1e6, 1),
        "os_sandbox_vs_in_process": round(figures["OS sandbox"] / figures["in-process"], 1),
        "os_sandbox_vs_hook_only": round(figures["OS sandbox"] / figures["hook only"], 2),
        "hook_only_start_ms": round(figures["hook only start"] * 1e3, 1),
        "os_sandbox_start_ms": round(figures["OS sandbox start"] * 1e3, 1),
        "start_vs_hook_only": round(figures["OS sandbox start"] / figures["hook only start"], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not _sandbox.sandbox_support().available:
        raise SystemExit(f"the OS sandbox is unavailable: {_sandbox.sandbox_support().problems}")
    results = {
        name: measure(source, args.instances, args.rounds)
        for name, source in (("light", LIGHT), ("heavy", HEAVY))
    }
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for name, row in results.items():
        print(name, " ".join(f"{k}={v}" for k, v in row.items()))


if __name__ == "__main__":
    main()
