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
import random
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from veritask import __version__
from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment, Snapshot
from veritask.model import CostLedger, ModelProvider, get_provider
from veritask.policy import Rule, render_wiki
from veritask.synth._analysis import DomainModel, derive_seed
from veritask.synth._designer import Scene, SymbolicSetDesigner, faker_for
from veritask.synth._explorer import Episode, SymbolicExplorer
from veritask.synth._llm_explorer import ExplorerLimits
from veritask.synth._projector import Projection, SymbolicProjector
from veritask.synth._sampler import Sampler, StateView
from veritask.task import (
    DatasetDir,
    TaskPackage,
    WitnessCall,
    dataset_ledger,
    find_spoilers,
    sha256,
    text_keys,
)

if TYPE_CHECKING:
    from veritask.synth._llm_generate import LLMMode

GENERATOR = f"veritask-symbolic/{__version__}"
SCENE_SIZE = 10
ATTEMPTS_PER_TASK = 12
PRISTINE_EVERY = 4
"""Every fourth scene keeps the seed records as the spec's examples assume them."""
REFUSAL_EVERY = 3
"""At most one refusal task in every third unit (under 5% of a run)."""


class SpoilerLeak(RuntimeError):
    """The projected description names something the user cannot know."""


@dataclass
class UnitResult:
    """What one unit produced, and why candidates were dropped."""

    unit: int
    packages: int
    discarded: dict[str, int] = field(default_factory=dict)
    leaks: list[str] = field(default_factory=list)
    costs: CostLedger | None = None
    """What the unit spent on model calls (LLM mode)."""


def replay(env: Environment, origin: bytes, witness: list[WitnessCall]) -> bool:
    """Replay a witness from ``origin``; True when every call behaves as recorded."""
    env.restore(origin)
    for call in witness:
        result = env.call(call.tool, call.args)
        if result.ok != call.ok:
            return False
        if (
            not result.ok
            and result.error is not None
            and call.error is not None
            and result.error.violated_rule != call.error.get("violated_rule")
        ):
            return False
    return True


