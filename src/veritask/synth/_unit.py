"""One work unit of ``veritask generate``: a scene and the certified packages explored from it.

Each unit is a pure function of (domain, seed, unit index): it designs the origin, explores tasks
from it, projects their descriptions, certifies each witness with :func:`veritask.task.certify`
and writes its packages atomically.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veritask import __version__
from veritask._util import derive_seed
from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment, Snapshot, data_calls
from veritask.model import CostLedger
from veritask.pipeline import Unit
from veritask.policy import Rule, Transaction, render_wiki
from veritask.synth._analysis import DomainModel
from veritask.synth._cast import CastBuilder, fair_first, schedule, slot_archetype, wanted
from veritask.synth._chain import chained
from veritask.synth._designer import DesignError, Scene, SymbolicSetDesigner, faker_for
from veritask.synth._escalation import escalation_order
from veritask.synth._explorer import Episode, SymbolicExplorer
from veritask.synth._fused import CrossServiceExplorer, fused_services
from veritask.synth._persona import PERSONA_TAG, persona_text
from veritask.synth._projector import Projection, SymbolicProjector
from veritask.synth._sampler import Sampler, StateView
from veritask.synth._standing import standing_rules
from veritask.task import (
    ARCHETYPES,
    Archetype,
    Construction,
    DatasetDir,
    TaskPackage,
    certify,
    decided_spoilers,
    find_spoilers,
    grounding,
    lint_package,
    normalised_text,
    sha256,
    text_keys,
)

GENERATOR = f"veritask-symbolic/{__version__}"
SCENE_SIZE = 10
ATTEMPTS_PER_TASK = 12
PRISTINE_EVERY = 4
"""Every fourth scene keeps the seed records as the spec's examples assume them."""
REFUSAL_EVERY = 3
"""At most one refusal task in every third unit (under 5% of a run)."""
RESCENES = 3
"""Fresh scenes a unit may design when its scene runs out of attempts (``UnitWorker.run``)."""


MAX_GOALS = 3
"""The most requests (goals) one task makes."""
CHAIN = 0.5
"""The chance that the user adds one more request after each (``_chain``)."""

EVEN_FIRST = 2
"""Cast members tried for an aimed task before the users its rule's examples name."""


def rotation(task_index: int, retry: int, count: int) -> int:
    """Which of ``count`` rules task ``task_index`` aims at on its ``retry``-th try.

    ``(stride * task_index + retry) % count`` with a stride coprime with ``count`` (the first one
    from the golden-ratio point of ``count`` up): consecutive tasks spread over the rules, any
    ``count`` consecutive tasks aim at every rule once, and a task's retries walk through every
    rule too, whatever ``count`` is.
    """
    stride = max(1, round(count * 0.618))
    while math.gcd(stride, count) != 1:
        stride += 1
    return (stride * task_index + retry) % count


REPICK_AFTER = 6
"""Tries of a slot's own archetype before any archetype the episode carries is taken."""


class SpoilerLeak(RuntimeError):
    """The projected description names something the user cannot know."""


class Unbuilt(RuntimeError):
    """The episode carries none of the archetypes the slot may take."""


@dataclass
class UnitResult:
    """What one unit produced, and why candidates were dropped."""

    unit: int
    packages: int
    discarded: dict[str, int] = field(default_factory=dict)
    leaks: list[str] = field(default_factory=list)
    costs: CostLedger | None = None
    """What the unit spent on model calls (LLM mode)."""


@dataclass
class _Made:
    """The packages one unit has made so far, over the scenes it designed."""

    ds: DatasetDir
    result: UnitResult
    first: int
    """The task index of the unit's first package."""
    packages: list[TaskPackage] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    """Target digests already made (no two packages share one)."""
    refusals: int = 0
    refusal_at: int = 0
    """How many packages come before the unit's refusal may."""

    def add(self, pkg: TaskPackage) -> None:
        """Keep an accepted package."""
        self.refusals += int(pkg.refusal)
        self.seen.add(pkg.target)
        self.packages.append(pkg)


