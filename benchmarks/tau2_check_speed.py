"""Verifying a task: veritask's certificate against τ²-bench's replay-and-hash, per task.

    python benchmarks/tau2_check_speed.py PATH --tau2-python PY [--domain airline|retail]
        [--passes N] [--packages DIR --tau2-tasks TASKS.json [--limit K] [--phases]]

PATH is a τ²-bench checkout (``data/tau2/domains/<d>/{db.json,tasks.json}``), PY a Python where
``tau2`` is installed. Two sets of tasks, each verified by both sides:

- **τ²-bench's own tasks** (every task with gold actions). veritask imports the domain from
  PATH, replays each task's actions once to record the outcomes and the final state, then each
  pass runs ``veritask.task.certify`` per task, the certificate ``veritask check`` gives a
  package: the initial state restored, every call replayed and compared with its recording,
  the final state compared with the recorded one (byte-identical image, else a DIFF at 0 rows).
- **Generated packages** (``--packages``, a dataset made by ``veritask generate`` on a domain
  imported from PATH, and ``--tau2-tasks``, its ``veritask export --format tau2``). veritask per
  package: ``certify`` on the stored origin and target (states read beforehand), and the whole
  per-package path of ``veritask check`` (spec hash, the ask, every state's bytes, hash, schema
  and pages, the policy file, the certificate with grounding on the same replay, the lint and
  the spoiler check; states read from the dataset, caches emptied before each pass); no CLI
  start-up, no domain compilation (both once per run).

τ²-bench, per task: ``get_environment()`` (its database loaded as its evaluator loads it), the
gold actions through ``make_tool_call``, ``get_db_hash()``. It runs in a child process that
stays up; passes alternate between the two sides (veritask first on even passes, τ²-bench first
on odd ones), each side times its own pass with ``time.process_time`` after ``gc.collect()``,
the collector left on in both. Reported per side: best and median CPU ms per task over the
passes, and both ratios, with the load average before and after. Outcomes and final states are
checked against the first pass outside the timing (veritask), and τ²-bench's final hashes must
be the same in every pass. With ``--phases``, three more check passes (after the comparison, on
their own) time each phase of the per-package check. Without PATH the script says so and exits
0.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from veritask.env import CompiledDomain, Environment, Snapshot, ToolResult
from veritask.policy.tau2 import import_tau2
from veritask.task import TaskPackage, WitnessCall, certify, replay_witness
from veritask.task._check import CheckReport, _check_package, _Checker
from veritask.task._dataset import DatasetDir, loaded_apart

_DRIVER = r"""
import gc, hashlib, json, sys, time
domain, source = sys.argv[1], sys.argv[2]
if domain == "airline":
    from tau2.domains.airline.environment import get_environment, get_tasks
else:
    from tau2.domains.retail.environment import get_environment, get_tasks
if source == "-":
    tasks = get_tasks(None)
else:
    from tau2.data_model.tasks import Task
    tasks = [Task.model_validate(t) for t in json.load(open(source, encoding="utf-8"))]
tasks = [t for t in tasks if t.evaluation_criteria and t.evaluation_criteria.actions]
if any(t.initial_state for t in tasks):
    sys.exit("a task with an initial state: not supported by this driver")
get_environment().get_db_hash()  # warm: imports, first load
print(json.dumps({"tasks": len(tasks)}), flush=True)
for _ in sys.stdin:
    gc.collect()
    errors, hashes = 0, []
    c0 = time.process_time()
    for task in tasks:
        env = get_environment()
        for action in task.evaluation_criteria.actions:
            try:
                env.make_tool_call(tool_name=action.name, requestor=action.requestor,
                                   **action.arguments)
            except Exception:
                errors += 1
        hashes.append(env.get_db_hash())
    cpu = time.process_time() - c0
    digest = hashlib.sha256("".join(hashes).encode()).hexdigest()
    print(json.dumps({"cpu_seconds": cpu, "action_errors": errors, "digest": digest}), flush=True)
