"""``veritask generate --explorer llm``: the unit loop with LLM roles.

Units are the same as in symbolic mode (one Set Designer scene, ``SCENE_SIZE`` task slots, each
slot aimed at a rule) and go through the same certification: the witness is replayed from
s_origin on a fresh environment and must end at s_target. What changes is who explores and who
writes the description: a Client and a Consultant model (:mod:`._llm_explorer`) and/or a
Projector model (:mod:`._llm_projector`).

Model calls are I/O-bound, so ``workers`` units run concurrently in one event loop (one shared
provider, built once from a spec string or passed in as an object) rather than in processes.
Each unit's spending is written atomically to ``costs/unit-N.json`` before its part, so a rerun
skips finished units without charging them again and the totals of an interrupted run equal
those of an uninterrupted one. Tool-call ids are renumbered per episode and every call carries
the task's seed, so the same seed and the same model answers give the same bytes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from veritask import __version__
from veritask._util import derive_seed
from veritask.env import Environment, Snapshot, data_calls
from veritask.model import CostLedger, GenerateConfig, ModelProvider
from veritask.model._types import provider_model
from veritask.pipeline import Unit
from veritask.policy import Rule
from veritask.synth._designer import Scene, faker_for
from veritask.synth._explorer import Episode
from veritask.synth._llm_explorer import Exploration, ExplorerLimits, LLMExplorer
from veritask.synth._llm_projector import LLMProjector, ProjectionRejected
from veritask.synth._persona import LLMPersonaWriter
from veritask.synth._projector import Projection
from veritask.synth._sampler import StateView
from veritask.synth._unit import (
    PRISTINE_EVERY,
    REFUSAL_EVERY,
    SceneParams,
    SpoilerLeak,
    UnitResult,
    UnitWorker,
    scene_units,
)
from veritask.task import DatasetDir, TaskPackage, sha256, text_keys

Mode = Literal["symbolic", "llm"]
LLM_ATTEMPTS_PER_TASK = 3
"""Candidates tried per task slot: each costs model calls, so fewer than in symbolic mode."""
_SEED_RANGE = 2**31
"""Sampling seeds sent to servers stay within a signed 32-bit integer."""


def generator_name(explorer: Mode, projector: Mode) -> str:
    """What packages name as their generator, e.g. ``veritask-llm/0.1.0``."""
    if explorer == projector:
        return f"veritask-{explorer}/{__version__}"
    return f"veritask-{explorer}-explorer-{projector}-projector/{__version__}"


@dataclass
class LLMMode:
    """How a run with model calls explores and projects, and with which model.

    Attributes:
        explorer: ``llm`` (Client and Consultant) or ``symbolic``.
        projector: ``llm`` or ``symbolic``.
        provider: The model behind every LLM role.
        limits: Bounds of each exploration.
        attempts_per_task: Candidates tried per task slot before the unit gives up on it.
        max_repairs: Rounds in which the Projector's answer may be sent back.
        persona: Write each description as a persona task (``_persona``): with an LLM
            projector the model writes it (module ``persona``) from the symbolic draft.
    """

    explorer: Mode
    projector: Mode
    provider: ModelProvider
    limits: ExplorerLimits = field(default_factory=ExplorerLimits)
    attempts_per_task: int = LLM_ATTEMPTS_PER_TASK
    max_repairs: int = 2
    persona: bool = False

    @property
    def generator(self) -> str:
        """The generator name packages carry, with the model, e.g.
        ``veritask-llm/0.1.0 (gpt-4o-mini)``."""
        return f"{generator_name(self.explorer, self.projector)} ({provider_model(self.provider)})"

    def run_info(self) -> dict[str, Any]:
        """What ``run.json`` records beyond the symbolic keys (a rerun must match it)."""
        return {
            "generator": self.generator,
            "explorer": self.explorer,
            "projector": self.projector,
            "model": provider_model(self.provider),
            "limits": {
                "max_turns": self.limits.max_turns,
                "max_steps": self.limits.max_steps,
                "max_violations": self.limits.max_violations,
                "attempts_per_task": self.attempts_per_task,
                "max_repairs": self.max_repairs,
            },
        } | ({"persona": True} if self.persona else {})  # other runs keep their config bytes


@dataclass
class LLMSceneStage:
    """The generate stage with LLM roles: the same scene units as symbolic mode, run
    concurrently in one event loop (model calls are I/O-bound) with one shared provider."""

    domain: str
    seed: int
    n: int
    out: Path
    mode: LLMMode
    name: str = "generate"
    _worker: LLMUnitWorker | None = field(default=None, repr=False)

    def units(self) -> list[Unit[SceneParams]]:
        """See ``scene_units``."""
        return scene_units(self.n)

    def done(self, unit: Unit[SceneParams]) -> bool:
        """True when the unit's part file exists (its costs were written before it)."""
        return DatasetDir(self.out).has_part(unit.params[0])

    def setup(self) -> None:
        """Build the worker every unit shares."""
        self._worker = LLMUnitWorker(self.domain, self.mode)

    async def run(self, unit: Unit[SceneParams]) -> UnitResult:
        """Produce one unit's packages; write its costs, then its part, atomically."""
        if self._worker is None:
            self.setup()
        assert self._worker is not None
        index, count, first = unit.params
        name = self._worker.spec.name  # ids and seeds follow the spec's name, not its path
        with data_calls():  # an interrupted call fails the unit, never becomes a refusal
            return await self._worker.run_unit(name, self.seed, index, count, first, self.out)


