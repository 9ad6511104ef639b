"""Verifying a τ²-bench task's gold actions: the imported veritask domain vs τ²-bench, per task.

    python benchmarks/tau2_check_speed.py PATH --tau2-python PY [--domain airline|retail]

PATH is a τ²-bench checkout (``data/tau2/domains/<d>/{db.json,tasks.json}``), PY a Python where
``tau2`` is installed. For every task with gold actions, both sides do what a grader does with
a trajectory: start from the task's initial database, replay the actions, and compare the final
database with the expected one.

- τ²-bench: ``get_environment()`` (the database loaded as its evaluator loads it), the gold
  actions through ``make_tool_call``, then ``get_db_hash()``; CPU time per task inside its
  process, after one warm-up load (the same measurement as ``scale_bench.py``'s τ²-bench line).
- veritask: one compiled domain and one environment; per task the seed image restored, the
  actions replayed through the procedural tools, each result compared with the one recorded in
  a first pass, and the final state diffed against the recorded target (0 rows apart), as
  ``veritask check`` compares a witness's final state with s_target (its tracked changes). The
  final images' sha256 are compared too, outside the timing.

Both run in the same invocation, one after the other; best of ``--passes`` for veritask. Without
PATH the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from veritask.env import CompiledDomain, Environment, Snapshot
from veritask.policy.tau2 import import_tau2

_DRIVER = r"""
import json, sys, time
domain = sys.argv[1]
if domain == "airline":
    from tau2.domains.airline.environment import get_environment, get_tasks
else:
    from tau2.domains.retail.environment import get_environment, get_tasks
tasks = [t for t in get_tasks(None) if t.evaluation_criteria and t.evaluation_criteria.actions]
get_environment().get_db_hash()  # warm: imports, first load
errors = 0
c0 = time.process_time()
for task in tasks:
    env = get_environment()
    for action in task.evaluation_criteria.actions:
        try:
            env.make_tool_call(tool_name=action.name, requestor=action.requestor, **action.arguments)
        except Exception:
            errors += 1
    env.get_db_hash()
cpu = time.process_time() - c0
print(json.dumps({"tasks": len(tasks), "cpu_seconds": cpu, "action_errors": errors}))
"""


def _replay(env: Environment, seed: bytes, actions: list[dict[str, Any]]) -> list[Any]:
    env.restore(seed)
    outcomes = []
    for action in actions:
        res = env.call(str(action["name"]), dict(action.get("arguments") or {}))
        outcomes.append((res.ok, res.result if res.ok else res.error))
    return outcomes


def _ours(root: Path, domain: str, tasks: list[list[dict[str, Any]]], passes: int) -> float:
    """Best CPU seconds over ``passes`` to verify every task (results and final digest)."""
    compiled = CompiledDomain.from_spec(import_tau2(root, domain).spec)
    env = Environment(compiled)
    seed = env.image()
    expected: list[tuple[list[Any], Snapshot, str]] = []
    for actions in tasks:
        outcomes = _replay(env, seed, actions)
        expected.append((outcomes, env.snapshot(), hashlib.sha256(env.image()).hexdigest()))
    best = float("inf")
    for _ in range(passes):
        c0 = time.process_time()
        for actions, (outcomes, target, _) in zip(tasks, expected, strict=True):
            # the outcomes, then the final state against the target (0 rows apart), as check does
            if _replay(env, seed, actions) != outcomes or env.diff(target).distance != 0:
                sys.exit("veritask: a replay differs from its first pass")
        best = min(best, time.process_time() - c0)
    for actions, (_, _, digest) in zip(tasks, expected, strict=True):  # the diff is exact
        _replay(env, seed, actions)
        if hashlib.sha256(env.image()).hexdigest() != digest:
            sys.exit("veritask: a final state differs from its first pass")
    return best


def _theirs(python: str, root: Path, domain: str) -> dict[str, Any]:
    env = {**os.environ, "TAU2_DATA_DIR": str(root / "data")}
    proc = subprocess.run(
        [python, "-c", _DRIVER, domain], capture_output=True, text=True, check=False, env=env
    )
    if proc.returncode != 0:
        sys.exit(f"the τ²-bench side failed:\n{proc.stderr[-2000:]}")
    found: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return found


def main() -> None:
    """Measure both sides and print the per-task CPU times and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, help="a τ²-bench checkout")
    parser.add_argument("--domain", default="airline", choices=["airline", "retail"])
    parser.add_argument("--tau2-python", default=sys.executable)
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()
    if args.path is None:
        print("skipped: give the path of a τ²-bench checkout (and --tau2-python)")
        return
    data = args.path / "data" / "tau2" / "domains" / args.domain
    raw = json.loads((data / "tasks.json").read_text())
    tasks = [
        t["evaluation_criteria"]["actions"]
        for t in raw
        if (t.get("evaluation_criteria") or {}).get("actions")
    ]
    ours = _ours(args.path, args.domain, tasks, args.passes) / len(tasks)
    theirs = _theirs(args.tau2_python, args.path, args.domain)
    per_task = theirs["cpu_seconds"] / theirs["tasks"]
    print(
        f"{args.domain}: {len(tasks)} tasks with gold actions "
        f"({sum(len(a) for a in tasks)} calls; τ²-bench raised on {theirs['action_errors']}); "
        f"veritask {ours * 1000:.2f} ms/task (CPU, best of {args.passes}), "
        f"τ²-bench {per_task * 1000:.1f} ms/task (CPU): {per_task / ours:.1f}x"
    )


if __name__ == "__main__":
    main()
