"""``veritask generate``: the certified-synthesis pipeline over work units (scenes).

A run of N tasks is split into units of ``SCENE_SIZE`` tasks that share one origin state: the
units of a pipeline stage (``SceneStage``). Each unit is a pure function of (domain, seed, unit
index): it designs the origin, explores tasks from it, projects their descriptions, certifies
each witness by replaying it on a fresh environment, and writes its packages atomically. Units
run in any order on any executor; the run manifest (``run-manifest.json``) refuses a rerun with
another config, a rerun with the same config skips the units already written, and the manifest
is assembled from the units in index order, so an interrupted run finishes with the same bytes
as an uninterrupted one.

With ``explorer="llm"`` (or ``projector="llm"``) the same units run with model-played roles
(``_llm_generate``); symbolic runs are untouched by that mode.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from veritask.domains import builtin_domains, load_domain, spec_path
from veritask.model import CostLedger, ModelProvider, get_provider
from veritask.pipeline import AsyncExecutor, RunManifest, Unit, executor_for, pending, unit_ids
from veritask.policy import SpecError, SpecIssue, copy_seed_files, load_spec_with_lines
from veritask.synth._cast import check_mix
from veritask.synth._generable import generation_problems
from veritask.synth._llm_explorer import ExplorerLimits
from veritask.synth._llm_generate import LLMMode, LLMSceneStage
from veritask.synth._procedural_gen import GENERATOR as PROCEDURAL
from veritask.synth._procedural_gen import ProceduralStage, procedural_generable
from veritask.synth._unit import (
    GENERATOR,
    SCENE_SIZE,
    SceneParams,
    SceneStage,
    UnitResult,
)
from veritask.task import (
    SPEC_FILE,
    DatasetDir,
    dataset_ledger,
)


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
    asked: int = 0
    """The packages the run was asked for (``n``)."""

    def shortfall(self) -> str | None:
        """Why the run made fewer packages than asked (None when it made them all): its units
        ran out of attempts on every scene they may design (``RESCENES``), with the discards."""
        if self.tasks >= self.asked:
            return None
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(self.discarded.items()))
        return (
            f"{self.tasks} of {self.asked} packages: some units ran out of attempts on "
            f"every scene they may design (discarded: {reasons or 'none'})"
        )


Mode = Literal["symbolic", "llm"]


def _llm_mode(
    explorer: Mode,
    projector: Mode | None,
    model: ModelProvider | str | None,
    limits: ExplorerLimits | None,
    persona: bool = False,
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
    provider = get_provider(model) if isinstance(model, str) else model
    return LLMMode(explorer, chosen, provider, limits or ExplorerLimits(), persona=persona)


def _refuse_ungenerable(domain: str) -> None:
    """Raise SpecError naming each field that keeps ``domain`` from generating any task."""
    problems = generation_problems(load_domain(domain))
    if problems:
        path = spec_path(domain)
        lines = load_spec_with_lines(path)[1]
        raise SpecError(
            [SpecIssue(str(path), lines.line(loc), _field(loc), why) for loc, why in problems]
        )


def _field(loc: tuple[str | int, ...]) -> str:
    return "".join(
        f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(loc)
    )


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
    persona: bool = False,
    archetypes: Mapping[str, float] | None = None,
    noise: int | None = None,
) -> GenerateSummary:
    """Generate ``n`` certified task packages into ``out`` (resumable; deterministic in ``seed``).

    Args:
        domain: Built-in domain name or spec path. Package ids and ``domain`` fields use the
            spec's ``name`` either way; a spec file is copied into ``out`` (``spec.yaml``).
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
        persona: Write each description as a persona task with information hiding
            (``_persona``); with ``projector="llm"`` the model writes it.
        archetypes: Symbolic mode: the user archetype mix (archetype -> weight; one name
            for one archetype), as a synthesis plan's ``archetypes``; None: all four equally.
        noise: The plan's volume of near-identical records per catalogue table in every
            origin (symbolic scenes; None: each table's ``noise`` in the spec).

    Raises:
        ValueError: ``out`` holds a different run, or the mode and model do not fit.
        SpecError: The spec cannot generate any task (``generation_problems``).
    """
    mode = _llm_mode(explorer, projector, model, limits, persona)
    _refuse_ungenerable(domain)
    stage = _stage(domain, n, seed, out, mode, persona, noise)
    if archetypes is not None:
        if not isinstance(stage, SceneStage):
            raise ValueError("an archetype mix needs the symbolic scene generator")
        stage.archetypes = check_mix(archetypes)
    ds, todo = _prepare(stage, mode, progress)
    if isinstance(stage, SceneStage | ProceduralStage):
        results: Iterable[UnitResult] = executor_for(workers).map(stage, todo)
    else:
        run = AsyncExecutor(workers).map(stage, todo, on_result=_on_result(progress))
        results = asyncio.run(run)
    return _finish(ds, stage, todo, results, mode, progress)


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
    persona: bool = False,
) -> GenerateSummary:
    """:func:`generate` for callers inside a running event loop (a notebook, an async trainer).

    LLM mode awaits the model calls on the caller's loop; symbolic mode runs in a thread.
    Arguments, outputs and resume behave exactly as in :func:`generate`.
    """
    mode = _llm_mode(explorer, projector, model, limits, persona)
    if mode is None:
        return await asyncio.to_thread(
            generate, domain, n, seed, out, workers, progress, explorer=explorer,
            projector=projector, persona=persona,
        )  # fmt: skip
    stage = LLMSceneStage(domain, seed, n, Path(out), mode)
    ds, todo = _prepare(stage, mode, progress)
    results = await AsyncExecutor(workers).map(stage, todo, on_result=_on_result(progress))
    return _finish(ds, stage, todo, results, mode, progress)


MANIFEST = "run-manifest.json"
"""The run manifest in a dataset directory (``run.json`` keeps the same config for readers)."""

GenerateStage = SceneStage | LLMSceneStage | ProceduralStage


def _stage(
    domain: str,
    n: int,
    seed: int,
    out: str | Path,
    mode: LLMMode | None,
    persona: bool = False,
    noise: int | None = None,
) -> GenerateStage:
    if mode is None and procedural_generable(load_domain(domain)):
        return ProceduralStage(domain, seed, n, Path(out))
    if mode is None:
        return SceneStage(domain, seed, n, Path(out), persona=persona, noise=noise)
    return LLMSceneStage(domain, seed, n, Path(out), mode)


def _run_config(stage: GenerateStage, mode: LLMMode | None) -> dict[str, Any]:
    """What decides the dataset's bytes (the ``run.json`` keys).

    ``domain`` is the spec's ``name`` however the spec was given; a spec given as a file (not a
    built-in name) adds ``"spec": "spec.yaml"``, the copy of it the dataset keeps.
    """
    spec = load_domain(stage.domain)
    info: dict[str, Any] = {
        "domain": spec.name,
        "n": stage.n,
        "seed": stage.seed,
        "generator": PROCEDURAL if isinstance(stage, ProceduralStage) else GENERATOR,
        "spec_hash": spec.spec_hash(),
        "scene_size": SCENE_SIZE,
    }
    if stage.domain not in builtin_domains():
        info["spec"] = SPEC_FILE
    if mode is not None:
        info.update(mode.run_info())
    if isinstance(stage, SceneStage) and stage.persona:
        info["persona"] = True  # only when set: other runs keep their config bytes
    if isinstance(stage, SceneStage) and stage.archetypes is not None:
        info["archetypes"] = stage.archetypes
    if isinstance(stage, SceneStage) and stage.noise is not None:
        info["noise"] = stage.noise
    return info


def _prepare(
    stage: GenerateStage, mode: LLMMode | None, progress: Callable[[int], None] | None
) -> tuple[DatasetDir, list[Unit[SceneParams]]]:
    """Claim the directory for this run (refusing another config); the units still to do."""
    ds = DatasetDir(stage.out)
    manifest = RunManifest("generate", _run_config(stage, mode), unit_ids(stage))
    legacy = ds.read_run()
    if legacy is not None and not (ds.root / MANIFEST).exists():
        # a directory from before run manifests: its run.json is the config it was made with
        RunManifest("generate", legacy, manifest.units).write(ds.root / MANIFEST)
    manifest.open(ds.root / MANIFEST, where=str(stage.out))
    if "spec" in manifest.config:
        source = spec_path(stage.domain)
        text = source.read_text("utf-8")
        ds.put_spec(text)
        copy_seed_files(source, text, ds.root)
    ds.write_run(manifest.config)
    todo = pending(stage)
    if progress:
        left = {u.id for u in todo}
        progress(sum(u.params[1] for u in stage.units() if u.id not in left))
    return ds, todo


def _finish(
    ds: DatasetDir,
    stage: GenerateStage,
    todo: list[Unit[SceneParams]],
    results: Iterable[UnitResult],
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
    units = len(stage.units())
    tasks = ds.assemble(units, stage.n)
    costs = None if mode is None else dataset_ledger(ds.root) or CostLedger()
    summary = GenerateSummary(ds.root, tasks, units, units - len(todo), discarded, costs)
    summary.asked = stage.n
    return summary


def _on_result(progress: Callable[[int], None] | None) -> Callable[[UnitResult], None] | None:
    if progress is None:
        return None
    return lambda result: progress(result.packages)
