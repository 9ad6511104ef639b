"""The evolution loop (SSLogic 3.2-3.4): an LLM agent evolves a seed family into a new family file.

One run of :func:`evolve_async`:

1. **Propose** (module ``propose``): the agent sees the seed family (template, answer format,
   sample questions with answers, source), the family-file format and the experience playbook,
   and writes a complete family file: ``FAMILY``, ``generate`` and at least one validator.
2. **Validators** (module ``validators``): separate calls, one per extra validator, write
   independent ``solution(inputs)`` functions from the template, the generator code (validators
   removed) and sample inputs. They never see the agent's validator code. Each is wrapped into a
   function ``solution_pool_<k>`` and appended to the file.
3. **Gates**: the assembled file is loaded in the sandbox and run through
   :func:`~veritask.logic.run_gates_async` (modules ``review`` and ``blind_review``).
4. **Refine** (module ``refine``): on failure the structured gate report goes back to the agent,
   which answers with a corrected file; steps 2-3 repeat, up to ``t_max`` rounds in all.

An accepted family is written as ``<out>/<id>.py`` with ``<id>.gates.json`` (its gate record)
and ``<id>.evolution.json`` (rounds and costs), so it loads through the registry like a
built-in. Every round's outcome updates the playbook (see :class:`~veritask.logic.Playbook`).

**Rounds are units.** Round ``k`` of evolving seed family ``S`` has the stable id
``S.round<k>`` (:func:`~veritask.logic._records.round_id`). Its input is the run's
:class:`~veritask.logic.EvolveSettings` and the state the round before it left (the conversation
with the agent and the playbook). :func:`_play_round` makes the model calls, runs the gates and
updates that state in memory, writing nothing. :func:`_commit_round` then writes the round's
outputs, each atomically: the accepted family's files, the round record
(``<rounds_dir>/<round id>.json`` when ``rounds_dir`` is set; no timings, so the same answers
give the same bytes) and the playbook. The commit is the round boundary: a pipeline stage
checkpoints there. Rounds run in sequence, since each starts from the state the one before left.
"""

from __future__ import annotations

import asyncio
import random
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from veritask.logic._draft import Draft, assemble_family, parse_draft, parse_validator
from veritask.logic._family import Family, instance_seed
from veritask.logic._filefamily import family_from_source, parse_family_source
from veritask.logic._playbook import Playbook, failure_lessons
from veritask.logic._prompts import (
    EVOLVE_SYSTEM,
    VALIDATOR_SYSTEM,
    gate_feedback,
    refine_prompt,
    seed_prompt,
    validator_prompt,
)
from veritask.logic._records import (
    EvolutionResult,
    RoundRecord,
    write_accepted,
    write_json,
    write_round,
)
from veritask.logic._registry import all_families, get_family
from veritask.logic._reports import FamilyGateRecord
from veritask.logic._run_gates import run_gates_async
from veritask.logic._settings import EvolveSettings
from veritask.model import CostLedger, ModelProvider, StructuredOutputError, ask


@dataclass
class _Run:
    """The state of one evolution run, carried from round to round."""

    seed: Family
    provider: ModelProvider
    settings: EvolveSettings
    playbook: Playbook
    taken: frozenset[str]
    ledger: CostLedger
    conversation: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class _Accepted:
    """The family a round accepted: the agent's draft, the assembled file and its gate record."""

    draft: Draft
    source: str
    gates: FamilyGateRecord


@dataclass(frozen=True)
class _Played:
    """A round played but not yet written."""

    record: RoundRecord
    accepted: _Accepted | None = None


