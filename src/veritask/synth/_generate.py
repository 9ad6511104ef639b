"""``veritask generate``: the certified-synthesis pipeline over work units (scenes).

A run of N tasks is split into units of ``SCENE_SIZE`` tasks that share one origin state. Each
unit is a pure function of (domain, seed, unit index): it designs the origin, explores tasks from
it, projects their descriptions, certifies each witness by replaying it on a fresh environment,
and writes its packages atomically. Units run in any order on any number of processes; a rerun
skips the units already written, and the manifest is assembled from the units in index order, so
an interrupted run finishes with the same bytes as an uninterrupted one.

With ``explorer="llm"`` (or ``projector="llm"``) the same units run with model-played roles
(``_llm_generate``); symbolic runs are untouched by that mode.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from veritask.domains import load_domain
from veritask.model import CostLedger, ModelProvider, get_provider
from veritask.synth._llm_explorer import ExplorerLimits
from veritask.synth._llm_generate import LLMMode
from veritask.synth._unit import (
    GENERATOR,
    SCENE_SIZE,
    UnitResult,
    _init_worker,
    _run_unit,
)
from veritask.task import (
    DatasetDir,
    dataset_ledger,
)


@dataclass
class GenerateSummary:
    """The outcome of a generate run."""

    out: Path
    tasks: int
    units: int
    resumed_units: int
    discarded: dict[str, int]
    costs: CostLedger | None = None
    """LLM mode: the spending of every unit of the dataset (resumed ones included, as
    recorded with them), per module; None in symbolic mode."""


def _units(n: int) -> Iterator[tuple[int, int, int]]:
    for unit in range((n + SCENE_SIZE - 1) // SCENE_SIZE):
        first = unit * SCENE_SIZE
        yield unit, min(SCENE_SIZE, n - first), first


Mode = Literal["symbolic", "llm"]


def _llm_mode(
    explorer: Mode,
    projector: Mode | None,
    model: ModelProvider | str | None,
    limits: ExplorerLimits | None,
) -> LLMMode | None:
    """The LLM settings of a run, or None for a symbolic run; clear errors for bad mixes."""
    for role, value in (("explorer", explorer), ("projector", projector)):
        if value not in (None, "symbolic", "llm"):
            raise ValueError(f"{role} must be 'symbolic' or 'llm', not {value!r}")
    chosen: Mode = projector or explorer
    if explorer == "symbolic" and chosen == "symbolic":
        if model is not None:
            raise ValueError("a model is only used with explorer='llm' or projector='llm'")
        return None
    if model is None:
        raise ValueError(
            f"explorer={explorer!r} projector={chosen!r} calls a model: give one "
            "(a provider, or a spec such as 'openai:gpt-4o-mini' or 'replay:run.jsonl')"
        )
    provider = get_provider(model) if isinstance(model, str) else model
    return LLMMode(explorer, chosen, provider, limits or ExplorerLimits())


def generate(
    domain: str,
    n: int,
    seed: int,
    out: str | Path,
    workers: int = 1,
    progress: Callable[[int], None] | None = None,
    *,
    explorer: Mode = "symbolic",
    projector: Mode | None = None,
    model: ModelProvider | str | None = None,
    limits: ExplorerLimits | None = None,
) -> GenerateSummary:
    """Generate ``n`` certified task packages into ``out`` (resumable; deterministic in ``seed``).

    Args:
        domain: Built-in domain name or spec path.
        n: Packages to make.
        seed: Run seed.
        out: Dataset directory (a rerun with the same settings resumes it).
        workers: Symbolic mode: worker processes. LLM mode: units explored concurrently.
        progress: Called with the number of packages each finished unit added.
        explorer: ``symbolic`` (default) or ``llm`` (a Client and a Consultant model).
        projector: ``symbolic`` or ``llm``; by default the same as ``explorer``.
        model: The provider for the LLM roles, or a provider spec string
            (``get_provider``); required when a role is ``llm``.
        limits: Bounds of each LLM exploration.

    Raises:
        ValueError: ``out`` holds a different run, or the mode and model do not fit.
    """
    mode = _llm_mode(explorer, projector, model, limits)
    ds, todo, units = _prepare(domain, n, seed, out, mode, progress)
    if mode is None:
        results: Iterable[UnitResult] = _execute(domain, todo, workers)
    else:
        results = mode.execute(domain, todo, workers, progress)
    return _finish(ds, n, units, todo, list(results), mode, progress)


async def generate_async(
    domain: str,
    n: int,
    seed: int,
    out: str | Path,
    workers: int = 1,
    progress: Callable[[int], None] | None = None,
    *,
    explorer: Mode = "symbolic",
    projector: Mode | None = None,
    model: ModelProvider | str | None = None,
    limits: ExplorerLimits | None = None,
) -> GenerateSummary:
    """:func:`generate` for callers inside a running event loop (a notebook, an async trainer).

    LLM mode awaits the model calls on the caller's loop; symbolic mode runs in a thread.
    Arguments, outputs and resume behave exactly as in :func:`generate`.
    """
    mode = _llm_mode(explorer, projector, model, limits)
    if mode is None:
        return await asyncio.to_thread(
            generate, domain, n, seed, out, workers, progress, explorer=explorer,
            projector=projector,
        )  # fmt: skip
    ds, todo, units = _prepare(domain, n, seed, out, mode, progress)
    results = await mode.execute_async(domain, todo, workers, progress)
    return _finish(ds, n, units, todo, results, mode, progress)


def _prepare(
    domain: str,
    n: int,
    seed: int,
    out: str | Path,
    mode: LLMMode | None,
    progress: Callable[[int], None] | None,
) -> tuple[DatasetDir, list[tuple[str, int, int, int, int, str]], int]:
    """Check or write the run info; the units still to do, and how many units in all."""
    ds = DatasetDir(Path(out))
    spec = load_domain(domain)
    info: dict[str, Any] = {
        "domain": domain,
        "n": n,
        "seed": seed,
        "generator": GENERATOR,
        "spec_hash": spec.spec_hash(),
        "scene_size": SCENE_SIZE,
    }
    if mode is not None:
        info.update(mode.run_info())
    previous = ds.read_run()
    if previous is not None and previous != info:
        raise ValueError(f"{out} holds a different run ({previous}); use another directory")
    ds.root.mkdir(parents=True, exist_ok=True)
    ds.write_run(info)
    todo = [(domain, seed, u, c, f, str(ds.root)) for u, c, f in _units(n) if not ds.has_part(u)]
    if progress:
        progress(sum(c for u, c, _ in _units(n) if ds.has_part(u)))
    return ds, todo, len(list(_units(n)))


def _finish(
    ds: DatasetDir,
    n: int,
    units: int,
    todo: list[tuple[str, int, int, int, int, str]],
    results: list[UnitResult],
    mode: LLMMode | None,
    progress: Callable[[int], None] | None,
) -> GenerateSummary:
    """Tally the units' discards, assemble the manifest and the summary."""
    discarded: dict[str, int] = {}
    for res in results:
        for k, v in res.discarded.items():
            discarded[k] = discarded.get(k, 0) + v
        if progress and mode is None:
            progress(res.packages)
    tasks = ds.assemble(units, n)
    costs = None if mode is None else dataset_ledger(ds.root) or CostLedger()
    return GenerateSummary(ds.root, tasks, units, units - len(todo), discarded, costs)


def _execute(
    domain: str, todo: list[tuple[str, int, int, int, int, str]], workers: int
) -> Iterator[UnitResult]:
    if workers <= 1:
        _init_worker(domain)
        for item in todo:
            yield _run_unit(item)
        return
    with ProcessPoolExecutor(
        max_workers=workers, initializer=_init_worker, initargs=(domain,)
    ) as pool:
        yield from pool.map(_run_unit, todo)
