"""``veritask evolve run``: N plan streams x K iterations on the evolution engine, resumable.

The job is an :class:`~veritask.pipeline.Evolution` (:class:`PlanStreams`) run by
:class:`~veritask.pipeline.EvolutionStage`. The units are ``plans`` (the initial plan set: a
covering design, or a model's plans) and then ``<stream>.iter<k>`` for every stream and
iteration, stream by stream, in order: an iteration needs the plans its stream's previous
iteration wrote. Each unit writes one JSON artifact atomically into ``OUT/evolve-run/``; scratch
candidates live in ``OUT/evolve-run/pool/``. When every unit is done, the dataset is assembled from the artifacts
in unit order (manifest, states, policies, checkers, verified trajectories, report), so a run
killed at any point and rerun ends with the bytes of an uninterrupted run.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from veritask.domains import builtin_domains, load_domain
from veritask.evolve._assemble import RUN_DIR, assemble
from veritask.evolve._attribution import FaithfulSolver, Solver
from veritask.evolve._coverage import coverage, enumerate_plans
from veritask.evolve._flow import Flow, orchestrate
from veritask.evolve._model_roles import model_plans
from veritask.evolve._orchestrator import initial_workflow
from veritask.evolve._plans import PlanPair
from veritask.evolve._stream import (
    StreamRoles,
    StreamSettings,
    Synthesized,
    Synthesizer,
    Verified,
    reflect_on,
    synthesize,
    verify,
)
from veritask.evolve._task_agent import GENERATOR as TASK_AGENT
from veritask.evolve._task_agent import TaskAgent
from veritask.model import ModelProvider
from veritask.pipeline import EvolutionStage, Step, run_evolution


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
    synthesis: Literal["symbolic", "model"] = "symbolic"
    """Who synthesizes candidates: the given synthesizer, or the model's synthesis agent."""
    orchestrator: str | None = None
    """The model spec of the orchestrator (None: each stream's workflow stays as it starts)."""

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
            "synthesizer": TASK_AGENT if self.synthesis == "model" else synthesizer,
            "errors": s.errors.to_json(),
            "orchestrator": self.orchestrator,
        }


def domain_rules(domains: tuple[str, ...]) -> dict[str, list[str]]:
    """Each domain's rule ids, in spec order (keyed by the spec's name)."""
    out: dict[str, list[str]] = {}
    for name in domains:
        spec = load_domain(name)
        out[spec.name] = [r.id for r in spec.rules]
    return out


def domain_sources(domains: tuple[str, ...]) -> dict[str, str]:
    """Spec name -> the built-in name or spec file the domain was given as (plans, ids and
    reports name a domain by its spec's name; synthesis loads it from where it was given).

    Raises:
        ValueError: More than one domain is a spec file (a dataset keeps one spec copy).
    """
    files = [d for d in domains if d not in builtin_domains()]
    if len(files) > 1:
        raise ValueError(f"at most one domain may be a spec file, got {files}")
    return {load_domain(name).name: name for name in domains}


@dataclass(frozen=True)
class StreamState:
    """What a stream carries from one iteration to the next: its plans and the (origin,
    target) pairs of the tasks it accepted (a later duplicate is rejected)."""

    pair: PlanPair
    seen: dict[tuple[str, str], str]
    flow: Flow | None = None
    """The workflow the next iteration runs, and the last kept one (with an orchestrator)."""

    def after(self, artifact: dict[str, Any]) -> StreamState:
        """The state after the iteration that wrote ``artifact``."""
        seen = dict(self.seen)
        for item in artifact["accepted"]:
            pkg = item["package"]
            seen[(pkg["origin"], pkg["target"])] = pkg["id"]
        flow = Flow.after(artifact["workflow"]) if "workflow" in artifact else self.flow
        return StreamState(PlanPair.model_validate(artifact["next_plan"]), seen, flow)


