"""A task dataset through the Hub's format and back: export, load_dataset, rebuild, check.

Run: ``PYTHONPATH=src .venv/bin/python benchmarks/hf_export_bench.py [--n 1000]
[--domain travel] [--seed 0] [--dataset DIR]``

Generates N packages (or takes ``--dataset``), exports them with ``export_hf`` (which runs
``check`` first), loads every config with ``datasets.load_dataset`` from a fresh cache, rebuilds
a directory with ``import_hf`` and checks it again. Prints one JSON object: wall-clock seconds
per step, bytes per config, and the two check reports' counts.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import datasets

from veritask.export import CONFIGS, export_hf, import_hf
from veritask.synth import generate
from veritask.task import check_dataset

_T = TypeVar("_T")


def _timed(times: dict[str, float], name: str, step: Callable[[], _T]) -> _T:
    start = time.perf_counter()
    result = step()
    times[name] = round(time.perf_counter() - start, 2)
    return result


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def run(source: Path | None, domain: str, n: int, seed: int, root: Path) -> dict[str, Any]:
    """Every step once, timed; the counts that must agree."""
    times: dict[str, float] = {}
    if source is None:
        source = root / domain
        _timed(times, "generate", lambda: generate(domain, n, seed, source))
    out, back, cache = root / "hf", root / "back", root / "cache"
    written = _timed(times, "export_hf (check included)", lambda: export_hf(source, out))
    loaded = _timed(
        times,
        "load_dataset (4 configs)",
        lambda: {
            c: datasets.load_dataset(str(out), c, split="train", cache_dir=str(cache))
            for c in CONFIGS
        },
    )
    done = _timed(times, "import_hf", lambda: import_hf(out, back, cache_dir=cache))
    report = _timed(times, "check (rebuilt)", lambda: check_dataset(back))
    return {
        "source": str(source),
        "rows": written.rows,
        "loaded_tasks": len(loaded["tasks"]),
        "bytes": {c: _size(out / c) for c in CONFIGS} | {"source_dir": _size(source)},
        "seal": done.seal,
        "rebuilt": {
            k: getattr(report, k) for k in ("tasks", "certified", "grounded", "spoiler_free")
        },
        "failures": len(report.failures),
        "manifest_identical": (back / "manifest.jsonl").read_bytes()
        == (source / "manifest.jsonl").read_bytes(),
        "seconds": times,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--domain", default="travel")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dataset", type=Path, default=None, help="Use this dataset directory.")
    args = parser.parse_args()
    datasets.disable_progress_bars()
    with tempfile.TemporaryDirectory() as tmp:
        result = run(args.dataset, args.domain, args.n, args.seed, Path(tmp))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