class _RoundFailed(Exception):
    """A round ended before the gates (the agent or the validator builder failed)."""

    def __init__(self, family: str | None, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.family = family
        self.problems = problems


async def evolve_async(
    seed_family: str | Family,
    provider: ModelProvider,
    settings: EvolveSettings,
    *,
    ledger: CostLedger | None = None,
) -> EvolutionResult:
    """Evolve ``seed_family`` into a new family (see the module docstring).

    Args:
        seed_family: A family or its id (built-in, or a file family in ``settings.families_dirs``
            or ``settings.out_dir``).
        provider: The model that writes, reviews and solves.
        settings: How the run goes (output directory, rounds, playbook, seed, gates, ...).
        ledger: Charged with every model call, per module.
    """
    run = _start(seed_family, provider, settings, ledger)
    result = EvolutionResult(run.seed.id)
    for round_no in range(1, settings.t_max + 1):
        played = await _play_round(run, round_no)
        _commit_round(run, played, result)
        if played.accepted is not None:
            break
    return _finish(run, result)


def evolve(
    seed_family: str | Family,
    provider: ModelProvider,
    settings: EvolveSettings,
    *,
    ledger: CostLedger | None = None,
) -> EvolutionResult:
    """Synchronous :func:`evolve_async` (not from inside a running event loop)."""
    return asyncio.run(evolve_async(seed_family, provider, settings, ledger=ledger))


def _start(
    seed_family: str | Family,
    provider: ModelProvider,
    settings: EvolveSettings,
    ledger: CostLedger | None,
) -> _Run:
    """The run's state before round 1: the seed, the loaded playbook, the taken ids."""
    dirs = settings.search_dirs
    seed = get_family(seed_family, dirs) if isinstance(seed_family, str) else seed_family
    playbook = Playbook.load(settings.playbook_file, settings.playbook_limit)
    run = _Run(
        seed=seed,
        provider=provider,
        settings=settings,
        playbook=playbook,
        taken=frozenset(all_families(dirs)),
        ledger=ledger if ledger is not None else CostLedger(),
    )
    run.conversation = [
        {"role": "system", "content": EVOLVE_SYSTEM},
        {"role": "user", "content": seed_prompt(seed, playbook, settings.seed)},
    ]
    return run


def _finish(run: _Run, result: EvolutionResult) -> EvolutionResult:
    """Costs and playbook summary; the run record of an accepted family."""
    result.costs = run.ledger.to_json()
    result.playbook = {
        "path": str(run.settings.playbook_file),
        "entries": len(run.playbook.entries),
    }
    if result.accepted and result.family is not None:
        write_json(run.settings.out / f"{result.family}.evolution.json", result.to_json())
    return result


# --- one round (the unit) ---------------------------------------------------------------------


async def _play_round(run: _Run, round_no: int) -> _Played:
    """Propose or refine, build the pool, gate; update the conversation and the playbook.

    Writes nothing: :func:`_commit_round` does.
    """
    stage: Literal["propose", "refine"] = "propose" if round_no == 1 else "refine"
    try:
        draft = await _ask_draft(run, stage)
        source = await _with_pool(run, draft)
    except _RoundFailed as failed:
        _learn(run, failed.problems)
        run.conversation.append(
            {"role": "user", "content": refine_prompt(round_no, failed.problems, {})}
        )
        return _Played(RoundRecord(round_no, stage, "error", failed.family, failed.problems))
    gates = await _gate(run, draft, source, round_no)
    family = draft.spec.id
    if gates.passed:
        _credit(run, draft.lessons)
        record = RoundRecord(round_no, stage, "accepted", family, [], gates.to_json())
        return _Played(record, _Accepted(draft, source, gates))
    _learn(run, gates.problems)
    prompt = refine_prompt(round_no, gates.problems, gate_feedback(gates))
    run.conversation.append({"role": "user", "content": prompt})
    return _Played(
        RoundRecord(round_no, stage, "rejected", family, gates.problems, gates.to_json())
    )


def _commit_round(run: _Run, played: _Played, result: EvolutionResult) -> None:
    """Write a played round's outputs (each atomically) and add it to the result."""
    accepted = played.accepted
    if accepted is not None:
        family = accepted.draft.spec.id
        path, gates_path = write_accepted(
            run.settings.out, family, accepted.source, accepted.gates.to_json()
        )
        result.accepted, result.family = True, family
        result.path, result.gates_path = str(path), str(gates_path)
    result.rounds.append(played.record)
    if run.settings.rounds_dir is not None:
        write_round(run.settings.rounds_dir, run.seed.id, played.record)
    run.playbook.save(run.settings.playbook_file)


async def _gate(run: _Run, draft: Draft, source: str, round_no: int) -> FamilyGateRecord:
    """Every gate on the assembled file, loaded in the sandbox for this round only."""
    candidate = family_from_source(source, f"<{draft.spec.id} round {round_no}>")
    try:
        return await run_gates_async(
            candidate, run.provider, run.settings.gate_settings(), ledger=run.ledger
        )
    finally:
        candidate.close()


async def _ask_draft(run: _Run, stage: str) -> Draft:
    """The agent's family file for this round (added to the conversation)."""
    taken = run.taken

    def parse(text: str) -> Draft:
        return parse_draft(text, taken)

    try:
        draft = await ask(
            run.provider,
            run.conversation,
            parse,
            module=stage,
            ledger=run.ledger,
            config=run.settings.config,
        )
    except StructuredOutputError as exc:
        run.conversation.append({"role": "assistant", "content": exc.last_text})
        raise _RoundFailed(None, [f"agent: {exc}"]) from None
    run.conversation.append({"role": "assistant", "content": draft.text})
    return draft


async def _with_pool(run: _Run, draft: Draft) -> str:
    """The draft with ``extra_validators`` independent validators appended."""
    samples = _draft_samples(run, draft)
    messages = [
        {"role": "system", "content": VALIDATOR_SYSTEM},
        {"role": "user", "content": validator_prompt(draft, samples)},
    ]
    pool: list[str] = []
    for k in range(1, run.settings.extra_validators + 1):

        def parse(text: str, k: int = k) -> str:
            return parse_validator(text, k)

        try:
            pool.append(
                await ask(
                    run.provider,
                    messages,
                    parse,
                    module="validators",
                    ledger=run.ledger,
                    config=run.settings.config,
                    sample_index=k - 1,
                )
            )
        except StructuredOutputError as exc:
            raise _RoundFailed(draft.spec.id, [f"validator builder: {exc}"]) from None
    source = assemble_family(draft.source, pool)
    try:
        parse_family_source(source, "assembled family")
    except ValueError as exc:
        raise _RoundFailed(draft.spec.id, [str(exc)]) from None
    return source


def _draft_samples(run: _Run, draft: Draft) -> list[tuple[dict[str, Any], str]]:
    """Sample inputs and questions of the draft (run in the sandbox) for the validator builder."""
    family = family_from_source(draft.source, "<draft>", min_validators=1)
    out: list[tuple[dict[str, Any], str]] = []
    try:
        for i, difficulty in enumerate((1, 4, 8)):
            seed = instance_seed(family.id, family.version, "pool", run.settings.seed, i)
            inputs, slots = family.generate(difficulty, random.Random(seed))
            out.append((inputs, family.render(slots)))
    except ValueError as exc:  # FamilyCodeError, slot mismatch
        raise _RoundFailed(draft.spec.id, [f"generate: {exc}"]) from None
    finally:
        family.close()
    return out


def _credit(run: _Run, lessons: tuple[str, ...]) -> None:
    """Admit an accepted family's own lessons into the playbook."""
    for lesson in lessons:
        run.playbook.add("agent:" + re.sub(r"[^a-z0-9]+", " ", lesson.lower()).strip()[:80], lesson)


def _learn(run: _Run, problems: list[str]) -> None:
    """Add the fixed lessons a failed round's problems point to."""
    for key, text in failure_lessons(problems):
        run.playbook.add(key, text)
