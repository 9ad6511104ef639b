"""The evolution engine: streams of iterations that synthesize, verify and reflect, resumable.

Both self-evolving producers run on it: ``veritask.evolve`` (plan streams that synthesize
tasks, verify them, roll them out, attribute failures and rewrite their plans) and ``veritask
logic evolve`` (a family file proposed, gated and refined round after round with a playbook of
lessons). They sit on one floor and must not import each other, so the loop they share lives
here, below both, and knows nothing of tasks or families.

An :class:`Evolution` names its streams and how many iterations each gets. Iteration ``k`` of a
stream starts from the state the iteration before it left (:meth:`Evolution.start` before the
first) and plays three phases: ``synthesize`` (candidates), ``verify`` (judge them) and
``reflect`` (what to keep, and the state handed on: rewritten plans, a refined prompt and
playbook). The result is a :class:`Step`: the artifact to commit, the next state, and whether
the stream is finished (a stream may stop early, e.g. once a family is accepted).

The :class:`EvolutionStage` makes every (stream, iteration) a pipeline unit with a stable id,
run in order on ``AsyncExecutor(1)`` (an iteration needs the one before it). A committed
iteration is one JSON file ``<run_dir>/<unit id>.json``, written atomically before the loop's
own outputs (:meth:`Evolution.commit`). An optional opening unit (e.g. the initial plan set)
runs first and its artifact is given to every stream's ``start``. A rerun restores each stream
from its committed files (:meth:`Evolution.restore`, which must rebuild the state ``reflect``
handed on) and plays only what is missing, so a run killed anywhere ends with the bytes of an
uninterrupted one. Streams keep their own state: nothing passes between them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from veritask._util import atomic_write_text, read_json
from veritask.pipeline._executors import AsyncExecutor
from veritask.pipeline._manifest import RunManifest
from veritask.pipeline._stage import Unit, pending, unit_ids

S = TypeVar("S")
C = TypeVar("C")
V = TypeVar("V")

RUN_MANIFEST = "run-manifest.json"


@dataclass(frozen=True)
class Step(Generic[S]):
    """One played (or restored) iteration."""

    artifact: dict[str, Any]
    """What the iteration's unit file holds (enough to restore ``state``)."""
    state: S
    """The state the next iteration of the stream starts from."""
    final: bool = False
    """The stream is finished: its later iterations are not played."""


class Evolution(Protocol[S, C, V]):
    """A self-evolving producer: its streams and the three phases of an iteration."""

    name: str
    """The job name the run manifest records."""
    opening: str | None
    """The id of a unit run before every stream (its artifact goes to ``start``), or None."""

    def streams(self) -> Sequence[str]:
        """The independent streams, in the order they run."""
        ...

    def iterations(self) -> int:
        """At most this many iterations per stream."""
        ...

    def unit_id(self, stream: str, k: int) -> str:
        """The stable id of iteration ``k`` (from 0) of ``stream``."""
        ...

    def dump(self, artifact: dict[str, Any]) -> str:
        """The text of a unit file (deterministic)."""
        ...

    async def open(self) -> dict[str, Any]:
        """The opening unit's artifact (called only when ``opening`` is set)."""
        ...

    def start(self, stream: str, opening: dict[str, Any] | None) -> S:
        """The state before a stream's first iteration."""
        ...

    async def synthesize(self, stream: str, k: int, state: S) -> C:
        """Make this iteration's candidates."""
        ...

    async def verify(self, stream: str, k: int, state: S, candidates: C) -> V:
        """Judge the candidates (and whatever rollouts or gates that takes)."""
        ...

    async def reflect(self, stream: str, k: int, state: S, verified: V) -> Step[S]:
        """Decide what the iteration keeps and the state the next one starts from."""
        ...

    def failed(self, stream: str, k: int, state: S) -> None:
        """An iteration raised (called before the exception propagates; nothing committed)."""
        ...

    def restore(self, stream: str, k: int, artifact: dict[str, Any], state: S) -> Step[S]:
        """The step a committed iteration made, from its artifact and the state before it."""
        ...

    def commit(self, stream: str, k: int, step: Step[S]) -> None:
        """Write the loop's own outputs of an iteration whose unit file was just written."""
        ...

    def resumed(self, stream: str, k: int, step: Step[S]) -> None:
        """A rerun restored ``stream`` up to its committed iteration ``k``."""
        ...


Key = tuple[str, int]


