"""The rollout job on the pipeline: one unit per (task, trial), one JSONL line per unit.

The episode loop, the roles and the scoring live one floor down in ``veritask.rollout``; this
module only schedules, persists and resumes. A unit's id is ``task id/trial/episode seed`` (the
trajectory's own ``key``). With an output file, the run manifest is a sidecar
(``OUT.run.json``) holding the config: the dataset (sha256 of its manifest), the agent, the user,
the temperature, the base seed and the episode limits. A rerun into the same file with the same
config resumes (more tasks or trials may be added); another config is refused, naming the fields
that differ, instead of returning the old trajectories.

An episode that errored (a role raised: the model was unreachable, refused the key, timed out,
answered what could not be parsed) is not scored and not written to ``OUT``: it goes to
``OUT.errors.jsonl`` (rewritten by each run, removed when a run has none), and since ``OUT``
does not hold its unit, a rerun retries it. ``OUT`` lines of errored episodes written by older
versions are dropped on opening for the same reason.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from veritask._util import derive_seed, sha256, write_lines_atomic
from veritask.pipeline._executors import AsyncExecutor, remote_executor
from veritask.pipeline._jsonl import JsonlUnits
from veritask.pipeline._manifest import RunManifest
from veritask.pipeline._stage import Unit, pending
from veritask.rollout import (
    EpisodeLimits,
    EpisodeOutcome,
    RoleFactory,
    SessionFactory,
    TaskSource,
    failure_record,
    play_episode,
    score,
)
from veritask.task import TaskPackage, Trajectory

Episode = tuple[TaskPackage, int, int]
"""A rollout unit's parameters: the package, the trial and the episode seed."""


def unit_id(task_id: str, trial: int, seed: int) -> str:
    """The stable id of one episode unit."""
    return f"{task_id}/{trial}/{seed}"


def _line_key(line: str) -> str | None:
    """The unit of a scored trajectory line (None for an errored one: it is to be retried)."""
    try:
        traj = Trajectory.model_validate_json(line)
    except (ValidationError, ValueError):
        return None
    return None if traj.stop_reason == "agent_error" else unit_id(*traj.key)


def manifest_path(out: Path) -> Path:
    """Where the run manifest of a trajectories file lives (``OUT.run.json``)."""
    return out.with_name(out.name + ".run.json")


def errors_path(out: Path) -> Path:
    """Where a run lists its errored episodes (``OUT.errors.jsonl``)."""
    return out.with_name(out.name + ".errors.jsonl")


@dataclass(frozen=True)
class RolloutReport:
    """What a rollout produced: the scored trajectories and the errored episodes, both in
    task/trial order."""

    trajectories: list[Trajectory]
    errors: list[EpisodeOutcome]
    not_run: int = 0
    """Units left pending because more episodes errored than ``max_errors`` tolerates."""


def rollout_config(
    source: TaskSource,
    roles: RoleFactory,
    seed: int,
    limits: EpisodeLimits,
    environment: str | None = None,
) -> dict[str, Any]:
    """What decides a rollout's trajectories (transport settings such as endpoints, caches and
    concurrency are left out; tasks and trials choose units, not the config). ``environment``
    names a simulated environment; it is left out for the SQLite one, so earlier runs resume."""
    manifest = source.dataset.manifest
    dataset = sha256(manifest.read_bytes()) if manifest.exists() else str(source.root)
    config: dict[str, Any] = {
        "dataset": dataset,
        "agent": roles.agent,
        "user": roles.user,
        "temperature": roles.temperature,
        "seed": seed,
        "limits": asdict(limits),
    }
    if environment is not None:
        config["environment"] = environment
    return config


