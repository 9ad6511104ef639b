"""The review gates, after SSLogic 3.3: Gate 1's LLM quality review and Gate 2 (validator
consensus, blind review). :func:`~veritask.logic.run_gates` runs them after Gate 1's static
checks (``_run_gates``); their prompts are in ``_prompts`` and their records in ``_reports``.

- Gate 2a, consensus (:func:`check_consensus`): every validator answers many instances; the
  answer is the strict-majority vote, and any disagreement blocks the family (the instance and
  the validators in the minority are recorded). Runs without a model.
- Gate 1, LLM quality review (:func:`review_family`): a reviewer model sees the template, the
  answer format, sample questions with answers and the family's source, and returns a
  pass/fail verdict per criterion with reasons. Any failed criterion fails the family. With
  ``code_calls`` the reviewer may test its claims with the ``run_python`` tool first (code run
  in the OS sandbox with the family importable; ``_code_tool``); the report lists the calls.
- Gate 2b, blind review (:func:`blind_review`): ``n`` solver samples answer one instance per
  probe difficulty (default ``[1, 3, 5, 5, 7]``) without seeing the answer; an instance is
  confirmed when at least ``tau`` answers are right by strict :func:`score_answer`. A probe
  that is not confirmed is retried on a fresh instance, up to ``attempts`` instances. The family
  passes when every difficulty bucket has a confirmed probe and at least 3/5 of the probes are
  confirmed (design note 0009 says why).
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from veritask.logic._code_tool import CodeTool, ToolConversation, ask_with_tools
from veritask.logic._family import (
    ConsensusError,
    Family,
    Inputs,
    Instance,
    canonical,
    instance_seed,
    make_instance,
    normalize,
    score_answer,
)
from veritask.logic._filefamily import FileFamily, sandbox_validators
from veritask.logic._prompts import (
    BLIND_PROMPT,
    BLIND_TOOL_NOTE,
    REVIEW_SYSTEM,
    REVIEW_TOOL_NOTE,
    review_prompt,
)
from veritask.logic._reports import (
    CRITERIA,
    BlindReport,
    ConsensusReport,
    QualityVerdict,
    ReviewReport,
)
from veritask.logic._sandbox import SandboxCall
from veritask.logic._settings import DEFAULT_PROBES, DEFAULT_REVIEW_DIFFICULTIES
from veritask.model import (
    CostLedger,
    GenerateConfig,
    ModelProvider,
    StructuredOutputError,
    ask,
    parse_model,
)

_LISTED = 20  # disagreements / errors kept in a report


_SAMPLE_TRIES = 5


# --- Gate 1: LLM quality review ------------------------------------------------------------


def _samples(family: Family, difficulties: Sequence[int], seed: int) -> list[Instance]:
    """One instance per difficulty; an instance the validators disagree on (Gate 2a's
    business) is replaced by the next one, a few times at most."""
    out = []
    for slot, difficulty in enumerate(difficulties):
        for k in range(_SAMPLE_TRIES):
            index = slot + k * len(difficulties)
            try:
                out.append(
                    make_instance(family, difficulty, split="review", seed=seed, index=index)
                )
                break
            except ConsensusError:
                if k == _SAMPLE_TRIES - 1:
                    raise
    return out


async def review_family(
    family: Family,
    provider: ModelProvider,
    *,
    difficulties: Sequence[int] = DEFAULT_REVIEW_DIFFICULTIES,
    seed: int = 0,
    ledger: CostLedger | None = None,
    config: GenerateConfig | None = None,
    max_repairs: int = 2,
    code_calls: int = 0,
) -> ReviewReport:
    """Gate 1's LLM quality review: one reviewer conversation with repair rounds for
    malformed JSON; with ``code_calls`` > 0 the reviewer may first run that many
    ``run_python`` calls in the OS sandbox (recorded in ``report.tool_calls``).

    Raises:
        SandboxUnavailable: ``code_calls`` > 0 where the OS sandbox is unavailable (and not
            explicitly allowed without it).
    """
    report = ReviewReport(family.id)
    try:
        samples = _samples(family, difficulties, seed)
    except Exception as exc:  # family code failing is a finding, not a crash
        report.error = f"could not make sample instances: {exc}"
        return report
    report.samples = [{"difficulty": s.difficulty, "index": s.index} for s in samples]
    prompt = review_prompt(family, samples)
    if code_calls > 0:
        prompt += REVIEW_TOOL_NOTE.format(calls=code_calls)
    messages = [
        {"role": "system", "content": REVIEW_SYSTEM},
        {"role": "user", "content": prompt},
    ]
    parse = parse_model(QualityVerdict)
    try:
        if code_calls > 0:
            verdict = await _review_with_tool(
                family, samples, messages, report, provider, code_calls, ledger, config
            )
        else:
            verdict = await ask(
                provider,
                messages,
                parse,
                module="review",
                ledger=ledger,
                config=config,
                max_repairs=max_repairs,
            )
    except StructuredOutputError as exc:
        report.error = str(exc)
        return report
    report.criteria = {c: getattr(verdict, c).model_dump() for c in CRITERIA}
    report.verdict = verdict.verdict
    report.feedback = verdict.feedback
    return report


async def _review_with_tool(
    family: Family,
    samples: Sequence[Instance],
    messages: list[dict[str, Any]],
    report: ReviewReport,
    provider: ModelProvider,
    code_calls: int,
    ledger: CostLedger | None,
    config: GenerateConfig | None,
) -> QualityVerdict:
    """The review conversation with ``run_python`` offered; every run lands in the report."""
    tool = CodeTool(family, samples)
    talk = ToolConversation(provider, tool, code_calls, "review", ledger, config)
    try:
        return await ask_with_tools(talk, messages, parse_model(QualityVerdict))
    finally:
        report.tool_calls = [run.to_json() for run in talk.runs]
        tool.close()


# --- Gate 2a: validator consensus ------------------------------------------------------------


def validator_names(family: Family) -> list[str]:
    """Distinct display names of a family's validators (``validator_<i>`` for lambdas)."""
    names: list[str] = []
    for i, v in enumerate(family.validators, start=1):
        name = getattr(v, "__name__", "")
        if not name or name == "<lambda>" or name in names:
            name = f"validator_{i}"
        names.append(name)
    return names


