"""The Architect on the pipeline: its four stages are units of a run with a run directory.

The stages (``plan``, ``wiki``, ``tables``, ``rules``) form a chain: each starts from the
artifacts accepted before it, so the units run one after the other. A unit's id is
``<domain>.<stage>``; when a stage is accepted its artifact, its round report and what it spent
are written atomically to ``<run dir>/<unit id>.json``. The run manifest
(``<run dir>/run-manifest.json``) holds the config: the seed (sha256 of its canonical JSON, so
only a change to what the seed says counts), the model spec, the rounds, the repairs, the plan
limits and the sampling settings. A rerun with the same config restores the accepted stages
(their artifacts, round reports and costs) and asks the model only for the stages after them; a
rerun with another config is refused, naming the fields that differ. A stage interrupted between
its rounds starts again from its first round (``--cache-dir`` answers those requests at no cost).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from veritask._util import atomic_write_text, canonical_json, read_json, sha256_text
from veritask.model import CostLedger, GenerateConfig, ModelProvider, ModuleCost
from veritask.pipeline import AsyncExecutor, RunManifest, Unit, pending, unit_ids
from veritask.synth._architect import (
    Accepted,
    AcceptedStage,
    Architect,
    ArchitectResult,
    StagePlay,
    restored_product,
)
from veritask.synth._architect_artifacts import (
    STAGES,
    ArchitectReport,
    ComplexityPlan,
    RulesArtifact,
    StageReport,
    TablesArtifact,
)
from veritask.synth._architect_checks import PlanLimits
from veritask.synth._architect_seed import Seed, load_seed

JOB = "architect"
RUN_MANIFEST = "run-manifest.json"
"""The run manifest's file name inside the run directory."""

_MODELS: dict[str, type[BaseModel]] = {
    "plan": ComplexityPlan,
    "tables": TablesArtifact,
    "rules": RulesArtifact,
}


def default_run_dir(out: str | Path) -> Path:
    """The run directory of a spec written to ``out``: ``OUT.run`` beside it."""
    path = Path(out)
    return path.with_name(path.name + ".run")


def unit_id(seed: Seed, stage: str) -> str:
    """The stable id of one stage of a seed's run: ``<domain>.<stage>``."""
    return f"{seed.domain_name}.{stage}"


def seed_hash(seed: Seed) -> str:
    """The sha256 of the seed's canonical JSON (comments and layout of its file do not count)."""
    return sha256_text(canonical_json(seed.model_dump(mode="json")))


def architect_config(architect: Architect, seed: Seed, model: str) -> dict[str, Any]:
    """What decides an Architect run's artifacts (transport settings such as caches, endpoints
    and recordings are left out)."""
    config = architect.config
    return {
        "seed": seed_hash(seed),
        "model": model,
        "rounds": architect.rounds,
        "max_repairs": architect.max_repairs,
        "limits": asdict(architect.limits),
        "config": None if config is None else asdict(config),
    }


def stage_json(unit: str, accepted: AcceptedStage) -> dict[str, Any]:
    """A unit's artifact file: the stage's artifact, its round report and its raw costs."""
    artifact = accepted.artifact
    return {
        "id": unit,
        "stage": accepted.stage,
        "artifact": artifact
        if isinstance(artifact, str)
        else artifact.model_dump(mode="json", exclude_defaults=True),
        "report": accepted.report.to_json(),
        "cost": {name: asdict(cost) for name, cost in sorted(accepted.ledger.modules.items())},
    }


def stage_from_json(data: dict[str, Any], seed: Seed, before: Accepted) -> AcceptedStage:
    """Read back :func:`stage_json` (the verifier's product is rebuilt from the artifact)."""
    stage = str(data["stage"])
    raw = data["artifact"]
    artifact: Any = str(raw) if stage == "wiki" else _MODELS[stage].model_validate(raw)
    ledger = CostLedger({name: ModuleCost(**cost) for name, cost in data["cost"].items()})
    return AcceptedStage(
        stage,
        artifact,
        restored_product(stage, seed, artifact, before),
        StageReport.from_json(data["report"]),
        ledger,
    )