@dataclass
class RolloutStage:
    """Episodes of (task, trial) units, verified and appended to ``store`` as they finish."""

    source: TaskSource
    roles: RoleFactory
    trials: int
    seed: int
    limits: EpisodeLimits
    store: JsonlUnits | None = None
    environment: SessionFactory | None = None
    environment_name: str | None = None
    name: str = "rollout"
    results: dict[str, Trajectory] = field(default_factory=dict)
    failures: dict[str, EpisodeOutcome] = field(default_factory=dict)
    max_errors: int | None = None
    """Once more episodes than this errored, units not yet started are not run (None: all
    run). Counted by this process: Ray workers run what they were handed."""
    not_run: int = 0
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def units(self) -> Sequence[Unit[Episode]]:
        """One unit per (task, trial), tasks in dataset order, trials inside."""
        out: list[Unit[Episode]] = []
        for pkg in self.source.packages:
            for trial in range(self.trials):
                episode_seed = derive_seed(pkg.id, trial, self.seed)
                out.append(Unit(unit_id(pkg.id, trial, episode_seed), (pkg, trial, episode_seed)))
        return out

    def done(self, unit: Unit[Episode]) -> bool:
        """True when the output already holds the unit's trajectory."""
        return unit.id in self.results or (self.store is not None and unit.id in self.store)

    def setup(self) -> None:
        """Nothing to build: the task source caches compiled domains itself."""

    def for_worker(self) -> RolloutStage:
        """A copy for remote workers: the same episodes, nothing persisted or kept."""
        return RolloutStage(
            self.source,
            self.roles,
            self.trials,
            self.seed,
            self.limits,
            environment=self.environment,
            environment_name=self.environment_name,
        )

    def record(self, unit: Unit[Episode], outcome: EpisodeOutcome | None) -> EpisodeOutcome | None:
        """Keep and persist one finished episode (the run's one writer); an errored one is kept
        apart and not persisted, so the unit stays pending for a rerun (as does one not run)."""
        if outcome is None:
            self.not_run += 1
            return None
        if outcome.failure is not None:
            self.failures[unit.id] = outcome
            return outcome
        self.results[unit.id] = outcome.trajectory
        if self.store is not None:
            self.store.append(unit.id, outcome.trajectory.model_dump_json())
        return outcome

    def _given_up(self) -> bool:
        return self.max_errors is not None and len(self.failures) > self.max_errors

    async def run(self, unit: Unit[Episode]) -> EpisodeOutcome | None:
        """Run, verify (unless it errored) and persist one episode; None, without running it,
        once more episodes errored than tolerated."""
        if self._given_up():
            async with self._lock:
                return self.record(unit, None)
        pkg, trial, episode_seed = unit.params
        task = self.source.episode_task(pkg)
        agent, user = self.roles.build(task, trial, episode_seed)
        session = self.environment(task, trial, episode_seed) if self.environment else None
        outcome = await play_episode(
            task, agent, user, trial=trial, seed=episode_seed, limits=self.limits, session=session
        )
        if session is None and outcome.failure is None:
            outcome = EpisodeOutcome(score(outcome.trajectory, self.source, pkg))
        async with self._lock:
            return self.record(unit, outcome)

    def collected(self, units: Sequence[Unit[Episode]]) -> list[Trajectory]:
        """The trajectories of ``units`` in unit order (resumed ones read from the store)."""
        out: list[Trajectory] = []
        for unit in units:
            traj = self.results.get(unit.id)
            if traj is None and self.store is not None and unit.id in self.store:
                traj = Trajectory.model_validate_json(self.store.lines[unit.id])
            if traj is not None:
                out.append(traj)
        return out

    def errored(self, units: Sequence[Unit[Episode]]) -> list[EpisodeOutcome]:
        """The errored episodes of ``units`` in unit order."""
        return [self.failures[u.id] for u in units if u.id in self.failures]


def write_errors(out: Path, errors: Sequence[EpisodeOutcome]) -> None:
    """List a run's errored episodes next to ``out`` (one :func:`failure_record` a line), or
    remove the list of an earlier run when there are none."""
    path = errors_path(out)
    if not errors:
        path.unlink(missing_ok=True)
        return
    lines = (json.dumps(failure_record(e), sort_keys=True) + "\n" for e in errors)
    write_lines_atomic(path, (line.encode("utf-8") for line in lines))


