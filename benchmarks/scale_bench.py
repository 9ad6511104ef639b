"""Scale benchmark: one large generation per executor, disk per task, check, peak memory, tau2.

Run: ``.venv/bin/python benchmarks/scale_bench.py [--domain travel] [--n 20000] [--workers 2]
[--ray] [--tau2 PATH [--tau2-python PY]] [--json]``

For each executor (the local process pool; Ray actors with ``--ray``, Ray started by the run
itself on this machine) the script generates ``--n`` packages into a fresh directory and reports
wall time, packages/s, the directory's bytes per task (apparent size and allocated blocks), the
single-file archive's bytes per task and the peak resident memory of the whole process tree
(this process, its pool workers or Ray's processes), sampled every 0.2 s. The machine's load
average is recorded before and after each run (the machine may be shared: compare ratios within
one run). The local dataset is then checked (``check``: every witness replayed, every target
verified from its stored delta); the Ray dataset's manifest and digest are compared byte for
byte with the local ones.

With ``--tau2 PATH`` (a tau2-bench checkout with its dependencies installed for
``--tau2-python``, by default ``PATH/.venv/bin/python``) the same run times tau2-bench's own
replay-plus-hash of its retail tasks: per task, a fresh retail environment, the task's gold
actions replayed on it, and the hash of its database (what its ``EnvironmentEvaluator`` does
for the gold side of every evaluation). The ratio to ``check``'s time per task is reported.

With ``--check-only retail,travel`` the script skips the executor runs: it generates ``--n``
packages of each listed domain once, then times ``check`` on each (one warm-up pass, then
``--check-reps`` timed passes; CPU and wall time per task, best pass reported) and, with
``--tau2``, the ratio of tau2-bench's time per task to each domain's: wall to wall
(``tau2_over_check``) and CPU to CPU (``tau2_cpu_over_check_cpu``; on a shared machine the
wall times of the two, taken minutes apart, are slowed by different loads).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from veritask.pipeline import RayExecutor, use_executor
from veritask.synth import generate
from veritask.task import check_dataset, pack_dataset

TAU2_REPLAY = r"""
import json, sys, time
from tau2.domains.retail.environment import get_environment, get_tasks
tasks = [t for t in get_tasks() if t.evaluation_criteria and t.evaluation_criteria.actions]
limit = int(sys.argv[1])
tasks = tasks[:limit] if limit > 0 else tasks
get_environment().get_db_hash()  # warm: imports, first load
errors = 0
t0, c0 = time.perf_counter(), time.process_time()
for task in tasks:
    env = get_environment()
    for action in task.evaluation_criteria.actions:
        try:
            env.make_tool_call(tool_name=action.name, requestor=action.requestor, **action.arguments)
        except Exception:
            errors += 1
    env.get_db_hash()
elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"tasks": len(tasks), "seconds": elapsed, "cpu_seconds": cpu, "action_errors": errors}))
"""


def disk(root: Path) -> tuple[int, int]:
    """Apparent bytes and allocated bytes (512-byte blocks) of every file under ``root``."""
    files = [p for p in root.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), sum(p.stat().st_blocks * 512 for p in files)


def _tree_rss_kb(root: int) -> int:
    """Resident memory of ``root`` and all its descendants (Linux ``/proc``), in KB."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        parents[int(entry)] = int(fields.get("PPid", "0").strip())
        rss[int(entry)] = int(fields.get("VmRSS", "0 kB").split()[0])
    tree, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        kids = [p for p, parent in parents.items() if parent == pid and p not in tree]
        tree.update(kids)
        frontier += kids
    return sum(rss.get(p, 0) for p in tree)


class PeakMemory:
    """Samples the process tree's resident memory in a thread; ``peak_mb`` after the block."""

    def __init__(self, every: float = 0.2) -> None:
        self.every = every
        self.peak_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak_kb = max(self.peak_kb, _tree_rss_kb(os.getpid()))
            self._stop.wait(self.every)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def peak_mb(self) -> float:
        return round(self.peak_kb / 1024, 1)


def one_run(domain: str, n: int, workers: int, out: Path, ray: bool) -> dict[str, Any]:
    load_before = os.getloadavg()
    with PeakMemory() as memory:
        t0 = time.perf_counter()
        if ray:
            with use_executor(RayExecutor(workers)):
                summary = generate(domain, n, 0, out, workers=workers)
        else:
            summary = generate(domain, n, 0, out, workers=workers)
        wall = time.perf_counter() - t0
    apparent, allocated = disk(out)
    archive = out.with_suffix(".vtpack")
    pack_dataset(out, archive)
    return {
        "executor": "ray" if ray else "local",
        "tasks": summary.tasks,
        "workers": workers,
        "wall_s": round(wall, 1),
        "packages_per_s": round(summary.tasks / wall, 1),
        "packages_per_s_per_worker": round(summary.tasks / wall / workers, 1),
        "disk_bytes_per_task": round(apparent / summary.tasks),
        "disk_allocated_per_task": round(allocated / summary.tasks),
        "archive_bytes_per_task": round(archive.stat().st_size / summary.tasks),
        "peak_tree_rss_mb": memory.peak_mb,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }


def check_run(out: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    report = check_dataset(out)
    seconds = time.perf_counter() - t0
    return {
        "check_ms_per_task": round(1000 * seconds / report.tasks, 3),
        "certified": report.certified,
        "tasks": report.tasks,
        "check_ok": report.ok,
    }


def check_timed(out: Path, reps: int) -> dict[str, Any]:
    """``check`` of one dataset, warm (one pass first), best of ``reps`` timed passes."""
    check_dataset(out)
    cpu, wall = [], []
    for _ in range(reps):
        c0, w0 = time.process_time(), time.perf_counter()
        report = check_dataset(out)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return {
        "tasks": report.tasks,
        "certified": report.certified,
        "grounded": report.grounded,
        "check_ok": report.ok,
        "check_cpu_ms_per_task": round(1000 * min(cpu) / report.tasks, 3),
        "check_ms_per_task": round(1000 * min(wall) / report.tasks, 3),
    }


def check_only(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """Generate each domain of ``--check-only`` once and time ``check`` on it."""
    res: dict[str, Any] = {"n": args.n, "cpus": os.cpu_count(), "checks": {}}
    for domain in args.check_only.split(","):
        generate(domain, args.n, 0, tmp / domain, workers=args.workers)
        res["checks"][domain] = check_timed(tmp / domain, args.check_reps)
    if args.tau2:
        res["tau2"] = tau2_run(args.tau2, args.tau2_python, args.tau2_tasks)
        tau2_cpu = res["tau2"]["cpu_ms_per_task"]
        for c in res["checks"].values():
            c["tau2_over_check"] = round(res["tau2"]["ms_per_task"] / c["check_ms_per_task"], 1)
            c["tau2_cpu_over_check_cpu"] = round(tau2_cpu / c["check_cpu_ms_per_task"], 1)
    return res


def tau2_run(checkout: Path, python: str | None, limit: int) -> dict[str, Any]:
    exe = python or str(checkout / ".venv" / "bin" / "python")
    done = subprocess.run(
        [exe, "-c", TAU2_REPLAY, str(limit)],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
    )
    res: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    res["ms_per_task"] = round(1000 * res["seconds"] / res["tasks"], 2)
    res["cpu_ms_per_task"] = round(1000 * res["cpu_seconds"] / res["tasks"], 2)
    return res


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", default="travel")
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ray", action="store_true", help="also run with the Ray executor")
    parser.add_argument("--tau2", type=Path, help="a tau2-bench checkout (retail replay+hash)")
    parser.add_argument("--tau2-python", help="python with tau2's dependencies installed")
    parser.add_argument("--tau2-tasks", type=int, default=0, help="first N retail tasks; 0: all")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--check-only", help="comma-separated domains: time check alone")
    parser.add_argument("--check-reps", type=int, default=3, help="timed check passes")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="scale-bench-"))
    if args.check_only:
        try:
            found = check_only(args, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print(json.dumps(found, indent=2))
        return
    res: dict[str, Any] = {"domain": args.domain, "n": args.n, "cpus": os.cpu_count()}
    try:
        res["runs"] = [one_run(args.domain, args.n, args.workers, tmp / "local", False)]
        res["check"] = check_run(tmp / "local")
        if args.ray:
            res["runs"].append(one_run(args.domain, args.n, args.workers, tmp / "ray", True))
            res["runs"][-1]["same_bytes_as_local"] = all(
                (tmp / "ray" / name).read_bytes() == (tmp / "local" / name).read_bytes()
                for name in ("manifest.jsonl", "digest.json")
            )
        if args.tau2:
            res["tau2"] = tau2_run(args.tau2, args.tau2_python, args.tau2_tasks)
            res["tau2_over_check"] = round(
                res["tau2"]["ms_per_task"] / res["check"]["check_ms_per_task"], 1
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(res, indent=2) if args.json else markdown(res))


def markdown(res: dict[str, Any]) -> str:
    lines = [
        f"{res['domain']}, {res['n']} tasks, {res['cpus']} CPUs",
        "",
        "| executor | workers | wall s | packages/s | per worker | disk B/task | allocated "
        "B/task | archive B/task | peak RSS MB (tree) | load before -> after |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in res["runs"]:
        lines.append(
            f"| {r['executor']} | {r['workers']} | {r['wall_s']} | {r['packages_per_s']} | "
            f"{r['packages_per_s_per_worker']} | {r['disk_bytes_per_task']} | "
            f"{r['disk_allocated_per_task']} | {r['archive_bytes_per_task']} | "
            f"{r['peak_tree_rss_mb']} | {r['load_before'][0]} -> {r['load_after'][0]} |"
        )
    c = res["check"]
    lines += [
        "",
        f"check: {c['certified']}/{c['tasks']} certified, {c['check_ms_per_task']} ms/task",
    ]
    if "tau2" in res:
        t = res["tau2"]
        lines.append(
            f"tau2-bench retail replay+hash: {t['ms_per_task']} ms/task over {t['tasks']} tasks "
            f"({res['tau2_over_check']}x check's time per task)"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
