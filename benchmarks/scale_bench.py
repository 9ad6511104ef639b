"""Scale benchmark: one large generation per executor, disk per task, check, peak memory.

Run: ``.venv/bin/python benchmarks/scale_bench.py [--domain travel] [--n 2000] [--workers 2]
[--ray] [--json]``

For each executor (local process pool; Ray actors with ``--ray`` when Ray is installed) the
script generates ``--n`` packages into a fresh directory and reports wall time, packages/s, the
directory's bytes per task (apparent size and allocated blocks), the single-file archive's bytes
per task, ``check``'s time per task and whether every package is certified, and the peak
resident memory of this process and of its finished children. The manifests of the executors
are compared byte for byte.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from veritask.pipeline import RayExecutor, use_executor
from veritask.synth import generate
from veritask.task import check_dataset, pack_dataset


def disk(root: Path) -> tuple[int, int]:
    """Apparent bytes and allocated bytes (512-byte blocks) of every file under ``root``."""
    files = [p for p in root.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), sum(p.stat().st_blocks * 512 for p in files)


def peak_mb() -> dict[str, float]:
    """Peak resident memory of this process and of its finished child processes, in MB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"self": round(own, 1), "children": round(kids, 1)}


def one_run(domain: str, n: int, workers: int, out: Path, ray: bool) -> dict[str, Any]:
    t0 = time.perf_counter()
    if ray:
        with use_executor(RayExecutor(workers)):
            generate(domain, n, 0, out, workers=workers)
    else:
        generate(domain, n, 0, out, workers=workers)
    wall = time.perf_counter() - t0
    apparent, allocated = disk(out)
    archive = out.with_suffix(".vtpack")
    pack_dataset(out, archive)
    t1 = time.perf_counter()
    report = check_dataset(out)
    check_s = time.perf_counter() - t1
    return {
        "executor": "ray" if ray else "local",
        "tasks": report.tasks,
        "wall_s": round(wall, 2),
        "packages_per_s": round(report.tasks / wall, 1),
        "disk_bytes_per_task": round(apparent / report.tasks),
        "disk_allocated_per_task": round(allocated / report.tasks),
        "archive_bytes_per_task": round(archive.stat().st_size / report.tasks),
        "check_ms_per_task": round(1000 * check_s / report.tasks, 2),
        "certified": report.certified,
        "check_ok": report.ok,
        "peak_mb": peak_mb(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", default="travel")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ray", action="store_true", help="also run with the Ray executor")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="scale-bench-"))
    try:
        runs = [one_run(args.domain, args.n, args.workers, tmp / "local", False)]
        if args.ray:
            runs.append(one_run(args.domain, args.n, args.workers, tmp / "ray", True))
            same = (tmp / "ray" / "manifest.jsonl").read_bytes() == (
                tmp / "local" / "manifest.jsonl"
            ).read_bytes()
            runs[-1]["manifest_equals_local"] = same
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(runs, indent=2))
        return
    print(
        "| executor | tasks | wall s | packages/s | disk B/task | allocated B/task | archive B/task | check ms/task | certified |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in runs:
        print(
            f"| {r['executor']} | {r['tasks']} | {r['wall_s']} | {r['packages_per_s']} | "
            f"{r['disk_bytes_per_task']} | {r['disk_allocated_per_task']} | "
            f"{r['archive_bytes_per_task']} | {r['check_ms_per_task']} | {r['certified']} |"
        )


if __name__ == "__main__":
    main()
