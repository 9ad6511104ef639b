"""The AgentSkiller DAG on the pipeline floor: seed topics -> compiled, seeded services.

Seven stages, each an ``AsyncStage`` over units with stable ids, each unit one JSON artifact in
``OUT/stages/<stage>/<unit id>.json`` written atomically. When every unit of a stage is done,
its summary ``OUT/<stage>.json`` is assembled from the artifacts in unit order; the next
stage's units are a pure function of that summary, and its run manifest
(``OUT/stages/<stage>/run-manifest.json``) records the summary's hash with the run's config, so
a rerun with other seeds, settings, model or upstream answers is refused instead of mixed.

Model calls go through a request cache in ``OUT/cache`` (unless another is given): a unit cut
by a kill is played again from its first call, and those calls are answered from the cache,
so a rerun repeats no model call and writes the bytes of an uninterrupted run.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from veritask._util import atomic_write_text, read_json, read_yaml, sha256_text
from veritask.blueprint import _dag_stages as st
from veritask.blueprint._dag_paths import (
    TaskMaker,
    executed_paths,
    model_judged,
    paths_work,
    tasks_work,
    with_templates,
)
from veritask.blueprint._dag_schema import Entity
from veritask.model import CachedProvider, CostLedger, ModelProvider
from veritask.pipeline import AsyncExecutor, RunManifest, Unit, pending
from veritask.policy import DomainSpec, dump_spec, load_spec

TEMPLATE_AUTHORS = ("grammar", "model")
STAGES = (
    "domains",
    "entities",
    "graph",
    "outlines",
    "blueprints",
    "compile",
    "seed",
    "paths",
    "tasks",
)
"""The stages in run order."""

Json = dict[str, Any]


@dataclass(frozen=True)
class DagConfig:
    """Everything that decides a DAG run's outputs (besides the model's answers).

    Attributes:
        topics: The seed topics.
        domains_per_topic: Domains asked for per topic (Step 1).
        max_domains: Domains kept after deduplication.
        batch: Candidates per entity-graph question (Step 3).
        outlines_per_person: Blueprint outlines per person (Step 4).
        repairs: Repair rounds of each structured answer (feedback loop).
        rounds: Check-Fix-Verify rounds of each compilation.
        persons: Faker persons added to each service.
        resources: Faker rows added to each peripheral table.
        max_paths: Template paths enumerated per service (Steps 14-16).
        tasks_per_service: Certified tasks generated from each service.
        templates: Who writes and judges each kept path's semantic template (Step 14):
            ``grammar`` (the seeded grammar and the rubric judge, offline) or ``model``.
    """

    topics: tuple[str, ...]
    domains_per_topic: int = 4
    max_domains: int = 12
    batch: int = 10
    outlines_per_person: int = 1
    repairs: int = 2
    rounds: int = 3
    persons: int = 12
    resources: int = 8
    max_paths: int = 200
    tasks_per_service: int = 34
    templates: str = "grammar"

    def __post_init__(self) -> None:
        if self.templates not in TEMPLATE_AUTHORS:
            raise ValueError(f"templates must be one of {', '.join(TEMPLATE_AUTHORS)}")

    def to_json(self) -> Json:
        """The config as JSON (topics as a list)."""
        data = asdict(self)
        data["topics"] = list(self.topics)
        return data


def load_seeds(path: str | Path) -> DagConfig:
    """A seeds file: ``topics: [...]`` and optionally any other ``DagConfig`` field.

    Raises:
        ValueError: No topics, or an unknown field.
    """
    data = read_yaml(Path(path)) or {}
    if not isinstance(data, dict) or not data.get("topics"):
        raise ValueError(f"{path}: a seeds file needs a non-empty 'topics' list")
    unknown = sorted(set(data) - set(DagConfig.__dataclass_fields__))
    if unknown:
        raise ValueError(f"{path}: unknown field(s) {', '.join(unknown)}")
    return DagConfig(**{**data, "topics": tuple(str(t) for t in data["topics"])})


def _dump(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@dataclass
class _UnitStage:
    """One DAG stage as a pipeline ``AsyncStage``: a unit's artifact is its JSON file."""

    name: str
    folder: Path
    todo: list[Unit[Json]]
    work: Callable[[Unit[Json]], Any]
    results: dict[str, Json] = field(default_factory=dict)

    def units(self) -> list[Unit[Json]]:
        """Every unit, in order."""
        return self.todo

    def done(self, unit: Unit[Json]) -> bool:
        """The unit's artifact exists."""
        return (self.folder / f"{unit.id}.json").exists()

    def setup(self) -> None:
        """Create the stage folder."""
        self.folder.mkdir(parents=True, exist_ok=True)

    async def run(self, unit: Unit[Json]) -> Json:
        """Do the unit's work, then write its artifact atomically."""
        result: Json = await self.work(unit)
        atomic_write_text(self.folder / f"{unit.id}.json", _dump({"unit": unit.id, **result}))
        return result