"""

Pass = Callable[[], float]
"""One timed pass of a side: CPU seconds for all its tasks."""


class Tau2Side:
    """τ²-bench in its own Python, kept up across passes (one pass per request)."""

    def __init__(self, python: str, root: Path, domain: str, source: str) -> None:
        env = {**os.environ, "TAU2_DATA_DIR": str(root / "data")}
        self.log = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed by close); its logging
        self.proc = subprocess.Popen(
            [python, "-c", _DRIVER, domain, source],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=env,
        )
        self.tasks = int(self._answer()["tasks"])
        self.digest: str | None = None
        self.action_errors = 0

    def _answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.log.seek(0)
            sys.exit(
                f"the τ²-bench side failed (exit {self.proc.wait()}):\n{self.log.read()[-2000:]}"
            )
        found: dict[str, Any] = json.loads(line)
        return found

    def run_pass(self) -> float:
        """One pass over every task; its CPU seconds (final hashes checked across passes)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("pass\n")
        self.proc.stdin.flush()
        found = self._answer()
        if self.digest is not None and found["digest"] != self.digest:
            sys.exit("τ²-bench: final hashes differ between passes")
        self.digest, self.action_errors = found["digest"], int(found["action_errors"])
        return float(found["cpu_seconds"])

    def close(self) -> None:
        """End the child process (its input closed, it exits)."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()
        self.log.close()


def _cpu(work: Callable[[], None]) -> float:
    gc.collect()
    c0 = time.process_time()
    work()
    return time.process_time() - c0


def _recorded(tool: str, args: dict[str, Any], res: ToolResult) -> WitnessCall:
    error = None if res.error is None else res.error.to_json()
    return WitnessCall(tool=tool, args=args, ok=res.ok, result=res.result, error=error)


def own_tasks_side(root: Path, domain: str, tasks: list[list[dict[str, Any]]]) -> Pass:
    """veritask on τ²-bench's own tasks: record each task once, then ``certify`` per pass."""
    env = Environment(CompiledDomain.from_spec(import_tau2(root, domain).spec))
    seed = env.image()
    recorded: list[tuple[list[WitnessCall], Snapshot, str]] = []
    for actions in tasks:
        env.restore(seed)
        calls = []
        for action in actions:
            tool, args = str(action["name"]), dict(action.get("arguments") or {})
            calls.append(_recorded(tool, args, env.call(tool, dict(args))))
        recorded.append((calls, env.snapshot(), hashlib.sha256(env.image()).hexdigest()))

    def work() -> None:
        for calls, target, _ in recorded:
            if not certify(calls, env, seed, target).certified:
                sys.exit("veritask: a replay differs from its recording")

    def one_pass() -> float:
        cpu = _cpu(work)
        for calls, _, digest in recorded:  # outside the timing: the final images, byte for byte
            if (
                replay_witness(env, seed, calls) is not None
                or hashlib.sha256(env.image()).hexdigest() != digest
            ):
                sys.exit("veritask: a final state differs from its recording")
        return cpu

    return one_pass


def packages_sides(ds: DatasetDir, packages: list[TaskPackage]) -> dict[str, Pass]:
    """veritask on generated packages: ``certify`` alone, and check's whole per-package path."""
    checker = _Checker(ds)
    dom = checker.domain(packages[0].domain)
    if isinstance(dom, str):
        sys.exit(dom)
    states = {d: ds.read_state(d) for p in packages for d in (p.origin, p.target)}

    def certificates() -> None:
        for pkg in packages:
            target = Snapshot(states[pkg.target], dom.compiled.layout)
            if not certify(pkg, dom.env, states[pkg.origin], target).certified:
                sys.exit(f"veritask: {pkg.id} is not certified")

    def full_check() -> None:
        report = CheckReport(tasks=len(packages))
        for pkg in packages:
            _check_package(checker, pkg, report)
        if report.failures or report.grounded != len(packages):
            sys.exit(f"veritask check: {report.to_json()['failures'][:3]}")

    def check_pass() -> float:
        checker.ds = DatasetDir(ds.root)  # no state read before this pass
        checker.files.clear()
        checker.origins.clear()
        return _cpu(full_check)

    return {"certify": lambda: _cpu(certificates), "check": check_pass}


_PHASES = (
    ("veritask.task._check", "_Checker.target", "target: read, rebuilt, hashed"),
    ("veritask.task._check", "_Checker.origin", "origin ids (once per origin)"),
    ("veritask.env._environment", "Environment.restore", "restore s_origin"),
    ("veritask.env._environment", "Environment.call", "tool calls (probes included)"),
    ("veritask.task._grounded", "end_certificate", "final state vs s_target"),
    ("veritask.task._grounded", "_Grounder.before", "grounding (before each call)"),
    ("veritask.task._check", "lint_package", "lint"),
    ("veritask.task._check", "_check_spoilers", "spoiler check"),
)


@contextmanager
def phase_timers() -> Iterator[dict[str, int]]:
    """CPU nanoseconds spent in each of ``_PHASES`` while the block runs (the functions are
    wrapped meanwhile; nested phases count in each)."""
    spent = dict.fromkeys((label for *_, label in _PHASES), 0)
    undo: list[tuple[Any, str, Any]] = []
    for module, dotted, label in _PHASES:
        owner: Any = sys.modules[module]
        *path, name = dotted.split(".")
        for part in path:
            owner = getattr(owner, part)
        original = getattr(owner, name)

        def timed(*args: Any, _f: Any = original, _label: str = label, **kw: Any) -> Any:
            c0 = time.process_time_ns()
            try:
                return _f(*args, **kw)
            finally:
                spent[_label] += time.process_time_ns() - c0

        setattr(owner, name, timed)
        undo.append((owner, name, original))
    try:
        yield spent
    finally:
        for owner, name, original in reversed(undo):
            setattr(owner, name, original)