@dataclass
class PlanStreams:
    """The evolve job as an :class:`~veritask.pipeline.Evolution`: the opening unit ``plans``
    (a covering design, or a model's plans), then ``plan-NN.iter<k>`` per stream."""

    config: EvolveConfig
    run_dir: Path
    roles: StreamRoles
    name: str = "evolve"
    opening: str | None = "plans"

    def streams(self) -> list[str]:
        """``plan-00`` ... one per plan pair."""
        return [f"plan-{n:02d}" for n in range(self.config.plans)]

    def iterations(self) -> int:
        """K."""
        return self.config.iterations

    def unit_id(self, stream: str, k: int) -> str:
        """``plan-NN.iter<k>``."""
        return f"{stream}.iter{k}"

    def dump(self, artifact: dict[str, Any]) -> str:
        """Sorted, indented JSON."""
        return json.dumps(artifact, indent=1, sort_keys=True) + "\n"

    async def open(self) -> dict[str, Any]:
        """The initial plan set and its coverage."""
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

    def start(self, stream: str, opening: dict[str, Any] | None) -> StreamState:
        """The stream's plans from the plan set; nothing accepted yet."""
        assert opening is not None
        pair = PlanPair.model_validate(opening["plans"][self.streams().index(stream)])
        if self.roles.orchestrator is None:
            return StreamState(pair, {})
        first = initial_workflow(pair.synthesis.candidates, pair.synthesis.batch)
        return StreamState(pair, {}, Flow(first, first, None))

    async def synthesize(self, stream: str, k: int, state: StreamState) -> Synthesized:
        """Certified candidates in ``pool/<stream>/iter<k>``, selected by the plan (and the
        workflow's stage settings, with an orchestrator)."""
        pool = self.run_dir / "pool" / stream / f"iter{k}"
        pair = state.pair
        if state.flow is not None:
            pair = state.flow.running(pair)
            self.roles.prompts[stream] = {str(r): p for r, p in state.flow.current.prompts.items()}
        return await synthesize(pair, pool, self.config.settings, self.roles)

    async def verify(
        self, stream: str, k: int, state: StreamState, candidates: Synthesized
    ) -> Verified:
        """Task verification, rollouts and attribution."""
        del stream, k
        seen = dict(state.seen)
        return await verify(state.pair, candidates, seen, self.config.settings, self.roles)

    async def reflect(
        self, stream: str, k: int, state: StreamState, verified: Verified
    ) -> Step[StreamState]:
        """The next plans; the artifact holds them, so a restore rebuilds the same state."""
        artifact = await reflect_on(state.pair, verified, self.config.settings, self.roles)
        if state.flow is not None:
            assert self.roles.orchestrator is not None
            last = k == self.config.iterations - 1
            artifact["workflow"] = await orchestrate(
                self.roles.orchestrator, state.flow, artifact, last, self.roles.ledger
            )
        self.roles.prompts.pop(stream, None)
        return Step(artifact, state.after(artifact))

    def failed(self, stream: str, k: int, state: StreamState) -> None:
        """Nothing to undo: an iteration writes only scratch candidates before it commits."""

    def restore(
        self, stream: str, k: int, artifact: dict[str, Any], state: StreamState
    ) -> Step[StreamState]:
        """The committed iteration's step."""
        del stream, k
        return Step(artifact, state.after(artifact))

    def commit(self, stream: str, k: int, step: Step[StreamState]) -> None:
        """The dataset is assembled from the unit files at the end."""

    def resumed(self, stream: str, k: int, step: Step[StreamState]) -> None:
        """Nothing to write again."""


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
    orchestrator: ModelProvider | None = None,
) -> EvolveSummary:
    """Run (or resume) an evolve job into the dataset directory ``out``.

    Args:
        config: Domains, plans, iterations, roles and ablation switches.
        out: The dataset directory (a rerun with the same config resumes it).
        synthesizer: Makes certified candidates (``veritask.synth.generate`` on the CLI).
        model: The provider of the model roles; required exactly when ``config.model`` is set.
        solver: The reference solver of attribution (default: the faithful agent with the
            settings' error model).
        progress: Called with each finished unit's id.
        orchestrator: The orchestrator's provider; required exactly when
            ``config.orchestrator`` is set.

    Raises:
        veritask.pipeline.RunConflict: ``out`` holds a run with another config.
    """
    if (model is None) != (config.model is None):
        raise ValueError("give a model provider exactly when the config names a model")
    if (orchestrator is None) != (config.orchestrator is None):
        raise ValueError("give an orchestrator provider exactly when the config names one")
    roles = StreamRoles(
        synthesizer,
        solver or FaithfulSolver(errors=config.settings.errors),
        domain_rules(config.domains),
        model,
        orchestrator=orchestrator,
    )
    roles.domain_sources = domain_sources(config.domains)
    if config.synthesis == "model":
        if model is None:
            raise ValueError("model synthesis needs a model")
        roles.task_agent = TaskAgent(model, roles.ledger)
    loop = PlanStreams(config, Path(out) / RUN_DIR, roles)
    stage = EvolutionStage(loop, loop.run_dir)
    run_config = config.to_json(synthesizer.name)
    ran = await run_evolution(stage, run_config, progress=progress)
    tasks, report = assemble(stage, Path(out), run_config)
    return EvolveSummary(Path(out), tasks, ran.units, ran.resumed, report)


def evolve(
    config: EvolveConfig,
    out: str | Path,
    synthesizer: Synthesizer,
    *,
    model: ModelProvider | None = None,
    solver: Solver | None = None,
    progress: Callable[[str], None] | None = None,
    orchestrator: ModelProvider | None = None,
) -> EvolveSummary:
    """:func:`evolve_async` for callers outside an event loop."""
    return asyncio.run(
        evolve_async(
            config,
            out,
            synthesizer,
            model=model,
            solver=solver,
            progress=progress,
            orchestrator=orchestrator,
        )
    )