class StageNotReady(RuntimeError):
    """A stage was asked to start before the stages it needs are complete."""


class BlueprintDag:
    """A DAG run in one output directory.

    Args:
        out: The run directory.
        config: The run's settings.
        provider: The model (wrapped in a request cache at ``cache`` or ``OUT/cache``).
        model: The model spec the run names (part of the run's config).
        concurrency: Units of one stage in flight at once (not part of the config).
        cache: Another cache folder.
        progress: Called with a line after each unit.
        make_tasks: What the ``tasks`` stage generates tasks with (see ``_dag_paths``).
    """

    def __init__(
        self,
        out: str | Path,
        config: DagConfig,
        provider: ModelProvider,
        model: str,
        *,
        concurrency: int = 4,
        cache: str | Path | None = None,
        progress: Callable[[str], None] | None = None,
        make_tasks: TaskMaker | None = None,
    ) -> None:
        self.out = Path(out)
        self.config = config
        self.model = model
        self.concurrency = concurrency
        self.asker = st.Asker(CachedProvider(provider, cache or self.out / "cache"), config.repairs)
        self.ledger = CostLedger()
        self.progress = progress
        self.make_tasks = make_tasks

    # -- files ----------------------------------------------------------------------------

    def summary_path(self, stage: str) -> Path:
        """Where a complete stage's summary lives."""
        return self.out / f"{stage}.json"

    def summary(self, stage: str) -> Json:
        """A complete stage's summary."""
        data: Json = read_json(self.summary_path(stage))
        return data

    def _entities(self) -> dict[str, Entity]:
        return st.entities_of(self.summary("entities"))

    def _charged(self, work: Callable[[Unit[Json], CostLedger], Any]) -> Callable[..., Any]:
        """Run ``work`` with a fresh ledger; count its model requests in the result."""

        async def run(unit: Unit[Json]) -> Json:
            ledger = CostLedger()
            result: Json = await work(unit, ledger)
            self.ledger.merge(ledger)
            total = ledger.total()
            return {**result, "model_requests": total.calls + total.cached_calls}

        return run

    # -- stages ---------------------------------------------------------------------------

    def _plan(self, stage: str) -> tuple[list[Unit[Json]], Callable[..., Any]]:
        """The units of ``stage`` and the work of one unit (from the upstream summary)."""
        cfg, asker = self.config, self.asker
        if stage == "domains":
            return st.domain_units(cfg.topics), lambda u, led: st.domain_work(
                u, asker, cfg.domains_per_topic, led
            )
        if stage == "entities":
            domains = list(self.summary("domains")["domains"])
            return [Unit("entities", {"domains": domains})], lambda u, led: st.entity_work(
                u.params["domains"], asker, led
            )
        entities = self._entities()
        if stage == "graph":
            return st.graph_units(entities, cfg.batch), lambda u, led: st.graph_work(
                u, entities, asker, led
            )
        if stage == "outlines":
            near = st.neighbours(self.summary("graph"))
            units = [Unit(p, {"neighbours": n}) for p, n in near.items()]
            return units, lambda u, led: st.outline_work(
                u, entities, asker, cfg.outlines_per_person, led
            )
        if stage == "blueprints":
            return self._blueprint_units(), lambda u, led: st.blueprint_work(
                u, entities, asker, led
            )
        if stage == "compile":
            return self._compile_units(), lambda u, led: st.compile_work(
                u, entities, asker, cfg.rounds, led
            )
        if stage == "seed":
            return self._seed_units(), lambda u, _led: self._seed(u, entities)
        return self._service_units(), lambda u, led: self._after_seed(stage, u, led)

    def _service_units(self) -> list[Unit[Json]]:
        return [
            Unit(r["unit"], {"spec_path": r["spec_path"]})
            for r in self.summary("seed")["units"]
            if r["status"] == "seeded"
        ]

    async def _after_seed(self, stage: str, unit: Unit[Json], ledger: CostLedger) -> Json:
        spec_path = self.out / unit.params["spec_path"]
        if stage == "paths" and self.config.templates == "model":
            result, skeletons = executed_paths(spec_path, self.config.max_paths, seed=0)
            judged = await model_judged(self.asker, load_spec(spec_path), skeletons, ledger)
            return with_templates(result, judged)
        if stage == "paths":
            return paths_work(spec_path, self.config.max_paths, seed=0)
        out = self.out / "datasets" / unit.id
        kept = self._kept_paths(unit.id)
        result = tasks_work(self.make_tasks, spec_path, kept, self.config.tasks_per_service, out)
        return {**result, "dataset": f"datasets/{unit.id}"} if out.exists() else result

    def _kept_paths(self, service: str) -> list[Json]:
        """The kept paths of one service (the ``paths`` stage's result for it)."""
        for result in self.summary("paths")["units"]:
            if result["unit"] == service:
                return list(result.get("kept_paths", []))
        return []

    def _blueprint_units(self) -> list[Unit[Json]]:
        return [
            Unit(f"{r['person']}.{o['name']}", {"person": r["person"], "outline": o})
            for r in self.summary("outlines")["units"]
            for o in r["outlines"]
        ]

    def _compile_units(self) -> list[Unit[Json]]:
        """Accepted blueprints, named for their service (a repeated name gets ``_2``, ...)."""
        units: list[Unit[Json]] = []
        for result in self.summary("blueprints")["units"]:
            if result["status"] != "accepted":
                continue
            base, n = result["blueprint"]["name"], 1
            name = base
            while name in {u.id for u in units}:
                n += 1
                name = f"{base}_{n}"
            units.append(Unit(name, {"blueprint": result["blueprint"], "source": result["unit"]}))
        return units

    def _seed_units(self) -> list[Unit[Json]]:
        return [
            Unit(r["unit"], {"blueprint": r["blueprint"], "spec": r["spec"]})
            for r in self.summary("compile")["units"]
            if r["status"] == "compiled"
        ]

    async def _seed(self, unit: Unit[Json], entities: dict[str, Entity]) -> Json:
        result, spec = st.seed_work(
            unit.params, entities, self.config.persons, self.config.resources
        )
        if spec is not None:
            self._write_service(unit.id, spec, result["summary"])
            result["spec_path"] = f"services/{unit.id}/spec.yaml"
        return result

    def _write_service(self, name: str, spec: DomainSpec, summary: Json) -> None:
        folder = self.out / "services" / name
        folder.mkdir(parents=True, exist_ok=True)
        header = f"Compiled from blueprint {name} by veritask blueprint run."
        atomic_write_text(folder / "spec.yaml", dump_spec(spec, header))
        atomic_write_text(folder / "summary.json", _dump(summary))

    def _summarize(self, stage: str, results: list[Json]) -> Json:
        base: Json = {"stage": stage, "units": results}
        if stage == "domains":
            return {**base, **st.domain_summary(results, self.config.max_domains)}
        if stage == "entities":
            return {**base, "entities": results[0]["entities"], "dropped": results[0]["dropped"]}
        if stage == "graph":
            return {**base, **st.graph_summary(self._entities(), results)}
        return base

    def _input_hash(self, stage: str) -> str:
        index = STAGES.index(stage)
        if index == 0:
            return ""
        return sha256_text(self.summary_path(STAGES[index - 1]).read_text(encoding="utf-8"))

    def manifest(self, stage: str, units: list[Unit[Json]]) -> RunManifest:
        """The stage's run manifest: the config, the model, the upstream summary's hash."""
        config = {**self.config.to_json(), "model": self.model, "input": self._input_hash(stage)}
        return RunManifest(f"blueprint-{stage}", config, [u.id for u in units])

    async def run_stage(self, stage: str) -> Json:
        """Run the stage's pending units, then assemble and write its summary."""
        units, work = self._plan(stage)
        folder = self.out / "stages" / stage
        folder.mkdir(parents=True, exist_ok=True)
        self.manifest(stage, units).open(folder / "run-manifest.json", where=str(self.out))
        job = _UnitStage(stage, folder, units, self._charged(work))
        todo = pending(job)
        done = len(units) - len(todo)

        def tick(_: Json) -> None:
            nonlocal done
            done += 1
            if self.progress is not None:
                self.progress(f"{stage}: {done}/{len(units)}")

        await AsyncExecutor(self.concurrency).map(job, todo, on_result=tick)
        results = [read_json(folder / f"{u.id}.json") for u in units]
        summary = self._summarize(stage, results)
        atomic_write_text(self.summary_path(stage), _dump(summary))
        return summary

    def drop_torn_writes(self) -> None:
        """Remove the temporary files of atomic writes a kill cut before their rename."""
        if self.out.exists():
            for path in self.out.rglob(".*.tmp"):
                path.unlink()

    def _check_ready(self, start: str) -> None:
        for stage in STAGES[: STAGES.index(start)]:
            if not self.summary_path(stage).exists():
                raise StageNotReady(
                    f"stage {stage} is not complete; run it first (--until {stage})"
                )

    async def run_async(self, start: str | None = None, until: str | None = None) -> list[str]:
        """Run the stages from ``start`` (every earlier one must be complete) to ``until``.

        Returns:
            The stages run.
        """
        first = STAGES.index(start) if start else 0
        last = STAGES.index(until) if until else len(STAGES) - 1
        self._check_ready(STAGES[first])
        self.drop_torn_writes()
        ran = list(STAGES[first : last + 1])
        for stage in ran:
            await self.run_stage(stage)
        return ran

    def run(self, start: str | None = None, until: str | None = None) -> list[str]:
        """``run_async`` in a new event loop."""
        return asyncio.run(self.run_async(start, until))
