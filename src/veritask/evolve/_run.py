"""``veritask evolve run``: N plan streams x K iterations as pipeline units, resumable.

The units are ``plans`` (the initial plan set: a covering design, or a model's plans) and then
``<stream>.iter<k>`` for every stream and iteration, stream by stream. They run in order on
``AsyncExecutor(1)``: an iteration needs the plans its stream's previous iteration wrote. Each
unit writes one JSON artifact atomically into ``OUT/evolve-run/``; scratch candidates live in
``OUT/evolve-run/pool/``. When every unit is done, the dataset is assembled from the artifacts
in unit order (manifest, states, policies, checkers, verified trajectories, report), so a run
killed at any point and rerun ends with the bytes of an uninterrupted run.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veritask._util import atomic_write_text
from veritask.domains import load_domain
from veritask.evolve._assemble import RUN_DIR, assemble
from veritask.evolve._attribution import FaithfulSolver, Solver
from veritask.evolve._coverage import coverage, enumerate_plans
from veritask.evolve._model_roles import model_plans
from veritask.evolve._plans import PlanPair
from veritask.evolve._stream import StreamRoles, StreamSettings, Synthesizer, run_iteration
from veritask.model import ModelProvider
from veritask.pipeline import AsyncExecutor, RunManifest, Unit, pending

"""The run's units and scratch candidates inside the output directory."""


@dataclass(frozen=True)
class EvolveConfig:
    """Everything that decides an evolve run's outputs."""

    domains: tuple[str, ...]
    plans: int = 4
    iterations: int = 3
    candidates: int = 40
    batch: int = 8
    settings: StreamSettings = field(default_factory=StreamSettings)
    model: str | None = None
    """The model spec of the model roles (None: symbolic roles)."""

    def to_json(self, synthesizer: str) -> dict[str, Any]:
        """The run config as the manifest stores it."""
        s = self.settings
        return {
            "domains": list(self.domains),
            "plans": self.plans,
            "iterations": self.iterations,
            "candidates": self.candidates,
            "batch": self.batch,
            "assistant": s.assistant,
            "user": s.user,
            "seed": s.seed,
            "task_verification": s.task_verification,
            "reflection": s.reflection,
            "model": self.model,
            "synthesizer": synthesizer,
        }


def domain_rules(domains: tuple[str, ...]) -> dict[str, list[str]]:
    """Each domain's rule ids, in spec order (keyed by the spec's name)."""
    out: dict[str, list[str]] = {}
    for name in domains:
        spec = load_domain(name)
        out[spec.name] = [r.id for r in spec.rules]
    return out


@dataclass
class EvolveStage:
    """The evolve job's units over one output directory (an async chain)."""

    config: EvolveConfig
    out: Path
    roles: StreamRoles
    name: str = "evolve"

    @property
    def run_dir(self) -> Path:
        """Where unit artifacts and scratch candidates live."""
        return self.out / RUN_DIR

    def units(self) -> list[Unit[tuple[int, int]]]:
        """``plans``, then every stream's iterations in order."""
        out: list[Unit[tuple[int, int]]] = [Unit("plans", (-1, -1))]
        for n in range(self.config.plans):
            out += [Unit(f"plan-{n:02d}.iter{k}", (n, k)) for k in range(self.config.iterations)]
        return out

    def path(self, unit_id: str) -> Path:
        """A unit's artifact."""
        return self.run_dir / f"{unit_id}.json"

    def done(self, unit: Unit[tuple[int, int]]) -> bool:
        """True when the unit's artifact exists."""
        return self.path(unit.id).exists()

    def setup(self) -> None:
        """Nothing is shared beyond the roles."""

    def read(self, unit_id: str) -> dict[str, Any]:
        """A finished unit's artifact."""
        data: dict[str, Any] = json.loads(self.path(unit_id).read_text(encoding="utf-8"))
        return data

    async def run(self, unit: Unit[tuple[int, int]]) -> str:
        """Run one unit and write its artifact atomically; return its id."""
        if unit.id == "plans":
            body = await self._plans()
        else:
            body = await self._iteration(*unit.params)
        atomic_write_text(self.path(unit.id), json.dumps(body, indent=1, sort_keys=True) + "\n")
        return unit.id

    async def _plans(self) -> dict[str, Any]:
        rules = self.roles.domain_rules
        if self.roles.model is None:
            plans = enumerate_plans(
                rules, self.config.plans, candidates=self.config.candidates, batch=self.config.batch
            )
        else:
            plans = await model_plans(self.roles.model, rules, self.config.plans, self.roles.ledger)
        return {
            "plans": [p.model_dump(mode="json") for p in plans],
            "coverage": coverage(plans, rules),
        }

    async def _iteration(self, n: int, k: int) -> dict[str, Any]:
        stream = f"plan-{n:02d}"
        if k == 0:
            pair = PlanPair.model_validate(self.read("plans")["plans"][n])
        else:
            pair = PlanPair.model_validate(self.read(f"{stream}.iter{k - 1}")["next_plan"])
        seen: dict[tuple[str, str], str] = {}
        for j in range(k):
            for item in self.read(f"{stream}.iter{j}")["accepted"]:
                pkg = item["package"]
                seen[(pkg["origin"], pkg["target"])] = pkg["id"]
        pool = self.run_dir / "pool" / stream / f"iter{k}"
        return await run_iteration(pair, pool, seen, self.config.settings, self.roles)


@dataclass
class EvolveSummary:
    """The outcome of a run."""

    out: Path
    tasks: int
    units: int
    resumed_units: int
    report: dict[str, Any]


async def evolve_async(
    config: EvolveConfig,
    out: str | Path,
    synthesizer: Synthesizer,
    *,
    model: ModelProvider | None = None,
    solver: Solver | None = None,
    progress: Callable[[str], None] | None = None,
) -> EvolveSummary:
    """Run (or resume) an evolve job into the dataset directory ``out``.

    Args:
        config: Domains, plans, iterations, roles and ablation switches.
        out: The dataset directory (a rerun with the same config resumes it).
        synthesizer: Makes certified candidates (``veritask.synth.generate`` on the CLI).
        model: The provider of the model roles; required exactly when ``config.model`` is set.
        solver: The reference solver of attribution (default: the faithful agent).
        progress: Called with each finished unit's id.

    Raises:
        veritask.pipeline.RunConflict: ``out`` holds a run with another config.
    """
    if (model is None) != (config.model is None):
        raise ValueError("give a model provider exactly when the config names a model")
    roles = StreamRoles(
        synthesizer, solver or FaithfulSolver(), domain_rules(config.domains), model
    )
    stage = EvolveStage(config, Path(out), roles)
    ids = [u.id for u in stage.units()]
    RunManifest("evolve", config.to_json(synthesizer.name), ids).open(
        stage.run_dir / "run-manifest.json"
    )
    todo = pending(stage)
    await AsyncExecutor(1).map(stage, todo, on_result=progress)
    tasks, report = assemble(stage, config.to_json(synthesizer.name))
    return EvolveSummary(Path(out), tasks, len(ids), len(ids) - len(todo), report)


def evolve(
    config: EvolveConfig,
    out: str | Path,
    synthesizer: Synthesizer,
    *,
    model: ModelProvider | None = None,
    solver: Solver | None = None,
    progress: Callable[[str], None] | None = None,
) -> EvolveSummary:
    """:func:`evolve_async` for callers outside an event loop."""
    return asyncio.run(
        evolve_async(config, out, synthesizer, model=model, solver=solver, progress=progress)
    )