@dataclass
class _Unit:
    """Everything one unit's candidates share."""

    domain: str
    seed: int
    scene: Scene
    env: Environment
    view: StateView
    ds: DatasetDir
    internal: set[str]
    origin: Snapshot
    origin_digest: str
    policy_digest: str
    replayer: Environment
    """Certifies this unit's witnesses; its replays give the stored targets' bytes."""
    ledger: CostLedger = field(default_factory=CostLedger)
    seen: set[str] = field(default_factory=set)


class LLMUnitWorker(UnitWorker):
    """Produces the packages of one unit with LLM roles; safe to share between concurrent units
    (each unit has its own environment, ledger and roles)."""

    def __init__(self, domain: str, mode: LLMMode) -> None:
        super().__init__(domain)
        self.mode = mode
        self.generator = mode.generator
        self.persona = mode.persona and mode.projector == "symbolic"
        """A symbolic persona; with an LLM projector the model writes it (``_persona_of``)."""

    async def run_unit(
        self, domain: str, seed: int, unit: int, count: int, first_index: int, out: Path
    ) -> UnitResult:
        """Design the unit's scene and produce up to ``count`` certified packages."""
        u = self._start(domain, seed, unit, out)
        result = UnitResult(unit, 0)
        packages: list[TaskPackage] = []
        refusals = attempt = retry = 0
        while len(packages) < count and attempt < self.mode.attempts_per_task * count:
            index = first_index + len(packages)
            task_seed = derive_seed(u.scene.seed, "task", attempt)
            aim = self._aim(index, retry)
            attempt += 1
            retry += 1
            refusal_ok = refusals == 0 and unit % REFUSAL_EVERY == 0
            made = await self._candidate(u, index, task_seed, aim, refusal_ok, result)
            if isinstance(made, str):
                result.discarded[made] = result.discarded.get(made, 0) + 1
                continue
            refusals += int(made.refusal)
            retry = 0
            u.seen.add(made.target)
            packages.append(made)
        u.ds.write_costs(unit, u.ledger.to_json())
        if packages:
            u.ds.put_state(u.scene.origin)
        u.ds.write_part(unit, packages)
        u.env.close()
        u.replayer.close()
        result.packages = len(packages)
        result.costs = u.ledger
        return result

    def _start(self, domain: str, seed: int, unit: int, out: Path) -> _Unit:
        ds = DatasetDir(out)
        scene_seed = derive_seed(domain, seed, "scene", unit)
        scene = self.designer.design(
            unit, scene_seed, fill=unit % PRISTINE_EVERY != PRISTINE_EVERY - 1
        )
        env = Environment(self.domain, scene.origin)
        return _Unit(
            domain=domain,
            seed=seed,
            scene=scene,
            env=env,
            view=StateView(self.model, env),
            ds=ds,
            internal=text_keys(self.spec, scene.origin),
            origin=Snapshot(scene.origin, self.domain.layout),
            origin_digest=sha256(scene.origin),
            policy_digest=ds.put_policy(self.policy),
            replayer=Environment(self.domain),
        )

    async def _candidate(
        self,
        u: _Unit,
        index: int,
        task_seed: int,
        aim: Rule | None,
        refusal_ok: bool,
        result: UnitResult,
    ) -> TaskPackage | str:
        """One candidate: a package, or why it was discarded."""
        rng = random.Random(task_seed)
        config = GenerateConfig(seed=task_seed % _SEED_RANGE)
        found = await self._explore(u, rng, aim, refusal_ok, config)
        if isinstance(found, str):
            return found
        episode, dialogue = found
        reason = self._admit(episode, u.env, u.origin, u.seen, u.replayer)
        if self.mode.explorer == "llm":
            u.ledger.outcome("consultant", reason is None)
        if reason is not None:
            return reason
        try:
            proj = await self._project(u, episode, dialogue, config)
            pkg = self._packaged(
                u.domain,
                u.seed,
                index,
                episode,
                proj,
                u.internal,
                u.origin_digest,
                u.policy_digest,
            )
            if self.mode.persona and self.mode.projector == "llm":
                pkg = await self._persona_of(u, episode, proj, pkg, config)
        except ProjectionRejected as exc:
            if exc.reason == "spoiler leak":
                result.leaks.append(exc.detail)
            return exc.reason
        except SpoilerLeak as leak:
            result.leaks.append(str(leak))
            return "spoiler leak"
        ungrounded = self._ungrounded(pkg, u.scene.origin)
        if ungrounded is not None:
            return ungrounded
        u.ds.put_state(episode.target)
        return pkg

    async def _explore(
        self,
        u: _Unit,
        rng: random.Random,
        aim: Rule | None,
        refusal_ok: bool,
        config: GenerateConfig,
    ) -> tuple[Episode, list[tuple[str, str]]] | str:
        """An episode and its public dialogue, or why there is none."""
        if self.mode.explorer == "symbolic":
            episode = self._episode(u.scene, u.env, u.view, rng, aim, refusal_ok)
            return (episode, []) if episode is not None else "no reachable goal"
        exploration = await self._llm_explore(u, rng, aim, config)
        if exploration.reason is not None or exploration.episode is None:
            u.ledger.outcome("consultant", False)
            return exploration.reason or "no reachable goal"
        if exploration.episode.refusal is not None and not refusal_ok:
            u.ledger.outcome("consultant", False)
            return "refusal not needed"
        return exploration.episode, exploration.dialogue

    async def _llm_explore(
        self, u: _Unit, rng: random.Random, aim: Rule | None, config: GenerateConfig
    ) -> Exploration:
        u.env.restore(u.scene.origin)
        u.view.invalidate()
        actor = self._actor(u, rng, aim)
        faker = faker_for(rng.getrandbits(32))
        inspiration = f"{faker.bs().capitalize()} in {faker.city()}"
        explorer = LLMExplorer(
            self.model,
            u.env,
            self.mode.provider,
            self.policy,
            ledger=u.ledger,
            limits=self.mode.limits,
            config=config,
        )
        return await explorer.explore(actor, focus=aim, inspiration=inspiration)

    def _actor(self, u: _Unit, rng: random.Random, aim: Rule | None) -> Any:
        """Who the Client is: half the time, for a quota aim, an owner of a record the Set
        Designer placed at the boundary; otherwise anyone in the cast."""
        owners: list[Any] = []
        if aim is not None and aim.threshold is not None and u.scene.edge.get(aim.id):
            parent = aim.threshold.quantity.split(".")[0]
            for key in u.scene.edge[aim.id]:
                row = u.view.get(parent, key)
                owner = u.view.owner(parent, row) if row is not None else None
                if owner is not None and owner not in owners:
                    owners.append(owner)
        if owners and rng.random() < 0.5:
            return rng.choice(owners)
        return rng.choice(u.scene.cast)

    async def _project(
        self,
        u: _Unit,
        episode: Episode,
        dialogue: list[tuple[str, str]],
        config: GenerateConfig,
    ) -> Projection:
        u.view.invalidate()
        edge = self._edge(u.scene, episode)
        if self.mode.projector == "symbolic" or self.mode.persona:
            return self.projector.project(u.view, episode, edge, u.internal)
        projector = LLMProjector(
            self.model, self.mode.provider, u.ledger, max_repairs=self.mode.max_repairs
        )
        return await projector.project(u.view, episode, dialogue, edge, u.internal, config)

    async def _persona_of(
        self,
        u: _Unit,
        episode: Episode,
        proj: Projection,
        pkg: TaskPackage,
        config: GenerateConfig,
    ) -> TaskPackage:
        """The package with its persona written by the model from the symbolic draft (the
        LLM projector's part in persona mode)."""
        writer = LLMPersonaWriter(self.spec, self.mode.provider, u.ledger, self.mode.max_repairs)
        args = (u.internal, proj.profile.known_ids, episode.witness)
        return await writer.dress(proj, pkg, args, config)


__all__ = [
    "LLM_ATTEMPTS_PER_TASK",
    "LLMMode",
    "LLMSceneStage",
    "LLMUnitWorker",
    "generator_name",
]
