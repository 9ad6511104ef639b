"""Where synthesis time goes, per domain: Set Designer, Explorer, admission, packaging, engine.

Run: ``.venv/bin/python benchmarks/synth_profile.py [--n 300] [--domains travel clinic ...]
[--json]``

For each domain one worker generates ``--n`` packages in this process while wall-clock timers
wrap the synthesis steps (inclusive times) and the engine's entry points:

- ``design``: the Set Designer building each scene's origin (``SymbolicSetDesigner.design``);
- ``episodes``: the Explorer's episodes, origin restores included (``UnitWorker._episode``);
- ``admit`` / ``package``: admission (certifying replay, duplicates) and packaging (grounding,
  spoiler checks, projection, target storage) of each episode;
- engine: every ``Environment.call`` (accepted and rejected separately), ``restore`` and
  ``image``/``snapshot``, wherever they are made from.

Engine calls per package and the share of rejected calls are the search's size; the engine's
share of the time is what a faster engine could still win. The timers cost about a microsecond
per wrapped call, so packages/s here is a little below ``synth_bench.py``'s.
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from veritask.domains import builtin_domains
from veritask.env import Environment
from veritask.synth import generate
from veritask.synth._designer import SymbolicSetDesigner
from veritask.synth._unit import UnitWorker

SECONDS: dict[str, float] = defaultdict(float)
COUNTS: dict[str, int] = defaultdict(int)


def _timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            SECONDS[name] += time.perf_counter() - t0
            COUNTS[name] += 1

    return wrapper


def _timed_call(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        result = fn(*args, **kwargs)
        name = "call_ok" if result.ok else "call_rejected"
        SECONDS[name] += time.perf_counter() - t0
        COUNTS[name] += 1
        return result

    return wrapper


def instrument() -> None:
    """Wrap the steps and the engine's entry points with timers (for this process only)."""
    SymbolicSetDesigner.design = _timed("design", SymbolicSetDesigner.design)  # type: ignore[method-assign]
    for step, name in (("_episode", "episodes"), ("_admit", "admit"), ("_accepted", "package")):
        setattr(UnitWorker, step, _timed(name, getattr(UnitWorker, step)))
    Environment.call = _timed_call(Environment.call)  # type: ignore[method-assign]
    Environment.restore = _timed("restore", Environment.restore)  # type: ignore[method-assign]
    Environment.image = _timed("image", Environment.image)  # type: ignore[method-assign]
    Environment.snapshot = _timed("snapshot", Environment.snapshot)  # type: ignore[method-assign]


def run_domain(domain: str, n: int, seed: int, root: Path) -> dict[str, Any]:
    generate(domain, 8, seed + 1, root / f"{domain}-warm")  # compile and import outside timing
    SECONDS.clear()
    COUNTS.clear()
    t0 = time.perf_counter()
    summary = generate(domain, n, seed, root / domain)
    total = time.perf_counter() - t0
    engine = sum(SECONDS[k] for k in ("call_ok", "call_rejected", "restore", "image", "snapshot"))
    calls = COUNTS["call_ok"] + COUNTS["call_rejected"]
    share = {k: round(SECONDS[k] / total, 3) for k in ("design", "episodes", "admit", "package")}
    return {
        "domain": domain,
        "tasks": summary.tasks,
        "seconds": round(total, 2),
        "packages_per_s": round(summary.tasks / total, 1),
        "ms_per_package": round(1000 * total / summary.tasks, 2),
        "share": share,
        "engine_share": round(engine / total, 3),
        "calls_per_package": round(calls / summary.tasks, 1),
        "rejected_share": round(COUNTS["call_rejected"] / max(1, calls), 3),
        "us_per_call": round(1e6 * (SECONDS["call_ok"] + SECONDS["call_rejected"]) / calls, 1),
        "us_per_rejected": round(
            1e6 * SECONDS["call_rejected"] / max(1, COUNTS["call_rejected"]), 1
        ),
        "us_per_ok": round(1e6 * SECONDS["call_ok"] / max(1, COUNTS["call_ok"]), 1),
        "restores_per_package": round(COUNTS["restore"] / summary.tasks, 1),
        "us_per_restore": round(1e6 * SECONDS["restore"] / max(1, COUNTS["restore"]), 1),
        "discarded": summary.discarded,
    }


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| domain | packages/s | ms/package | design | episodes | admit | package | engine "
        "share | calls/package | rejected | us/call (ok, rejected) | restores/package | "
        "us/restore |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        s = r["share"]
        lines.append(
            f"| {r['domain']} | {r['packages_per_s']} | {r['ms_per_package']} | "
            f"{s['design']:.0%} | {s['episodes']:.0%} | {s['admit']:.0%} | {s['package']:.0%} | "
            f"{r['engine_share']:.0%} | {r['calls_per_package']} | {r['rejected_share']:.0%} | "
            f"{r['us_per_call']} ({r['us_per_ok']}, {r['us_per_rejected']}) | "
            f"{r['restores_per_package']} | {r['us_per_restore']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--domains", nargs="+", default=[d for d in builtin_domains() if d != "mock"]
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    instrument()
    root = Path(tempfile.mkdtemp(prefix="veritask-synth-profile-"))
    try:
        rows = [run_domain(d, args.n, args.seed, root) for d in args.domains]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(rows, indent=2) if args.json else markdown(rows))


if __name__ == "__main__":
    main()