@dataclass
class ArchitectStage:
    """The four stages as units; an accepted stage is written as ``<run_dir>/<unit id>.json``."""

    architect: Architect
    seed: Seed
    run_dir: Path
    report: ArchitectReport
    name: str = JOB
    accepted: Accepted = field(default_factory=dict)

    def units(self) -> list[Unit[str]]:
        """One unit per stage, in chain order."""
        return [Unit(unit_id(self.seed, stage), stage) for stage in STAGES]

    def path(self, unit: Unit[str]) -> Path:
        """The artifact file of a unit."""
        return self.run_dir / f"{unit.id}.json"

    def done(self, unit: Unit[str]) -> bool:
        """True when the stage and every stage before it are written (a stage starts from the
        artifacts of all the stages before it)."""
        for earlier in self.units():
            if not self.path(earlier).exists():
                return False
            if earlier.id == unit.id:
                return True
        return False

    def setup(self) -> None:
        """Nothing to build: the Architect holds the provider."""

    async def run(self, unit: Unit[str]) -> AcceptedStage:
        """Play one stage; write its artifact, round report and costs atomically."""
        accepted = await self.architect.run_stage(
            unit.params, self.seed, self.accepted, self.report
        )
        text = json.dumps(stage_json(unit.id, accepted), indent=2, ensure_ascii=False)
        atomic_write_text(self.path(unit), text + "\n")
        self.accepted[unit.params] = accepted
        return accepted

    def resume(self) -> None:
        """Restore the stages already written, in order: artifacts, round reports (into the run
        report) and costs (into the Architect's ledger)."""
        for unit in self.units():
            if not self.done(unit):
                return
            data = read_json(self.path(unit))
            restored = stage_from_json(data, self.seed, self.accepted)
            self.accepted[unit.params] = restored
            self.report.stages.append(restored.report)
            self.report.resumed.append(unit.params)
            self.architect.ledger.merge(restored.ledger)


def play_in(run_dir: str | Path, model: str) -> StagePlay:
    """Play the stages as a pipeline run in ``run_dir`` (see the module docstring).

    Args:
        run_dir: The run directory (created when missing).
        model: The model spec the run's config names (e.g. ``openai:MODEL``).

    The returned play raises ``RunConflict`` when ``run_dir`` holds a run of another config.
    """
    root = Path(run_dir)

    async def play(architect: Architect, seed: Seed, report: ArchitectReport) -> Accepted:
        stage = ArchitectStage(architect, seed, root, report)
        manifest = RunManifest(JOB, architect_config(architect, seed, model), unit_ids(stage))
        manifest.open(root / RUN_MANIFEST, where=str(root))
        stage.resume()
        await AsyncExecutor(1).map(stage, pending(stage))
        return stage.accepted

    return play


def run_architect(
    seed: Seed | str | Path,
    provider: ModelProvider,
    *,
    rounds: int = 3,
    max_repairs: int = 2,
    limits: PlanLimits | None = None,
    config: GenerateConfig | None = None,
    ledger: CostLedger | None = None,
    run_dir: str | Path | None = None,
    model: str | None = None,
) -> ArchitectResult:
    """Run the Architect synchronously on a seed (or a seed file path).

    Args:
        run_dir: Persist each accepted stage there and resume after the last one written (see
            the module docstring); in memory when None.
        model: The model spec a run directory's config names (default: the provider's name).

    Raises:
        SeedError: The seed file is invalid.
        ArchitectError: No verified spec within the round bounds; see its ``report``.
        RunConflict: ``run_dir`` holds a run of another config.
    """
    loaded = seed if isinstance(seed, Seed) else load_seed(seed)
    architect = Architect(
        provider,
        rounds=rounds,
        max_repairs=max_repairs,
        limits=limits,
        config=config,
        ledger=ledger,
    )
    play = None if run_dir is None else play_in(run_dir, model or provider.name)
    return asyncio.run(architect.design(loaded, play=play))
