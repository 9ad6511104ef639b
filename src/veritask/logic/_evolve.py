"""The evolution loop (SSLogic 3.2-3.4) on the pipeline: each round is a unit of a run.

One run of :func:`evolve_async` plays rounds (see ``_evolve_round``: propose or refine, the
independent validators, the gates) until a family passes or ``t_max`` rounds were played. An
accepted family is written as ``<out>/<id>.py`` with ``<id>.gates.json`` (its gate record) and
``<id>.evolution.json`` (rounds and costs), so it loads through the registry like a built-in.
Every round's outcome updates the playbook (see :class:`~veritask.logic.Playbook`).

**Rounds are units.** Round ``k`` of evolving seed family ``S`` has the stable id
``S.round<k>`` (:func:`~veritask.logic._records.round_id`). Rounds run in sequence, since each
starts from the state the one before it left: the conversation with the agent and the playbook.
The run directory (``EvolveSettings.run_dir_for``, default ``<out>/runs/<S>``) holds:

- ``run-manifest.json``: the run's config (the seed family and its version, the model, the
  playbook bound, the seed, the validators, the gate settings, the sampling settings; not
  ``t_max``, so a rerun with more rounds continues a rejected run). A rerun with another config
  is refused, naming the fields that differ.
- ``S.round<k>.json``: the committed round, written atomically before anything else of the
  round: its record, the accepted file's source, the conversation and the playbook after the
  round, and what the round spent.
- ``result.json``: the run's result, written last.

Committing a round writes its unit file, then the accepted family's files, the playbook and the
plain record copy (``<rounds_dir>/S.round<k>.json`` when ``rounds_dir`` is set). A killed run,
rerun with the same settings, restores the committed rounds (records, costs, conversation,
playbook), writes again whatever the last one had not yet written, and plays only the rounds
after it. The files hold no timings, so the same seed and the same answers give the same bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from veritask._util import atomic_write_text
from veritask.logic._evolve_round import Played, Run, play_round
from veritask.logic._family import Family
from veritask.logic._playbook import Playbook
from veritask.logic._records import (
    EvolutionResult,
    RoundRecord,
    round_id,
    write_accepted,
    write_json,
    write_round,
)
from veritask.logic._registry import all_families, get_family
from veritask.logic._sandbox import allow_unsafe_no_sandbox, require_sandbox
from veritask.logic._settings import EvolveSettings
from veritask.model import CostLedger, ModelProvider, ModuleCost
from veritask.pipeline import AsyncExecutor, RunManifest, Unit, pending, unit_ids

JOB = "logic-evolve"
RUN_MANIFEST = "run-manifest.json"
RESULT = "result.json"


def evolve_config(seed: Family, settings: EvolveSettings, model: str) -> dict[str, Any]:
    """What decides a run's rounds (paths and ``t_max`` are left out: the rounds are the units)."""
    gates = settings.gate_settings()
    config = settings.config
    return {
        "seed_family": f"{seed.id}@{seed.version}",
        "model": model,
        "playbook_limit": settings.playbook_limit,
        "seed": settings.seed,
        "extra_validators": settings.extra_validators,
        "gates": {
            **{k: v for k, v in gates.recorded().items() if k != "seed"},  # the run's seed
            "budget_us": gates.budget_us,
            "short_circuit": gates.short_circuit,
        },
        "config": None if config is None else asdict(config),
    }


def _cost_json(ledger: CostLedger) -> dict[str, Any]:
    """A ledger with its exact values (``CostLedger.to_json`` rounds the cost)."""
    return {name: asdict(cost) for name, cost in sorted(ledger.modules.items())}


