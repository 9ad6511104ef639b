"""A Ray executor behind ``Executor.map``: one actor per worker, units dispatched in order.

Each actor receives the stage once (pickled), calls ``stage.setup()`` once, then runs the units
it is given. Units go to the actors round-robin and the results are collected in ``units``
order, so whatever the stage writes per unit (a dataset part, a rollout record) is the same as
with the local executors, and the caller assembles the same bytes. Resume is the stage's: it
skips units whose output already exists, whichever executor wrote it.

Ray is optional (the ``ray`` extra) and imported only when a ``RayExecutor`` maps its first
stage. Workers write to the output directory themselves, so on a cluster that directory must be
on storage every node mounts.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from veritask.pipeline._stage import RecordingStage, Stage, Unit

P = TypeVar("P")
R = TypeVar("R")


class _StageActor:
    """Holds one stage in a Ray worker; set up once, then runs units."""

    def __init__(self, stage: Stage[Any, Any]) -> None:
        self.stage = stage
        stage.setup()

    def run(self, unit: Unit[Any]) -> Any:
        """Run one unit of the stage."""
        return self.stage.run(unit)


class _AsyncStageActor:
    """Holds one async stage in a Ray worker (an async actor: its units share one event loop)."""

    def __init__(self, stage: RecordingStage[Any, Any]) -> None:
        self.stage = stage
        stage.setup()

    async def run(self, unit: Unit[Any]) -> Any:
        """Run one unit of the stage (the worker's copy writes nothing)."""
        return await self.stage.run(unit)


def _ray() -> Any:
    """The ``ray`` module, or an explanation of how to install it."""
    try:
        return importlib.import_module("ray")
    except ImportError as exc:
        raise RuntimeError("the Ray executor needs Ray: pip install 'veritask[ray]'") from exc


class RayExecutor:
    """Runs units on ``workers`` Ray actors (each a process with the stage set up once).

    Args:
        workers: Actors to start (at most one per unit).
        address: A cluster to connect to (``ray.init(address=...)``) when Ray is not
            initialized yet; None starts a local instance.
    """

    def __init__(self, workers: int, address: str | None = None) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.workers = workers
        self.address = address

    def _started(self) -> Any:
        ray = _ray()
        if not ray.is_initialized():
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
        return ray

    def map(self, stage: Stage[P, R], units: Sequence[Unit[P]]) -> Iterator[R]:
        """See ``Executor.map``."""
        if not units:
            return
        ray = self._started()
        actor_cls = ray.remote(_StageActor)
        staged = ray.put(stage)
        actors = [actor_cls.remote(staged) for _ in range(min(self.workers, len(units)))]
        try:
            refs = [actors[i % len(actors)].run.remote(u) for i, u in enumerate(units)]
            for ref in refs:
                yield ray.get(ref)
        finally:
            for actor in actors:
                ray.kill(actor)

    async def map_async(
        self,
        stage: RecordingStage[P, R],
        units: Sequence[Unit[P]],
        concurrency: int = 1,
        on_result: Callable[[R], None] | None = None,
    ) -> list[R]:
        """Run an async stage's units on the actors, ``concurrency`` at a time in each.

        The actors run ``stage.for_worker()`` (a copy that writes nothing); as each unit
        finishes, the driver hands its result to ``stage.record`` (the one writer of the
        output, so a killed run leaves what a local run would) and then to ``on_result``.
        Returns the results in ``units`` order; the first failure is raised once the units
        before it in completion order are recorded.
        """
        if not units:
            return []
        ray = self._started()
        actor_cls = ray.remote(_AsyncStageActor).options(max_concurrency=max(1, concurrency))
        staged = ray.put(stage.for_worker())
        actors = [actor_cls.remote(staged) for _ in range(min(self.workers, len(units)))]
        try:
            pending = {
                asyncio.wrap_future(actors[i % len(actors)].run.remote(u).future()): i
                for i, u in enumerate(units)
            }
            results: dict[int, R] = {}
            while pending:
                finished, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for future in sorted(finished, key=pending.__getitem__):
                    i = pending.pop(future)
                    results[i] = stage.record(units[i], future.result())
                    if on_result is not None:
                        on_result(results[i])
            return [results[i] for i in range(len(units))]
        finally:
            for actor in actors:
                ray.kill(actor)