class UnitWorker:
    """Produces the packages of one unit. Built once per process."""

    generator = GENERATOR
    """What the packages name as their generator."""

    def __init__(self, domain: str) -> None:
        self.spec = load_domain(domain)
        self.domain = CompiledDomain.from_spec(self.spec)
        self.model = DomainModel.from_spec(self.spec)
        self.designer = SymbolicSetDesigner(self.domain, self.model)
        self.projector = SymbolicProjector(self.model)
        self.policy = render_wiki(self.spec)
        self.spec_hash = self.spec.spec_hash()
        self.rules: list[Rule] = list(self.spec.rules)
        self.checker = Environment(self.domain)

    def _aim(self, task_index: int, retry: int) -> Rule | None:
        """The rule task ``task_index`` aims at on its ``retry``-th try: a rotation over the
        spec's rules (7 is coprime with any rule count a spec is likely to have, and the
        rotation only depends on the task index and its own retries)."""
        if not self.rules:
            return None
        return self.rules[(task_index * 7 + retry * 3) % len(self.rules)]

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
        explorer = SymbolicExplorer(self.model, env, view, sampler, rng)
        first = (self.model.transaction_for(aim) if aim else None) or rng.choice(
            self.model.write_transactions
        )
        actors = list(scene.cast)
        rng.shuffle(actors)
        if aim is not None:
            # users the spec's own boundary examples act for come first
            env.restore(scene.origin)
            view.invalidate()
            named = [
                explorer.actor_of(c.tool, c.args)
                for ex in aim.examples
                for c in ex.calls
                if c.expect == aim.id
            ]
            named = [a for a in dict.fromkeys(named) if a is not None and a in actors]
            actors = named + [a for a in actors if a not in named]
        if aim is not None and scene.edge.get(aim.id):
            # a quota aim: start with the users who own the records placed at the boundary
            parent = aim.threshold.quantity.split(".")[0] if aim.threshold else ""
            env.restore(scene.origin)
            view.invalidate()
            owners = list(
                dict.fromkeys(
                    view.owner(parent, r) for k in scene.edge[aim.id] if (r := view.get(parent, k))
                )
            )
            actors = [a for a in owners if a is not None] + [a for a in actors if a not in owners]
        # First look for an episode that collides with the aimed rule (coverage), then any.
        for aimed, allow in ((True, refusal_ok), (False, False)):
            for actor in actors[: 7 if aimed else 4]:
                env.restore(scene.origin)
                view.invalidate()
                episode = explorer.explore(
                    actor, first, aim, max_goals=3, chain=0.5, allow_refusal=allow
                )
                if episode is not None and (not aimed or aim is None or aim.id in episode.rejected):
                    return episode
        return None

    def run(
        self, domain: str, seed: int, unit: int, count: int, first_index: int, out: Path
    ) -> UnitResult:
        """Design the unit's scene and produce ``count`` certified packages."""
        ds = DatasetDir(out)
        scene_seed = derive_seed(domain, seed, "scene", unit)
        scene = self.designer.design(
            unit, scene_seed, fill=unit % PRISTINE_EVERY != PRISTINE_EVERY - 1
        )
        env = Environment(self.domain, scene.origin)
        view = StateView(self.model, env)
        internal = text_keys(self.spec, scene.origin)
        origin_snap = Snapshot(scene.origin, self.domain.layout)
        origin_digest = sha256(scene.origin)
        policy_digest = ds.put_policy(self.policy)
        result = UnitResult(unit, 0)
        packages: list[TaskPackage] = []
        seen: set[str] = set()
        refusals = 0
        attempt = retry = 0
        while len(packages) < count and attempt < ATTEMPTS_PER_TASK * count:
            index = first_index + len(packages)
            rng = random.Random(derive_seed(scene_seed, "task", attempt))
            aim = self._aim(index, retry)
            attempt += 1
            retry += 1
            refusal_ok = refusals == 0 and unit % REFUSAL_EVERY == 0
            episode = self._episode(scene, env, view, rng, aim, refusal_ok)
            reason = self._admit(episode, env, origin_snap, seen)
            if reason is not None:
                result.discarded[reason] = result.discarded.get(reason, 0) + 1
                continue
            assert episode is not None
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
                    ds,
                )
            except SpoilerLeak as leak:
                result.discarded["spoiler leak"] = result.discarded.get("spoiler leak", 0) + 1
                result.leaks.append(str(leak))
                continue
            refusals += int(pkg.refusal)
            retry = 0
            seen.add(pkg.target)
            packages.append(pkg)
        if packages:
            ds.put_state(scene.origin)
        ds.write_part(unit, packages)
        env.close()
        result.packages = len(packages)
        return result

    def _admit(
        self, episode: Episode | None, env: Environment, origin: Snapshot, seen: set[str]
    ) -> str | None:
        """Why an episode cannot become a package (None when it can)."""
        if episode is None:
            return "no reachable goal"
        snap = origin if episode.refusal is not None else env.snapshot()
        if episode.refusal is None and env.distance(origin) == 0:
            return "target equals origin"
        episode.target = snap.data
        if sha256(snap.data) in seen:
            return "duplicate target"
        if not replay(self.checker, origin.data, episode.witness):
            return "witness does not replay"
        if self.checker.distance(snap) != 0:
            return "replay does not reach target"
        return None

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
        ds: DatasetDir,
    ) -> TaskPackage:
        view.invalidate()
        proj = self.projector.project(view, episode, self._edge(scene, episode), internal)
        return self._packaged(domain, seed, index, episode, proj, internal, origin, policy, ds)

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
        ds: DatasetDir,
    ) -> TaskPackage:
        """The package of a projected episode (after a last spoiler check)."""
        text = proj.task.render()
        spoilers = find_spoilers(text, self.spec, internal, proj.profile.known_ids)
        if spoilers:
            raise SpoilerLeak(f"{spoilers} in {text!r}")
        target = ds.put_state(episode.target)
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


_WORKER: UnitWorker | None = None


def _init_worker(domain: str) -> None:
    global _WORKER
    _WORKER = UnitWorker(domain)


def _run_unit(args: tuple[str, int, int, int, int, str]) -> UnitResult:
    domain, seed, unit, count, first, out = args
    assert _WORKER is not None
    return _WORKER.run(domain, seed, unit, count, first, Path(out))


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
    from veritask.synth._llm_generate import LLMMode

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