def print_phases(check: Pass, packages: int, passes: int = 3) -> None:
    """Where the whole check's time goes: each phase's CPU ms per package, in the pass with the
    least total time (timed apart from the comparison, the wrappers cost a little)."""
    best: tuple[float, dict[str, int]] | None = None
    for _ in range(passes):
        with phase_timers() as spent:
            total = check()
        if best is None or total < best[0]:
            best = (total, dict(spent))
    assert best is not None
    print(f"  phases (ms/package, whole check {best[0] / packages * 1e3:.3f} with timers):")
    for label, ns in best[1].items():
        print(f"    {label}: {ns / packages / 1e6:.3f}")


def interleaved(ours: dict[str, Pass], theirs: Tau2Side, passes: int) -> dict[str, list[float]]:
    """CPU seconds per pass of every side, the sides alternating in order pass by pass."""
    sides: list[tuple[str, Pass]] = [*ours.items(), ("tau2", theirs.run_pass)]
    times: dict[str, list[float]] = {name: [] for name, _ in sides}
    for i in range(passes):
        for name, run in sides if i % 2 == 0 else reversed(sides):
            times[name].append(run())
    return times


def report(label: str, times: dict[str, list[float]], tasks: int, theirs: Tau2Side) -> None:
    """Print best and median ms per task per side, and each veritask side's ratios."""
    tau2 = times.pop("tau2")
    t_best, t_med = min(tau2) / tasks * 1e3, statistics.median(tau2) / tasks * 1e3
    print(
        f"{label}: {tasks} tasks, {len(tau2)} passes; τ²-bench {t_best:.1f} ms/task best, "
        f"{t_med:.1f} median (raised on {theirs.action_errors} actions)"
    )
    for name, found in times.items():
        best, med = min(found) / tasks * 1e3, statistics.median(found) / tasks * 1e3
        print(
            f"  veritask {name}: {best:.3f} ms/task best, {med:.3f} median; "
            f"{t_best / best:.1f}x best/best, {t_med / med:.1f}x median/median"
        )


@contextmanager
def tau2_side(python: str, root: Path, domain: str, source: str) -> Iterator[Tau2Side]:
    """τ²-bench's child process for the block."""
    side = Tau2Side(python, root, domain, source)
    try:
        yield side
    finally:
        side.close()


def _own(args: argparse.Namespace) -> None:
    raw = json.loads((args.path / "data/tau2/domains" / args.domain / "tasks.json").read_text())
    tasks = [
        t["evaluation_criteria"]["actions"]
        for t in raw
        if (t.get("evaluation_criteria") or {}).get("actions")
    ]
    ours = {"certify": own_tasks_side(args.path, args.domain, tasks)}
    with tau2_side(args.tau2_python, args.path, args.domain, "-") as theirs:
        if theirs.tasks != len(tasks):
            sys.exit(f"τ²-bench has {theirs.tasks} tasks with gold actions, veritask {len(tasks)}")
        times = interleaved(ours, theirs, args.passes)
        report(f"{args.domain}, τ²-bench's own tasks", times, len(tasks), theirs)


def _generated(args: argparse.Namespace) -> None:
    ds = DatasetDir(args.packages)
    exported = json.loads(args.tau2_tasks.read_text(encoding="utf-8"))
    with loaded_apart(ds) as packages:
        chosen = packages[: args.limit] if args.limit else packages
        ids = [p.id for p in chosen]
        subset = [t for t in exported if t["id"] in set(ids)]
        if [t["id"] for t in subset] != ids:
            sys.exit("the exported tasks are not the packages (ids or order differ)")
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch) / "tasks.json"
            path.write_text(json.dumps(subset), encoding="utf-8")
            ours = packages_sides(ds, chosen)
            with tau2_side(args.tau2_python, args.path, args.domain, str(path)) as theirs:
                times = interleaved(ours, theirs, args.passes)
        report(f"{args.domain}, generated packages ({ds.root.name})", times, len(chosen), theirs)
        if args.phases:
            print_phases(ours["check"], len(chosen))


def main() -> None:
    """Measure both sides on τ²-bench's tasks, or on generated packages with ``--packages``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, help="a τ²-bench checkout")
    parser.add_argument("--domain", default="airline", choices=["airline", "retail"])
    parser.add_argument("--tau2-python", default=sys.executable)
    parser.add_argument("--passes", type=int, default=7)
    parser.add_argument("--packages", type=Path, help="a dataset generated on the domain")
    parser.add_argument("--tau2-tasks", type=Path, help="its export --format tau2")
    parser.add_argument("--limit", type=int, default=0, help="the first K packages only")
    parser.add_argument(
        "--phases", action="store_true", help="then time the check's phases (--packages)"
    )
    args = parser.parse_args()
    if args.path is None:
        print("skipped: give the path of a τ²-bench checkout (and --tau2-python)")
        return
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.packages is not None:
        if args.tau2_tasks is None:
            sys.exit("--packages needs --tau2-tasks (the dataset's export --format tau2)")
        _generated(args)
    else:
        _own(args)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