def _generate_all(
    family: Family, requests: Sequence[tuple[int, random.Random]]
) -> list[tuple[Inputs, list[str]]]:
    if isinstance(family, FileFamily) and family.worker is not None:
        return family.generate_many(requests)
    return [family.generate(d, rng) for d, rng in requests]


def _pool_answers(family: Family, inputs: Sequence[Inputs]) -> list[list[tuple[bool, str]]]:
    """Per instance, per validator: (ok, canonical answer or error message)."""
    batched = sandbox_validators(family)
    if batched is not None:
        worker, names = batched
        calls = [SandboxCall(name, [i]) for i in inputs for name in names]
        results = worker.call_many(calls)
        flat = [
            (True, canonical(r.value)) if r.ok else (False, f"{r.kind}: {r.error}") for r in results
        ]
        k = len(names)
        return [flat[j * k : (j + 1) * k] for j in range(len(inputs))]
    out: list[list[tuple[bool, str]]] = []
    for item in inputs:
        row: list[tuple[bool, str]] = []
        for v in family.validators:
            try:
                row.append((True, canonical(v(dict(item)))))
            except Exception as exc:  # a validator bug is a finding, not a crash
                row.append((False, f"{type(exc).__name__}: {exc}"))
        out.append(row)
    return out


def _vote(answers: dict[str, str]) -> tuple[str | None, list[str]]:
    """The strict-majority answer (None if there is none) and the validators outside it."""
    keys = {name: normalize(a) for name, a in answers.items()}
    top, count = Counter(keys.values()).most_common(1)[0]
    if count * 2 <= len(answers):
        return None, sorted(answers)
    return top, [name for name, a in keys.items() if a != top]


def check_consensus(family: Family, *, per_level: int = 20, seed: int = 0) -> ConsensusReport:
    """Gate 2a: ``per_level`` instances at each difficulty 1-10, every validator on each.

    Instance ``(d, i)`` is ``make_instance(family, d, split="consensus", seed=seed, index=i)``,
    so a recorded disagreement can be reproduced.
    """
    names = validator_names(family)
    report = ConsensusReport(family.id, validators=names, seed=seed)
    keys = [(d, i) for d in range(1, 11) for i in range(per_level)]
    requests = [
        (d, random.Random(instance_seed(family.id, family.version, report.split, seed, i, d)))
        for d, i in keys
    ]
    try:
        generated = _generate_all(family, requests)
        for _, slots in generated:
            family.render(slots)
        answers = _pool_answers(family, [inputs for inputs, _ in generated])
    except Exception as exc:  # family code failing is a finding, not a crash
        report.errors.append(
            str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
        )
        return report
    for (d, i), (inputs, _), row in zip(keys, generated, answers, strict=True):
        report.instances += 1
        failed = [
            f"d={d} #{i}: {n}: {msg}" for n, (ok, msg) in zip(names, row, strict=True) if not ok
        ]
        if failed:
            report.errors.extend(failed[: _LISTED - len(report.errors)])
            continue
        by_name = {n: a for n, (_, a) in zip(names, row, strict=True)}
        if len({normalize(a) for a in by_name.values()}) == 1:
            continue
        report.disagreeing += 1
        majority, minority = _vote(by_name)
        if len(report.disagreements) < _LISTED:
            report.disagreements.append(
                {
                    "difficulty": d,
                    "index": i,
                    "answers": by_name,
                    "majority": majority,
                    "minority": minority,
                    "inputs": _short(json.dumps(inputs, sort_keys=True), 400),
                }
            )
    return report


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- Gate 2b: blind review ---------------------------------------------------------------------