class UnitWorker:
    """Produces the packages of one unit. Built once per process."""

    generator = GENERATOR
    """What the packages name as their generator."""
    persona = False
    """Persona mode: the description is a persona task with information hiding."""

    def __init__(self, domain: str) -> None:
        self.spec = load_domain(domain)
        self.domain = CompiledDomain.from_spec(self.spec)
        self.model = DomainModel.from_spec(self.spec)
        self.designer = SymbolicSetDesigner(self.domain, self.model)
        self.projector = SymbolicProjector(self.model)
        self.policy = render_wiki(self.spec)
        self.spec_hash = self.spec.spec_hash()
        self.rules: list[Rule] = list(self.spec.rules)
        self.standing = standing_rules(self.spec)
        """The rules only a refused task meets (see ``_refusal_aim``)."""
        self.checker = Environment(self.domain)
        self.fused = fused_services(self.spec)
        self.uses: Counter[Any] = Counter()
        """Tasks per user in the unit being made (the cast is drawn least-used first)."""
        self.texts: set[str] = set()
        """The task texts (normalised) of the unit being made: none is made twice."""
        """The services of a fused spec (None for any other): episodes then span services."""
        self.cast = CastBuilder(self.domain, self.model)
        self.mix: dict[str, float] | None = None
        """The archetype mix a plan asks for (None: all four equally)."""
        self.want: list[Archetype] = []
        """The archetypes the slot being made may take, in order of preference."""
        self.built: Counter[str] = Counter()
        """Packages per archetype in the unit being made (a re-picked slot takes the rarest)."""

    def _aim(self, task_index: int, retry: int) -> Rule | None:
        """The rule task ``task_index`` aims at on its ``retry``-th try: see ``rotation``."""
        if not self.rules:
            return None
        return self.rules[rotation(task_index, retry, len(self.rules))]

    def _refusal_aim(self, unit: int, retry: int) -> Rule | None:
        """The rule a task that may be refused aims at first: in every other unit that may
        make a refusal, the rules about the user's own standing (``_standing``) in a rotation of
        their own, one per retry; None when the task aims as any other."""
        round_ = unit // REFUSAL_EVERY
        if not self.standing or round_ % 2 or retry >= len(self.standing):
            return None
        return self.standing[(round_ // 2 + retry) % len(self.standing)]

    def _slot(self, where: tuple[int, int, int], retry: int, refusal_ok: bool) -> Rule | None:
        """The rule the task at ``where`` (unit, seed, task index) aims at on its ``retry``-th
        try, with ``want`` set to the archetypes it may take."""
        unit, seed, index = where
        standing = self._refusal_aim(unit, retry) if refusal_ok else None
        self.want = self._wanted(slot_archetype(index, seed, self.mix), retry)
        if standing is not None and len(set(schedule(self.mix))) > 1:
            # a refusal on the user's own standing takes any archetype its package carries
            self.want += [a for a in ARCHETYPES if a not in self.want]
        return standing or self._aim(index, retry)

    def _episode(
        self,
        scene: Scene,
        env: Environment,
        view: StateView,
        rng: random.Random,
        aim: Rule | None,
        refusal_ok: bool,
    ) -> Episode | None:
        sampler = Sampler(self.model, view, rng, faker_for(rng.getrandbits(32)))
        explorer = self._explorer(env, view, sampler, rng)
        first = (self.model.transaction_for(aim) if aim else None) or rng.choice(
            self.model.write_transactions
        )
        actors = self._cast_order(scene, env, view, explorer, rng, aim)
        direct = self.model.direct_request(aim) if aim is not None else None
        # First look for an episode that collides with the aimed rule (coverage): through its
        # procedure, else by asking for the outcome it reserves; then any episode.
        for aimed, allow in ((True, refusal_ok), (False, False)):
            for actor in actors[: 7 if aimed else 4]:
                for tx in (first, direct) if aimed and direct is not None else (first,):
                    env.restore(scene.origin)
                    view.invalidate()
                    view.now = None  # a new task: its clock starts afresh
                    episode = self._explored(explorer, actor, tx, aim, allow)
                    if episode is not None and (
                        not aimed or aim is None or aim.id in episode.rejected
                    ):
                        return episode
        return None

    def _explored(
        self,
        explorer: SymbolicExplorer,
        actor: Any,
        tx: Transaction,
        aim: Rule | None,
        allow_refusal: bool,
    ) -> Episode | None:
        """One episode of ``actor``: the first request, then (see ``_chain``) the requests
        the user adds in the same visit. A fused spec's Explorer adds its own."""
        if self.fused is not None:
            return explorer.explore(
                actor, tx, aim, max_goals=MAX_GOALS, chain=CHAIN, allow_refusal=allow_refusal
            )
        episode = explorer.explore(
            actor, tx, aim, max_goals=1, chain=0.0, allow_refusal=allow_refusal
        )
        return None if episode is None else chained(explorer, episode, MAX_GOALS, CHAIN)

    def _explorer(
        self, env: Environment, view: StateView, sampler: Sampler, rng: random.Random
    ) -> SymbolicExplorer:
        """The symbolic Explorer, or on a fused spec the cross-service one."""
        if self.fused is None:
            return SymbolicExplorer(self.model, env, view, sampler, rng)
        explorer = CrossServiceExplorer(self.model, env, view, sampler, rng)
        explorer.fused = self.fused
        return explorer

    def _cast_order(
        self,
        scene: Scene,
        env: Environment,
        view: StateView,
        explorer: SymbolicExplorer,
        rng: random.Random,
        aim: Rule | None,
    ) -> list[Any]:
        """Who a task is tried for, in order. The cast is shuffled, so users are drawn evenly.
        A quota aim needs the owners of the records the Set Designer placed at its boundary:
        they come first (they differ from scene to scene). The users the aim's own examples act
        for are the same in every scene: they come only after ``EVEN_FIRST`` others, so they
        serve when the aim needs them and do not crowd out the rest of the cast."""
        actors = list(scene.cast)
        rng.shuffle(actors)
        # the users with fewest tasks in this unit first (a stable sort keeps the shuffle
        # among equals), so the cast stays near uniform over the dataset
        if self.uses:
            actors.sort(key=lambda a: self.uses[a])
        if self.want[:1] == ["entangled"]:
            tied = self.cast.entangled_owners(scene.origin)
            actors = fair_first(actors, self.uses, [a for a in actors if str(a) in tied])
        if aim is None:
            return actors
        env.restore(scene.origin)
        view.invalidate()
        named = [
            explorer.actor_of(c.tool, c.args)
            for ex in aim.examples
            for c in ex.calls
            if c.expect == aim.id
        ]
        named = [a for a in dict.fromkeys(named) if a is not None and a in actors]
        order = fair_first(actors, self.uses, named, after=EVEN_FIRST)
        if scene.edge.get(aim.id) and aim.threshold is not None:
            parent = aim.threshold.quantity.split(".")[0]
            owners = [
                view.owner(parent, r) for k in scene.edge[aim.id] if (r := view.get(parent, k))
            ]
            first = [a for a in dict.fromkeys(owners) if a is not None]
            order = first + [a for a in order if a not in first]
        return escalation_order(self.spec, env, order, aim, rng)

    def run(
        self, domain: str, seed: int, unit: int, count: int, first_index: int, out: Path
    ) -> UnitResult:
        """Design the unit's scene and produce ``count`` certified packages.

        A scene that runs out of attempts (its material spent: every lendable record lent,
        every user's limit reached) is followed by a fresh one, designed from a seed derived
        from the unit's and the try's number, up to ``RESCENES`` times: the unit still makes
        ``count`` packages whenever the domain can, and the same seed gives the same bytes."""
        ds = DatasetDir(out)
        result = UnitResult(unit, 0)
        made = _Made(ds, result, first_index)
        base = derive_seed(domain, seed, "scene", unit)
        # the refusal of a unit that has one sits at a seeded position, not always first
        made.refusal_at = random.Random(derive_seed(base, "refusal")).randrange(max(count, 1))
        self.uses = Counter()
        self.built = Counter()
        self.cast.reset()
        self.texts = set()
        undesigned = False
        for again in range(RESCENES + 1):
            if len(made.packages) >= count:
                break
            scene_seed = base if again == 0 else derive_seed(base, "again", again)
            try:
                scene = self.designer.design(
                    unit, scene_seed, fill=unit % PRISTINE_EVERY != PRISTINE_EVERY - 1
                )
            except DesignError as exc:  # reported with the run's discards, never a traceback
                undesigned = True
                result.leaks.append(str(exc))
                continue
            self._fill(domain, seed, unit, scene, count, made)
        if undesigned and len(made.packages) < count:  # the tasks no scene could hold
            result.discarded["scene could not be designed"] = count - len(made.packages)
        ds.write_part(unit, made.packages)
        result.packages = len(made.packages)
        return result

    def _fill(
        self, domain: str, seed: int, unit: int, scene: Scene, count: int, made: _Made
    ) -> None:
        """Add packages explored from ``scene`` to ``made`` until it holds ``count`` or the
        scene's attempts (``ATTEMPTS_PER_TASK`` per package still wanted) run out."""
        env = Environment(self.domain, scene.origin)
        replayer = Environment(self.domain)  # see ``_admit``
        view = StateView(self.model, env)
        internal = text_keys(self.spec, scene.origin)
        origin_snap = Snapshot(scene.origin, self.domain.layout)
        digests = (sha256(scene.origin), made.ds.put_policy(self.policy))
        budget = ATTEMPTS_PER_TASK * (count - len(made.packages))
        before = len(made.packages)
        attempt = retry = 0
        while len(made.packages) < count and attempt < budget:
            index = made.first + len(made.packages)
            rng = random.Random(derive_seed(scene.seed, "task", attempt))
            refusal_ok = (
                made.refusals == 0
                and unit % REFUSAL_EVERY == 0
                and len(made.packages) >= made.refusal_at
            )
            aim = self._slot((unit, seed, index), retry, refusal_ok)
            attempt += 1
            retry += 1
            episode = self._episode(scene, env, view, rng, aim, refusal_ok)
            reason = self._admit(episode, env, origin_snap, made.seen, replayer)
            if reason is not None:
                made.result.discarded[reason] = made.result.discarded.get(reason, 0) + 1
                continue
            assert episode is not None
            where = (domain, seed, index)
            pkg = self._accepted(
                where, scene, episode, view, internal, digests, made.ds, made.result
            )
            if pkg is not None:
                made.add(pkg)
                self.uses[pkg.user_profile.user_id] += 1
                self.built[pkg.user_profile.archetype] += 1
                retry = 0
        if len(made.packages) > before:
            made.ds.put_state(scene.origin)
        env.close()
        replayer.close()

    def _accepted(
        self,
        where: tuple[str, int, int],
        scene: Scene,
        episode: Episode,
        view: StateView,
        internal: set[str],
        digests: tuple[str, str],
        ds: DatasetDir,
        result: UnitResult,
    ) -> TaskPackage | None:
        """The package of an admitted episode, or None (counted in ``result``) when its text
        leaks or it is not grounded."""
        domain, seed, index = where
        origin_digest, policy_digest = digests
        try:
            pkg = self._package(
                domain,
                seed,
                index,
                scene,
                episode,
                view,
                internal,
                origin_digest,
                policy_digest,
            )
        except SpoilerLeak as leak:
            result.discarded["spoiler leak"] = result.discarded.get("spoiler leak", 0) + 1
            result.leaks.append(str(leak))
            return None
        except Unbuilt:
            result.discarded["archetype not built"] = (
                result.discarded.get("archetype not built", 0) + 1
            )
            return None
        reason = self._ungrounded(pkg, scene.origin) or self._linted(pkg, scene.origin)
        text = normalised_text(pkg.task_description)
        if reason is None and text in self.texts:
            reason = "repeated text"
        if reason is not None:
            result.discarded[reason] = result.discarded.get(reason, 0) + 1
            return None
        self.texts.add(text)
        ds.put_state(episode.target)
        return pkg

    def _admit(
        self,
        episode: Episode | None,
        env: Environment,
        origin: Snapshot,
        seen: set[str],
        replayer: Environment,
    ) -> str | None:
        """Why an episode cannot become a package (None when it can).

        The witness is certified by replaying it in ``replayer``, and the target is stored as
        that replay leaves it. ``replayer`` belongs to the unit alone: SQLite may encode a
        written 0 or 1 in either of two ways depending on the connection's earlier statements,
        so the stored bytes must depend on this unit's work only (a resumed run, or units run
        concurrently, give the same bytes)."""
        if episode is None:
            return "no reachable goal"
        if self.fused is not None and len(self.fused.acted(episode.witness, self.model)) < 2:
            return "writes in fewer than two services"
        snap = origin if episode.refusal is not None else env.snapshot()
        if episode.refusal is None and env.distance(origin) == 0:
            return "target equals origin"
        cert = certify(episode.witness, replayer, origin.data, snap)
        if cert.kind == "replay":
            return "witness does not replay"
        if cert.kind is not None:
            return "replay does not reach target"
        # The target is stored as the witness's replay leaves it, not as the exploration did
        # (the same rows; probes and restores can leave other bytes in free space), so a check
        # that replays the witness mostly ends on the target's very bytes (design note 0033).
        episode.target = snap.data if episode.refusal is not None else replayer.image()
        if sha256(episode.target) in seen:
            return "duplicate target"
        return None

    def _ungrounded(self, pkg: TaskPackage, origin: bytes) -> str | None:
        """The discard reason of a package whose text does not determine its witness's writes
        (the second certificate), else None."""
        return "ungrounded" if grounding(pkg, self.checker, origin) else None

    def _linted(self, pkg: TaskPackage, origin: bytes) -> str | None:
        """The discard reason of a package a careful reader would not accept (the semantic
        lint, :func:`veritask.task.lint_package`), else None."""
        found = lint_package(self.spec, self.domain.tools, pkg, self.checker, origin)
        return f"lint: {found[0].kind}" if found else None

    def _package(
        self,
        domain: str,
        seed: int,
        index: int,
        scene: Scene,
        episode: Episode,
        view: StateView,
        internal: set[str],
        origin: str,
        policy: str,
    ) -> TaskPackage:
        view.invalidate()
        proj = self.projector.project(view, episode, self._edge(scene, episode), internal)
        pkg = self._packaged(domain, seed, index, episode, proj, internal, origin, policy)
        return self._cast_in(pkg, scene, internal)

    def _wanted(self, slot: Archetype, retry: int) -> list[Archetype]:
        """The archetypes the slot may take, in order: see ``veritask.synth._cast.wanted``."""
        return wanted(slot, retry, self.built, self.mix, REPICK_AFTER)

    def _cast_in(self, pkg: TaskPackage, scene: Scene, internal: set[str]) -> TaskPackage:
        """The package with its user's archetype built (Unbuilt when it carries none wanted)."""
        for archetype in self.want:
            if archetype == "mismatch" and self.persona:
                continue  # a persona text carries no belief list
            built = self.cast.build(archetype, pkg, scene.origin, scene.edge)
            if built is not None:
                return self._with(pkg, built, internal)
        raise Unbuilt(pkg.id)

    def _with(self, pkg: TaskPackage, built: Construction, internal: set[str]) -> TaskPackage:
        profile = pkg.user_profile.model_copy(update={"archetype": built.archetype})
        task, text = pkg.task, pkg.task_description
        if built.archetype == "mismatch":
            task = task.model_copy(update={"false_beliefs": [*task.false_beliefs, built.what]})
            text = task.render()
            spoilers = find_spoilers(text, self.spec, internal, profile.known_ids)
            if spoilers:
                raise SpoilerLeak(f"{spoilers} in {text!r}")
        update = {"user_profile": profile, "task": task, "task_description": text}
        return pkg.model_copy(update={**update, "construction": built})

    def _edge(self, scene: Scene, episode: Episode) -> bool:
        """Whether the episode met a quota placed at its boundary by the Set Designer."""
        edge = any(scene.edge.values())
        return edge and "quota" in {self.spec.rule(r).category for r in episode.rejected}

    def _packaged(
        self,
        domain: str,
        seed: int,
        index: int,
        episode: Episode,
        proj: Projection,
        internal: set[str],
        origin: str,
        policy: str,
    ) -> TaskPackage:
        """The package of a projected episode (after a last spoiler check); its target state is
        stored by the caller once the package is accepted."""
        text = proj.task.render()
        if self.persona:
            args = (internal, proj.profile.known_ids, episode.witness)
            text, problems = persona_text(proj, self.spec, args)
            if problems:
                raise SpoilerLeak(f"{problems} in {text!r}")
            proj.tags = sorted({*proj.tags, PERSONA_TAG})
        spoilers = find_spoilers(text, self.spec, internal, proj.profile.known_ids)
        spoilers += decided_spoilers(text, self.spec, episode.witness)
        if spoilers:
            raise SpoilerLeak(f"{spoilers} in {text!r}")
        target = sha256(episode.target)  # stored once the package is accepted
        return TaskPackage(
            id=f"{domain}-s{seed}-{index:06d}",
            domain=domain,
            spec_hash=self.spec_hash,
            policy=policy,
            task=proj.task,
            task_description=text,
            user_profile=proj.profile,
            origin=origin,
            target=target,
            witness=episode.witness,
            reward_basis=["state_exact"],
            difficulty=proj.difficulty,  # type: ignore[arg-type]
            tags=proj.tags,
            rules_exercised=sorted(set(episode.rejected)),
            boundary_hits=len(episode.rejected),
            refusal=episode.refusal is not None,
            seed=derive_seed(domain, seed, "task", index),
            generator=self.generator,
        )


SceneParams = tuple[int, int, int]
"""A scene unit's parameters: the unit index, its task count and its first task index."""


def scene_units(n: int) -> list[Unit[SceneParams]]:
    """The units of a run of ``n`` tasks: ``SCENE_SIZE`` task slots each (the last may have
    fewer), with ids ``unit-000000``, ``unit-000001``, ..."""
    units: list[Unit[SceneParams]] = []
    for unit in range((n + SCENE_SIZE - 1) // SCENE_SIZE):
        first = unit * SCENE_SIZE
        units.append(Unit(f"unit-{unit:06d}", (unit, min(SCENE_SIZE, n - first), first)))
    return units


@dataclass
class SceneStage:
    """The symbolic generate stage: one scene per unit, its part file the unit's artifact.

    The stage travels to pool workers as its settings only; ``setup`` builds the
    ``UnitWorker`` (compiled domain, designer, projector) once in each worker.
    """

    domain: str
    seed: int
    n: int
    out: Path
    name: str = "generate"
    _worker: UnitWorker | None = field(default=None, repr=False)
    persona: bool = False
    """Persona mode (``veritask generate --persona``)."""
    archetypes: dict[str, float] | None = None
    """The user archetype mix (``veritask generate --archetypes``; None: all equally)."""
    noise: int | None = None
    """The plan's noise volume per catalogue table (``veritask generate --noise``)."""

    def __getstate__(self) -> dict[str, object]:
        return {**self.__dict__, "_worker": None}

    def units(self) -> list[Unit[SceneParams]]:
        """See ``scene_units``."""
        return scene_units(self.n)

    def done(self, unit: Unit[SceneParams]) -> bool:
        """True when the unit's part file exists."""
        return DatasetDir(self.out).has_part(unit.params[0])

    def setup(self) -> None:
        """Build this worker's ``UnitWorker``."""
        self._worker = UnitWorker(self.domain)
        self._worker.persona = self.persona
        self._worker.mix = self.archetypes
        self._worker.designer.noise = self.noise

    def run(self, unit: Unit[SceneParams]) -> UnitResult:
        """Produce one unit's packages and write its part atomically."""
        if self._worker is None:
            self.setup()
        assert self._worker is not None
        index, count, first = unit.params
        name = self._worker.spec.name  # ids and seeds follow the spec's name, not its path
        try:
            with data_calls():  # an interrupted call fails the unit, never becomes a refusal
                return self._worker.run(name, self.seed, index, count, first, self.out)
        except DesignError as exc:  # reported with the run's discards, never a traceback
            DatasetDir(self.out).write_part(index, [])
            return UnitResult(index, 0, {"scene could not be designed": count}, [str(exc)])
