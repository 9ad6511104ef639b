"""One round of the evolution loop (SSLogic 3.2-3.4), played in memory.

A round proposes (round 1) or refines (later rounds) a family file with the agent, has
independent validators written for its pool, and runs every gate on the assembled file:

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
   which answers with a corrected file.

The three steps are the phases of an iteration of the evolution engine
(``veritask.pipeline.Evolution``): :func:`propose` synthesizes, :func:`gate` verifies and
:func:`conclude` reflects (the playbook's curation, by rules or by the model, and the refine
prompt, which shows the curated playbook). They update the run's state
(the conversation with the agent and the playbook) and write nothing; what the round spent is
kept apart (``Played.cost``), so the loop (``_evolve.py``) can store it with the round.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Literal

from veritask.logic._curate import (
    agent_key,
    curate_with_model,
    curate_with_rules,
    round_evidence,
)
from veritask.logic._draft import Draft, assemble_family, parse_draft, parse_validator
from veritask.logic._family import Family, instance_seed
from veritask.logic._filefamily import family_from_source, parse_family_source
from veritask.logic._playbook import Playbook, lesson_evidence
from veritask.logic._prompts import (
    EVOLVE_SYSTEM,
    VALIDATOR_SYSTEM,
    gate_feedback,
    refine_prompt,
    seed_prompt,
    validator_prompt,
)
from veritask.logic._records import RoundRecord, round_id
from veritask.logic._reports import FamilyGateRecord
from veritask.logic._run_gates import run_gates_async
from veritask.logic._settings import EvolveSettings
from veritask.model import CostLedger, ModelProvider, StructuredOutputError, ask


@dataclass
class Run:
    """The state of one evolution run, carried from round to round."""

    seed: Family
    provider: ModelProvider
    settings: EvolveSettings
    playbook: Playbook
    taken: frozenset[str]
    ledger: CostLedger
    conversation: list[dict[str, Any]] = field(default_factory=list)
    spent: CostLedger = field(default_factory=CostLedger)
    """What the round being played spends (charged to ``ledger`` when it is committed)."""

    def open(self) -> None:
        """The conversation before round 1: the system prompt and the seed prompt."""
        self.conversation = [
            {"role": "system", "content": EVOLVE_SYSTEM},
            {"role": "user", "content": seed_prompt(self.seed, self.playbook, self.settings.seed)},
        ]


@dataclass(frozen=True)
class Accepted:
    """The family a round accepted: the agent's draft, the assembled file and its gate record."""

    draft: Draft
    source: str
    gates: FamilyGateRecord


@dataclass(frozen=True)
class Played:
    """A round played but not yet written."""

    record: RoundRecord
    cost: CostLedger
    accepted: Accepted | None = None


