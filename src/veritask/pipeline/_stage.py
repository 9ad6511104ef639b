"""Stages: a job's work split into units with stable ids, each run to an atomically written
artifact.

A stage says which units a run has (``units``), which of them already have their artifact
(``done``), how to build what its workers share (``setup``, once per worker) and how to run one
unit (``run``). A unit's artifact is written atomically (``veritask._util`` writes, or one whole
line appended to a JSONL file), so a killed run leaves whole artifacts or none, and a rerun runs
exactly the units that are not done.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

P = TypeVar("P")
R_co = TypeVar("R_co", covariant=True)


@dataclass(frozen=True)
class Unit(Generic[P]):
    """One unit of work: a stable id (the same on every run with the same config) and the
    parameters its stage runs it with (picklable, for process pools)."""

    id: str
    params: P


class Stage(Protocol[P, R_co]):
    """A stage whose units run synchronously (CPU-bound work; process pools run them)."""

    name: str

    def units(self) -> Sequence[Unit[P]]:
        """Every unit of the run, in order (done ones included)."""
        ...

    def done(self, unit: Unit[P]) -> bool:
        """True when the unit's artifact exists (a rerun skips it)."""
        ...

    def setup(self) -> None:
        """Build what the units share (compiled domains, workers); called once per worker
        before its first unit, in the worker's process."""
        ...

    def run(self, unit: Unit[P]) -> R_co:
        """Run one unit: write its artifact atomically; return a small summary of it."""
        ...


class AsyncStage(Protocol[P, R_co]):
    """A stage whose units await I/O (model calls); they run concurrently in one event loop."""

    name: str

    def units(self) -> Sequence[Unit[P]]:
        """Every unit of the run, in order (done ones included)."""
        ...

    def done(self, unit: Unit[P]) -> bool:
        """True when the unit's artifact exists (a rerun skips it)."""
        ...

    def setup(self) -> None:
        """Build what the units share; called once before the first unit."""
        ...

    async def run(self, unit: Unit[P]) -> R_co:
        """Run one unit: write its artifact atomically; return a small summary of it."""
        ...


class RecordingStage(AsyncStage[P, R_co], Protocol[P, R_co]):
    """An async stage whose units can run elsewhere (Ray actors) while one process writes.

    ``for_worker`` is a picklable copy whose ``run`` computes a unit's result without writing
    it; ``record`` writes a finished unit's result in the calling process (the one writer of the
    output) and returns it.
    """

    def for_worker(self) -> RecordingStage[P, R_co]:
        """A copy for remote workers: same settings, no output, nothing recorded."""
        ...

    def record(self, unit: Unit[P], result: Any) -> R_co:
        """Write one finished unit's result (as ``run`` does locally); return it."""
        ...


def pending(stage: Stage[P, object] | AsyncStage[P, object]) -> list[Unit[P]]:
    """The units of a stage that are not done yet, in order."""
    return [unit for unit in stage.units() if not stage.done(unit)]


def unit_ids(stage: Stage[P, object] | AsyncStage[P, object]) -> list[str]:
    """The stable ids of a stage's units, in order."""
    ids = [unit.id for unit in stage.units()]
    if len(set(ids)) != len(ids):
        raise ValueError(f"stage {stage.name!r}: unit ids are not unique")
    return ids
