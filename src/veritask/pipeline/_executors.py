"""Executors: where a stage's units run.

One small interface, ``Executor.map(stage, units)``: the executor calls ``stage.setup()`` once
in every worker, then ``stage.run(unit)`` for each unit, and yields the results in the order of
``units``. The stage object is what travels to a worker (pickled once per worker), so it must
hold only picklable settings until ``setup`` builds its heavy state. A Ray executor implements
the same ``map`` (``veritask.pipeline._ray``): one actor per worker built from the stage, units
dispatched to the actors, results yielded in order. ``use_executor`` chooses the executor for
the stages started inside a block.

Async stages (model calls) run in one event loop with ``AsyncExecutor``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

from veritask.pipeline._stage import AsyncStage, Stage, Unit

P = TypeVar("P")
R = TypeVar("R")

_INSTALLED: ContextVar[Any] = ContextVar("veritask_pipeline_stage")
"""The stage a pool worker runs (set once per worker process by the pool's initializer)."""


class Executor(Protocol):
    """Runs the units of a synchronous stage."""

    def map(self, stage: Stage[P, R], units: Sequence[Unit[P]]) -> Iterator[R]:
        """Set the stage up in every worker, run ``units``, yield results in ``units`` order."""
        ...


class InProcessExecutor:
    """Runs every unit in the calling process, one after the other."""

    def map(self, stage: Stage[P, R], units: Sequence[Unit[P]]) -> Iterator[R]:
        """See ``Executor.map``."""
        if not units:
            return
        stage.setup()
        for unit in units:
            yield stage.run(unit)


def _install(stage: Stage[Any, Any]) -> None:
    _INSTALLED.set(stage)
    stage.setup()


def _run_installed(unit: Unit[Any]) -> Any:
    return _INSTALLED.get().run(unit)


class ProcessPoolExecutor:
    """Runs units in ``workers`` processes; each process gets the stage once and sets it up."""

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.workers = workers

    def map(self, stage: Stage[P, R], units: Sequence[Unit[P]]) -> Iterator[R]:
        """See ``Executor.map``."""
        if not units:
            return
        with concurrent.futures.ProcessPoolExecutor(
            max_workers=min(self.workers, len(units)), initializer=_install, initargs=(stage,)
        ) as pool:
            yield from pool.map(_run_installed, units)


_OVERRIDE: ContextVar[Executor | None] = ContextVar("veritask_pipeline_executor", default=None)
"""The executor chosen by the caller (``use_executor``), for code that asks ``executor_for``."""


def executor_for(workers: int) -> Executor:
    """The executor set by ``use_executor`` if any; else in-process for one worker, a process
    pool for more."""
    chosen = _OVERRIDE.get()
    if chosen is not None:
        return chosen
    return InProcessExecutor() if workers <= 1 else ProcessPoolExecutor(workers)


def remote_executor() -> Any | None:
    """The executor set by ``use_executor`` when it runs async stages elsewhere (it has
    ``map_async``, e.g. a ``RayExecutor``); None when async stages run in this event loop."""
    chosen = _OVERRIDE.get()
    return chosen if chosen is not None and hasattr(chosen, "map_async") else None


@contextmanager
def use_executor(executor: Executor) -> Iterator[None]:
    """Run the synchronous stages started in this block on ``executor`` (e.g. a
    ``RayExecutor``) instead of the local default."""
    token = _OVERRIDE.set(executor)
    try:
        yield
    finally:
        _OVERRIDE.reset(token)


class AsyncExecutor:
    """Runs the units of an async stage concurrently in the running event loop, at most
    ``concurrency`` at a time.

    With ``concurrency`` 1 the units run one after the other in ``units`` order, and the first
    failure stops the run before any later unit starts: the mode for chains of dependent units
    (each starts from the artifacts of the ones before it).
    """

    def __init__(self, concurrency: int) -> None:
        self.concurrency = max(1, concurrency)

    async def map(
        self,
        stage: AsyncStage[P, R],
        units: Sequence[Unit[P]],
        on_result: Callable[[R], None] | None = None,
    ) -> list[R]:
        """Set the stage up once, run ``units``; ``on_result`` sees each result as it finishes.

        Returns:
            The results in ``units`` order.
        """
        if not units:
            return []
        stage.setup()
        if self.concurrency == 1:
            return await _in_order(stage, units, on_result)
        gate = asyncio.Semaphore(self.concurrency)

        async def one(unit: Unit[P]) -> R:
            async with gate:
                result = await stage.run(unit)
            if on_result is not None:
                on_result(result)
            return result

        return list(await asyncio.gather(*(one(unit) for unit in units)))


async def _in_order(
    stage: AsyncStage[P, R], units: Sequence[Unit[P]], on_result: Callable[[R], None] | None
) -> list[R]:
    """Run ``units`` one after the other; an exception stops the run at that unit."""
    results: list[R] = []
    for unit in units:
        result = await stage.run(unit)
        if on_result is not None:
            on_result(result)
        results.append(result)
    return results