@dataclass
class EvolutionStage(Generic[S, C, V]):
    """An :class:`Evolution`'s iterations as the units of an async chain over ``run_dir``."""

    loop: Evolution[S, C, V]
    run_dir: Path
    states: dict[str, S] = field(default_factory=dict)
    committed: dict[str, int] = field(default_factory=dict)
    """Iterations committed per stream."""
    finished: set[str] = field(default_factory=set)
    name: str = ""
    """The loop's job name (set from the loop)."""

    def __post_init__(self) -> None:
        self.name = self.loop.name

    def units(self) -> list[Unit[Key]]:
        """The opening (if any), then every stream's iterations in order."""
        out: list[Unit[Key]] = []
        if self.loop.opening is not None:
            out.append(Unit(self.loop.opening, ("", -1)))
        for stream in self.loop.streams():
            out += [
                Unit(self.loop.unit_id(stream, k), (stream, k))
                for k in range(self.loop.iterations())
            ]
        return out

    def path(self, unit_id: str) -> Path:
        """A unit's file."""
        return self.run_dir / f"{unit_id}.json"

    def read(self, unit_id: str) -> dict[str, Any]:
        """A committed unit's artifact."""
        data: dict[str, Any] = read_json(self.path(unit_id))
        return data

    def done(self, unit: Unit[Key]) -> bool:
        """The opening when its file exists; an iteration when committed or its stream ended."""
        stream, k = unit.params
        if k < 0:
            return self.path(unit.id).exists()
        return stream in self.finished or k < self.committed.get(stream, 0)

    def setup(self) -> None:
        """Nothing is shared beyond the loop."""

    def _state(self, stream: str) -> S:
        if stream not in self.states:
            opening = self.read(self.loop.opening) if self.loop.opening is not None else None
            self.states[stream] = self.loop.start(stream, opening)
        return self.states[stream]

    def _advance(self, stream: str, k: int, step: Step[S]) -> None:
        self.states[stream] = step.state
        self.committed[stream] = k + 1
        if step.final:
            self.finished.add(stream)

    def resume(self) -> None:
        """Restore every stream from its committed iterations, in order."""
        for stream in self.loop.streams():
            last: tuple[int, Step[S]] | None = None
            for k in range(self.loop.iterations()):
                if stream in self.finished or not self.path(self.loop.unit_id(stream, k)).exists():
                    break
                artifact = self.read(self.loop.unit_id(stream, k))
                step = self.loop.restore(stream, k, artifact, self._state(stream))
                self._advance(stream, k, step)
                last = (k, step)
            if last is not None:
                self.loop.resumed(stream, *last)

    async def run(self, unit: Unit[Key]) -> str:
        """Play one unit and commit it: its file first, then the loop's outputs (nothing to do
        once its stream has finished in this run)."""
        stream, k = unit.params
        if stream in self.finished:
            return unit.id
        if k < 0:
            artifact = await self.loop.open()
            atomic_write_text(self.path(unit.id), self.loop.dump(artifact))
            return unit.id
        state = self._state(stream)
        try:
            candidates = await self.loop.synthesize(stream, k, state)
            verified = await self.loop.verify(stream, k, state, candidates)
            step = await self.loop.reflect(stream, k, state, verified)
        except BaseException:
            self.loop.failed(stream, k, state)
            raise
        atomic_write_text(self.path(unit.id), self.loop.dump(step.artifact))
        self._advance(stream, k, step)
        self.loop.commit(stream, k, step)
        return unit.id


@dataclass(frozen=True)
class EvolutionRun:
    """What a call of :func:`run_evolution` did."""

    units: int
    resumed: int
    """Units already done before this call (committed, or of a finished stream)."""


async def run_evolution(
    stage: EvolutionStage[Any, Any, Any],
    config: dict[str, Any],
    *,
    where: str | None = None,
    grow: bool = False,
    progress: Callable[[str], None] | None = None,
) -> EvolutionRun:
    """Open the run manifest, restore the committed iterations, play the rest in order.

    Args:
        stage: The loop over its run directory.
        config: What decides the outputs; a rerun with another config is refused.
        where: How a refusal names the run (default: the run directory).
        grow: A rerun may add units (e.g. more rounds) to the manifest.
        progress: Called with each finished unit's id.

    Raises:
        veritask.pipeline.RunConflict: The run directory holds a run of another config.
    """
    manifest = RunManifest(stage.name, config, unit_ids(stage))
    manifest.open(stage.run_dir / RUN_MANIFEST, where=where, grow=grow)
    stage.resume()
    todo = pending(stage)
    await AsyncExecutor(1).map(stage, todo, on_result=progress)
    units = len(stage.units())
    return EvolutionRun(units, units - len(todo))