@dataclass
class RoundStage:
    """The rounds of one run as units; a committed round is ``<run_dir>/<round id>.json``."""

    state: Run
    result: EvolutionResult
    run_dir: Path
    name: str = JOB
    committed: int = 0
    _source: str | None = field(default=None, repr=False)

    def units(self) -> list[Unit[int]]:
        """Rounds 1 to ``t_max``, in order."""
        seed = self.state.seed.id
        return [Unit(round_id(seed, k), k) for k in range(1, self.state.settings.t_max + 1)]

    def path(self, round_no: int) -> Path:
        """The unit file of a round."""
        return self.run_dir / f"{round_id(self.state.seed.id, round_no)}.json"

    def done(self, unit: Unit[int]) -> bool:
        """True for a committed round, and for every round once one was accepted."""
        return unit.params <= self.committed or self.result.accepted

    def setup(self) -> None:
        """Nothing to build: the run holds the provider and the state."""

    async def run(self, unit: Unit[int]) -> RoundRecord | None:
        """Play one round and commit it (nothing to do after an accepted round)."""
        if self.result.accepted:
            return None
        try:
            played = await play_round(self.state, unit.params)
        except BaseException:
            self.state.ledger.merge(self.state.spent)
            raise
        self._commit(played)
        return played.record

    def _commit(self, played: Played) -> None:
        """Write the round's unit file, then its outputs."""
        run, record = self.state, played.record
        source = None if played.accepted is None else played.accepted.source
        state = {
            **record.unit_json(run.seed.id),
            "source": source,
            "conversation": run.conversation,
            "playbook": run.playbook.to_json(),
            "cost": _cost_json(played.cost),
        }
        text = json.dumps(state, indent=2, ensure_ascii=False) + "\n"
        atomic_write_text(self.path(record.round), text)
        run.ledger.merge(played.cost)
        self._restore(record, source)
        self._write_outputs(record)

    def _restore(self, record: RoundRecord, source: str | None) -> None:
        """Add a committed round to the result."""
        self.committed = record.round
        self._source = source
        self.result.rounds.append(record)
        if record.outcome == "accepted" and record.family is not None:
            out = self.state.settings.out
            self.result.accepted, self.result.family = True, record.family
            self.result.path = str(out / f"{record.family}.py")
            self.result.gates_path = str(out / f"{record.family}.gates.json")

    def _write_outputs(self, record: RoundRecord) -> None:
        """The outputs of the last committed round: the accepted family's files, the playbook
        and the plain record copy (each atomically)."""
        settings, seed = self.state.settings, self.state.seed.id
        if self._source is not None and record.family is not None:
            write_accepted(settings.out, record.family, self._source, record.gates or {})
        self.state.playbook.save(settings.playbook_file)
        if settings.rounds_dir is not None:
            write_round(settings.rounds_dir, seed, record)

    def resume(self) -> None:
        """Restore the committed rounds in order (records, costs, conversation, playbook) and
        write again the outputs of the last one when the run had not finished."""
        for unit in self.units():
            if self.result.accepted or not self.path(unit.params).exists():
                break
            data = json.loads(self.path(unit.params).read_text(encoding="utf-8"))
            self.state.conversation = list(data["conversation"])
            self.state.playbook = Playbook.from_json(data["playbook"])
            costs = {name: ModuleCost(**cost) for name, cost in data["cost"].items()}
            self.state.ledger.merge(CostLedger(costs))
            self._restore(RoundRecord.from_json(data), data["source"])
        if self.result.rounds and not (self.run_dir / RESULT).exists():
            self._write_outputs(self.result.rounds[-1])


async def evolve_async(
    seed_family: str | Family,
    provider: ModelProvider,
    settings: EvolveSettings,
    *,
    ledger: CostLedger | None = None,
    model: str | None = None,
    unsafe_no_sandbox: bool = False,
) -> EvolutionResult:
    """Evolve ``seed_family`` into a new family (see the module docstring).

    Args:
        seed_family: A family or its id (built-in, or a file family in ``settings.families_dirs``
            or ``settings.out_dir``).
        provider: The model that writes, reviews and solves.
        settings: How the run goes (output directory, rounds, playbook, seed, gates, ...).
        ledger: Charged with every model call, per module (restored rounds included).
        model: The model spec the run's config names (default: the provider's name).
        unsafe_no_sandbox: Where the kernel lacks the OS sandbox, run the written family code
            anyway (see :func:`~veritask.logic.allow_unsafe_no_sandbox`); no effect where the
            sandbox is available.

    Raises:
        SandboxUnavailable: The OS sandbox is unavailable and ``unsafe_no_sandbox`` is False
            (checked before any model call).
        RunConflict: The run directory holds a run of another config.
    """
    allowed = allow_unsafe_no_sandbox() if unsafe_no_sandbox else contextlib.nullcontext()
    with allowed:
        require_sandbox(unsafe_no_sandbox)
        run = _start(seed_family, provider, settings, ledger)
        stage = RoundStage(run, EvolutionResult(run.seed.id), settings.run_dir_for(run.seed.id))
        config = evolve_config(run.seed, settings, model or provider.name)
        manifest = RunManifest(JOB, config, unit_ids(stage))
        manifest.open(stage.run_dir / RUN_MANIFEST, where=str(stage.run_dir), grow=True)
        stage.resume()
        await AsyncExecutor(1).map(stage, pending(stage))
        return _finish(run, stage)


def evolve(
    seed_family: str | Family,
    provider: ModelProvider,
    settings: EvolveSettings,
    *,
    ledger: CostLedger | None = None,
    model: str | None = None,
    unsafe_no_sandbox: bool = False,
) -> EvolutionResult:
    """Synchronous :func:`evolve_async` (not from inside a running event loop)."""
    return asyncio.run(
        evolve_async(
            seed_family,
            provider,
            settings,
            ledger=ledger,
            model=model,
            unsafe_no_sandbox=unsafe_no_sandbox,
        )
    )


def _start(
    seed_family: str | Family,
    provider: ModelProvider,
    settings: EvolveSettings,
    ledger: CostLedger | None,
) -> Run:
    """The run's state before round 1: the seed, the loaded playbook, the taken ids."""
    dirs = settings.search_dirs
    seed = get_family(seed_family, dirs) if isinstance(seed_family, str) else seed_family
    run = Run(
        seed=seed,
        provider=provider,
        settings=settings,
        playbook=Playbook.load(settings.playbook_file, settings.playbook_limit),
        taken=frozenset(all_families(dirs)),
        ledger=ledger if ledger is not None else CostLedger(),
    )
    run.open()
    return run


def _finish(run: Run, stage: RoundStage) -> EvolutionResult:
    """Costs and playbook summary; the run record of an accepted family; the run's result."""
    result = stage.result
    result.costs = run.ledger.to_json()
    result.playbook = {
        "path": str(run.settings.playbook_file),
        "entries": len(run.playbook.entries),
    }
    if result.accepted and result.family is not None:
        write_json(run.settings.out / f"{result.family}.evolution.json", result.to_json())
    write_json(stage.run_dir / RESULT, result.to_json())
    return result