def open_rollout(
    stage: RolloutStage, out: Path | None, units: Sequence[Unit[Episode]]
) -> RunManifest | None:
    """Claim ``out`` for this run (refusing another config) and load its finished units."""
    if out is None:
        return None
    config = rollout_config(
        stage.source, stage.roles, stage.seed, stage.limits, stage.environment_name
    )
    manifest = RunManifest("rollout", config, [u.id for u in units])
    opened = manifest.open(manifest_path(out), where=str(out), grow=True)
    stage.store = JsonlUnits(out, _line_key)
    return opened


async def run_batch(
    source: TaskSource,
    roles: RoleFactory,
    *,
    trials: int = 1,
    seed: int = 0,
    concurrency: int = 8,
    out: Path | None = None,
    limits: EpisodeLimits | None = None,
    progress: Callable[[Trajectory], None] | None = None,
    environment: tuple[str, SessionFactory] | None = None,
) -> list[Trajectory]:
    """:func:`run_rollout`, returning only the scored trajectories (errored episodes are left
    out: see :func:`run_rollout` to get them)."""
    report = await run_rollout(
        source,
        roles,
        trials=trials,
        seed=seed,
        concurrency=concurrency,
        out=out,
        limits=limits,
        progress=progress,
        environment=environment,
    )
    return report.trajectories


async def run_rollout(
    source: TaskSource,
    roles: RoleFactory,
    *,
    trials: int = 1,
    seed: int = 0,
    concurrency: int = 8,
    out: Path | None = None,
    limits: EpisodeLimits | None = None,
    progress: Callable[[Trajectory], None] | None = None,
    environment: tuple[str, SessionFactory] | None = None,
    max_errors: int | None = None,
) -> RolloutReport:
    """Run every (task, trial), verify each trajectory, append it to ``out`` as it finishes, and
    skip those ``out`` already holds (resume). Returns the scored trajectories and the errored
    episodes, in task/trial order.

    An errored episode (a role raised) is not verified nor written to ``out``; the run lists
    it in ``OUT.errors.jsonl`` and a rerun into ``out`` retries it. When the run completes,
    ``out`` is rewritten in unit order, so a resumed run ends with the bytes of an
    uninterrupted one. ``progress`` sees every finished episode's trajectory, errored or not.
    With ``max_errors``, once more episodes than that errored the units not yet started are
    left pending (counted in ``RolloutReport.not_run``): a dead endpoint ends the run early.

    ``environment`` is a name and a session factory for a simulated environment (its judge
    gives the reward); by default episodes run on the SQLite environment and are verified.

    Inside ``use_executor(RayExecutor(...))`` the episodes run on Ray actors (``concurrency``
    at a time in each) and this process appends them to ``out``: the same bytes, the same
    resume.

    Raises:
        RunConflict: ``out`` holds trajectories of another config (agent, user, seed, ...).
    """
    stage = RolloutStage(source, roles, trials, seed, limits or EpisodeLimits())
    stage.max_errors = max_errors
    if environment is not None:
        stage.environment_name, stage.environment = environment
    units = stage.units()
    manifest = open_rollout(stage, out, units)

    def seen(outcome: EpisodeOutcome | None) -> None:
        if progress is not None and outcome is not None:
            progress(outcome.trajectory)

    remote = remote_executor()
    if remote is not None:  # e.g. Ray actors run the episodes; this process writes them
        await remote.map_async(stage, pending(stage), concurrency, on_result=seen)
    else:
        await AsyncExecutor(concurrency).map(stage, pending(stage), on_result=seen)
    if stage.store is not None and manifest is not None:
        stage.store.finish(manifest.units)
    errors = stage.errored(units)
    if out is not None:
        write_errors(out, errors)
    return RolloutReport(stage.collected(units), errors, stage.not_run)