def extract_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` in ``text`` (braces may nest), or None."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth, i = 1, start + len("\\boxed{")
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i:j]
    return None


def _parse_boxed(text: str) -> str:
    answer = extract_boxed(text)
    if answer is None:
        raise ValueError("no final answer in \\boxed{...} at the end of the reply")
    return answer


@dataclass
class _Solvers:
    """What every blind solver of one review shares: the model, ledger, sampling settings
    and the ``run_python`` budget of each solver (0: no tool)."""

    provider: ModelProvider
    ledger: CostLedger | None
    config: GenerateConfig | None
    code_calls: int = 0


async def _solve(
    provider: ModelProvider,
    instance: Instance,
    sample: int,
    ledger: CostLedger | None,
    config: GenerateConfig | None,
) -> str | None:
    """One blind answer from text alone (None when the reply had no usable final answer)."""
    answer, _ = await _solve_one(_Solvers(provider, ledger, config), instance, sample)
    return answer


async def _solve_one(
    solvers: _Solvers, instance: Instance, sample: int
) -> tuple[str | None, list[dict[str, Any]] | None]:
    """One blind answer (None when the reply had no usable final answer), and the solver's
    ``run_python`` calls (None without the tool)."""
    prompt = BLIND_PROMPT.format(attempt=sample + 1, question=instance.question)
    messages = [{"role": "user", "content": prompt}]
    if solvers.code_calls > 0:
        messages[0]["content"] += BLIND_TOOL_NOTE.format(calls=solvers.code_calls)
        return await _solve_with_tool(solvers, messages, sample)
    try:
        answer = await ask(
            solvers.provider,
            messages,
            _parse_boxed,
            module="blind_review",
            ledger=solvers.ledger,
            config=solvers.config,
            max_repairs=1,
            sample_index=sample,
        )
    except StructuredOutputError:
        return None, None
    return answer, None


async def _solve_with_tool(
    solvers: _Solvers, messages: list[dict[str, Any]], sample: int
) -> tuple[str | None, list[dict[str, Any]]]:
    """A blind solver with its own sandboxed ``run_python`` (the family is not importable)."""
    tool = CodeTool(None)
    talk = ToolConversation(
        solvers.provider,
        tool,
        solvers.code_calls,
        "blind_review",
        solvers.ledger,
        solvers.config,
        max_repairs=1,
        sample_index=sample,
    )
    try:
        answer: str | None = await ask_with_tools(talk, messages, _parse_boxed)
    except StructuredOutputError:
        answer = None
    finally:
        tool.close()
    return answer, [run.to_json() for run in talk.runs]


async def _attempt(
    family: Family,
    solvers: _Solvers,
    difficulty: int,
    index: int,
    n: int,
    seed: int,
) -> dict[str, Any]:
    """One instance shown to ``n`` blind solvers: how many were right."""
    try:
        instance = make_instance(family, difficulty, split="blind", seed=seed, index=index)
    except Exception as exc:  # family code failing is a finding, not a crash
        return {"index": index, "correct": 0, "asked": 0, "error": f"no instance: {exc}"}
    solved = await asyncio.gather(*(_solve_one(solvers, instance, k) for k in range(n)))
    answers = [answer for answer, _ in solved]
    correct = sum(int(score_answer(a, instance, family)) for a in answers)
    out: dict[str, Any] = {"index": index, "correct": correct, "asked": n}
    out["answers"] = [None if a is None else _short(normalize(a), 200) for a in answers]
    out["expected"] = instance.answer
    out["question"] = _short(instance.question, 600)
    if solvers.code_calls > 0:
        out["tool_calls"] = [runs or [] for _, runs in solved]
    return out


async def blind_review(
    family: Family,
    provider: ModelProvider,
    *,
    n: int = 5,
    tau: int = 3,
    difficulties: Sequence[int] = DEFAULT_PROBES,
    attempts: int = 3,
    seed: int = 0,
    ledger: CostLedger | None = None,
    config: GenerateConfig | None = None,
    code_calls: int = 0,
) -> BlindReport:
    """Gate 2b: each probe difficulty gets up to ``attempts`` fresh instances until one is
    confirmed by at least ``tau`` of ``n`` blind answers (strict scoring of the ``\\boxed{}``
    answer; a reply without one gets one repair round, then counts as wrong).

    With ``code_calls`` > 0 each solver may make that many ``run_python`` calls in its own
    sandbox (SSLogic's code-augmented blind review; the family is not importable there), and
    each attempt records them under ``tool_calls``, one list per solver."""
    if not 1 <= tau <= n:
        raise ValueError(f"tau must be between 1 and n={n}, got {tau}")
    report = BlindReport(family.id, n=n, tau=tau, attempts=attempts)
    solvers = _Solvers(provider, ledger, config, code_calls)
    for slot, difficulty in enumerate(difficulties):
        probe: dict[str, Any] = {"slot": slot, "difficulty": difficulty, "confirmed": False}
        probe["attempts"] = []
        for attempt in range(attempts):
            index = slot * attempts + attempt
            result = await _attempt(family, solvers, difficulty, index, n, seed)
            probe["attempts"].append(result)
            if result["correct"] >= tau:
                result.pop("question", None)  # kept only where solvers failed
                probe["confirmed"] = True
                break
        report.probes.append(probe)
    return report