class _RoundFailed(Exception):
    """A round ended before the gates (the agent or the validator builder failed)."""

    def __init__(self, family: str | None, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.family = family
        self.problems = problems


@dataclass(frozen=True)
class Proposed:
    """A round's candidate: the agent's draft and the assembled file, or why there is none."""

    stage: Literal["propose", "refine"]
    draft: Draft | None = None
    source: str | None = None
    failure: _RoundFailed | None = None


async def propose(run: Run, round_no: int) -> Proposed:
    """Synthesis: the agent proposes (round 1) or refines a family file, and independent
    validators are written for its pool. Adds the agent's answer to the conversation."""
    stage: Literal["propose", "refine"] = "propose" if round_no == 1 else "refine"
    run.spent = CostLedger()
    try:
        draft = await _ask_draft(run, stage)
        source = await _with_pool(run, draft)
    except _RoundFailed as failed:
        return Proposed(stage, failure=failed)
    return Proposed(stage, draft, source)


async def gate(run: Run, round_no: int, proposed: Proposed) -> FamilyGateRecord | None:
    """Verification: every gate on the assembled file (None when there is no file)."""
    if proposed.draft is None or proposed.source is None:
        return None
    return await _gate(run, proposed.draft, proposed.source, round_no)


async def conclude(
    run: Run, round_no: int, proposed: Proposed, gates: FamilyGateRecord | None
) -> Played:
    """Reflection: the round's record, the playbook's curation (rules or model, see
    ``_curate``), and the refine prompt the next round answers, which shows the curated
    playbook (nothing is written)."""
    stage = proposed.stage
    if proposed.failure is not None or gates is None or proposed.draft is None:
        failed = proposed.failure or _RoundFailed(None, ["no candidate"])
        record = RoundRecord(round_no, stage, "error", failed.family, failed.problems)
        await curate_round(run, record, None, ())
        prompt = refine_prompt(round_no, failed.problems, {}, run.playbook)
        run.conversation.append({"role": "user", "content": prompt})
        return Played(record, run.spent)
    draft, family = proposed.draft, proposed.draft.spec.id
    if gates.passed:
        assert proposed.source is not None
        record = RoundRecord(round_no, stage, "accepted", family, [], gates.to_json())
        await curate_round(run, record, gates, draft.lessons)
        return Played(record, run.spent, Accepted(draft, proposed.source, gates))
    record = RoundRecord(round_no, stage, "rejected", family, gates.problems, gates.to_json())
    await curate_round(run, record, gates, draft.lessons)
    prompt = refine_prompt(round_no, gates.problems, gate_feedback(gates), run.playbook)
    run.conversation.append({"role": "user", "content": prompt})
    return Played(record, run.spent)


async def curate_round(
    run: Run, record: RoundRecord, gates: FamilyGateRecord | None, lessons: tuple[str, ...]
) -> None:
    """Curate the playbook after a round: by the rules, or by the model (falling back to the
    rules, with the reason in the version, when its answer stays unusable). The agent's own
    ``lessons`` are credited by the rules only when the family was accepted; the model sees
    them as candidates either way."""
    where = round_id(run.seed.id, record.round)
    credited = lessons if record.outcome == "accepted" else ()
    if run.settings.curator == "rules":
        curate_with_rules(run.playbook, where, record.problems, credited)
        return
    candidates = [(key, text) for key, text, _ in lesson_evidence(record.problems)]
    candidates += [(agent_key(lesson), lesson) for lesson in lessons]
    evidence = round_evidence(record, gates, candidates)
    rejected = await curate_with_model(
        run.playbook,
        run.provider,
        evidence,
        where,
        ledger=run.spent,
        config=run.settings.config,
    )
    if rejected is not None:
        note = f"model curation rejected, rules applied: {rejected}"[:500]
        curate_with_rules(run.playbook, where, record.problems, credited, note)


async def play_round(run: Run, round_no: int) -> Played:
    """Propose or refine, build the pool, gate; update the conversation and the playbook.

    Writes nothing: the loop commits the round.
    """
    proposed = await propose(run, round_no)
    return await conclude(run, round_no, proposed, await gate(run, round_no, proposed))


async def _gate(run: Run, draft: Draft, source: str, round_no: int) -> FamilyGateRecord:
    """Every gate on the assembled file, loaded in the sandbox for this round only."""
    candidate = family_from_source(source, f"<{draft.spec.id} round {round_no}>")
    try:
        return await run_gates_async(
            candidate, run.provider, run.settings.gate_settings(), ledger=run.spent
        )
    finally:
        candidate.close()


async def _ask_draft(run: Run, stage: str) -> Draft:
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
            ledger=run.spent,
            config=run.settings.config,
        )
    except StructuredOutputError as exc:
        run.conversation.append({"role": "assistant", "content": exc.last_text})
        raise _RoundFailed(None, [f"agent: {exc}"]) from None
    run.conversation.append({"role": "assistant", "content": draft.text})
    return draft


async def _with_pool(run: Run, draft: Draft) -> str:
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
                    ledger=run.spent,
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


def _draft_samples(run: Run, draft: Draft) -> list[tuple[dict[str, Any], str]]:
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
