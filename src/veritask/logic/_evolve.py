"""The evolution loop (SSLogic 3.2-3.4) on the evolution engine: each round is a unit of a run.

The loop is an :class:`~veritask.pipeline.Evolution` (:class:`FamilyRounds`) with one stream,
the seed family, run by :class:`~veritask.pipeline.EvolutionStage`, the engine ``veritask
evolve``'s plan streams run on too. A round's phases are the engine's: synthesize (propose or
refine, and the validator pool), verify (the gates), reflect (the playbook's lessons and the
refine prompt); an accepted round ends the stream.

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

from veritask.logic._evolve_round import Proposed, Run, conclude, gate, propose
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
from veritask.logic._reports import FamilyGateRecord
from veritask.logic._sandbox import allow_unsafe_no_sandbox, require_sandbox
from veritask.logic._settings import EvolveSettings
from veritask.model import CostLedger, ModelProvider, ModuleCost
from veritask.pipeline import EvolutionStage, Step, run_evolution

JOB = "logic-evolve"
RUN_MANIFEST = "run-manifest.json"
RESULT = "result.json"


def evolve_config(seed: Family, settings: EvolveSettings, model: str) -> dict[str, Any]:
    """What decides a run's rounds (paths and ``t_max`` are left out: the rounds are the units;
    the curator and the reviewer's code calls only when not the defaults, so the runs made
    before they existed still resume)."""
    gates = settings.gate_settings()
    config = settings.config
    curator = {} if settings.curator == "rules" else {"curator": settings.curator}
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
        **curator,
    }


def _cost_json(ledger: CostLedger) -> dict[str, Any]:
    """A ledger with its exact values (``CostLedger.to_json`` rounds the cost)."""
    return {name: asdict(cost) for name, cost in sorted(ledger.modules.items())}


Gated = tuple[Proposed, FamilyGateRecord | None]


@dataclass
class FamilyRounds:
    """The rounds of one run as an :class:`~veritask.pipeline.Evolution` with one stream (the
    seed family); a committed round is ``<run_dir>/<round id>.json`` and an accepted round
    ends the stream."""

    state: Run
    result: EvolutionResult
    name: str = JOB
    opening: str | None = None
    _source: str | None = field(default=None, repr=False)

    def streams(self) -> list[str]:
        """The seed family's id."""
        return [self.state.seed.id]

    def iterations(self) -> int:
        """``t_max`` rounds at most."""
        return self.state.settings.t_max

    def unit_id(self, stream: str, k: int) -> str:
        """``<seed>.round<k+1>``."""
        return round_id(stream, k + 1)

    def dump(self, artifact: dict[str, Any]) -> str:
        """The unit file's text."""
        return json.dumps(artifact, indent=2, ensure_ascii=False) + "\n"

    async def open(self) -> dict[str, Any]:
        """There is no opening unit."""
        return {}

    def start(self, stream: str, opening: dict[str, Any] | None) -> Run:
        """The run, opened before round 1."""
        del stream, opening
        return self.state

    async def synthesize(self, stream: str, k: int, state: Run) -> Proposed:
        """Propose or refine a family file, with its validator pool."""
        del stream
        return await propose(state, k + 1)

    async def verify(self, stream: str, k: int, state: Run, candidates: Proposed) -> Gated:
        """The gates."""
        del stream
        return candidates, await gate(state, k + 1, candidates)

    async def reflect(self, stream: str, k: int, state: Run, verified: Gated) -> Step[Run]:
        """The record, the playbook's lessons and the refine prompt; the round's unit file:
        its record, the accepted source, the conversation and playbook after it, its cost."""
        played = await conclude(state, k + 1, *verified)
        record = played.record
        source = None if played.accepted is None else played.accepted.source
        artifact = {
            **record.unit_json(stream),
            "source": source,
            "conversation": state.conversation,
            "playbook": state.playbook.to_json(),
            "cost": _cost_json(played.cost),
        }
        return Step(artifact, state, final=record.outcome == "accepted")

    def failed(self, stream: str, k: int, state: Run) -> None:
        """Charge what the failed round spent."""
        del stream, k
        state.ledger.merge(state.spent)

    def restore(self, stream: str, k: int, artifact: dict[str, Any], state: Run) -> Step[Run]:
        """A committed round: its conversation, playbook, cost and record."""
        del stream, k
        state.conversation = list(artifact["conversation"])
        state.playbook = Playbook.from_json(artifact["playbook"])
        state.ledger.merge(_cost_ledger(artifact))
        record = RoundRecord.from_json(artifact)
        self._restore(record, artifact["source"])
        return Step(artifact, state, final=record.outcome == "accepted")

    def commit(self, stream: str, k: int, step: Step[Run]) -> None:
        """Charge the round, then write the accepted family's files, playbook, record copy."""
        del stream, k
        self.state.ledger.merge(_cost_ledger(step.artifact))
        record = RoundRecord.from_json(step.artifact)
        self._restore(record, step.artifact["source"])
        self._write_outputs(record)

    def resumed(self, stream: str, k: int, step: Step[Run]) -> None:
        """Write again the outputs of the last committed round when the run had not finished."""
        del k
        if not (self.state.settings.run_dir_for(stream) / RESULT).exists():
            self._write_outputs(RoundRecord.from_json(step.artifact))

    def _restore(self, record: RoundRecord, source: str | None) -> None:
        """Add a committed round to the result."""
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


def _cost_ledger(artifact: dict[str, Any]) -> CostLedger:
    return CostLedger({name: ModuleCost(**cost) for name, cost in artifact["cost"].items()})


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
        rounds = FamilyRounds(run, EvolutionResult(run.seed.id))
        run_dir = settings.run_dir_for(run.seed.id)
        stage = EvolutionStage(rounds, run_dir)
        config = evolve_config(run.seed, settings, model or provider.name)
        await run_evolution(stage, config, where=str(run_dir), grow=True)
        return _finish(run, rounds, run_dir)


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


def _finish(run: Run, rounds: FamilyRounds, run_dir: Path) -> EvolutionResult:
    """Costs and playbook summary; the run record of an accepted family; the run's result."""
    result = rounds.result
    result.costs = run.ledger.to_json()
    result.playbook = {
        "path": str(run.settings.playbook_file),
        "entries": len(run.playbook.entries),
    }
    if result.accepted and result.family is not None:
        write_json(run.settings.out / f"{result.family}.evolution.json", result.to_json())
    write_json(run_dir / RESULT, result.to_json())
    return result
