"""Gate 1's LLM quality review and Gate 2 (validator consensus, blind review), after SSLogic 3.3.

:func:`run_gates` runs, in order:

1. Gate 1, static (:func:`~veritask.logic.gate1_static`): slots, determinism, consensus, runtime,
   degenerate answers. Runs without a model.
2. Gate 2a, consensus (:func:`check_consensus`): every validator answers many instances; the
   answer is the strict-majority vote, and any disagreement blocks the family (the instance and
   the validators in the minority are recorded). Runs without a model.
3. Gate 1, LLM quality review (:func:`review_family`): a reviewer model sees the template, the
   answer format, sample questions with answers and the family's source, and returns a
   pass/fail verdict per criterion with reasons. Any failed criterion fails the family.
4. Gate 2b, blind review (:func:`blind_review`): ``n`` solver samples answer one instance per
   probe difficulty (default ``[1, 3, 5, 5, 7]``) without seeing the answer; an instance is
   confirmed when at least ``tau`` answers are right by strict :func:`score_answer`. A probe
   that is not confirmed is retried on a fresh instance, up to ``attempts`` instances. The family
   passes when every difficulty bucket has a confirmed probe and at least 3/5 of the probes are
   confirmed (design note 0009 says why).

By default a failed stage skips the model stages after it (they cost money and the family is
already rejected); ``short_circuit=False`` runs everything.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

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
from veritask.logic._gates import GateReport, gate1_static
from veritask.logic._sandbox import SandboxCall
from veritask.model import (
    CostLedger,
    GenerateConfig,
    ModelProvider,
    StructuredOutputError,
    ask,
    parse_model,
)

DEFAULT_PROBES = (1, 3, 5, 5, 7)
"""Blind-review probe difficulties (SSLogic's released pipeline)."""
MIN_CONFIRMED_SHARE = 0.6
"""Share of probes that must be confirmed (SSLogic: 3 of 5)."""
CRITERIA = (
    "well_posed",
    "unambiguous_answer_format",
    "answer_derivable",
    "difficulty_scaling",
    "no_leaked_answer",
)
"""What the quality reviewer judges."""
SANDBOX_BUDGET_US_PER_CALL = 1000.0
"""Extra Gate 1 runtime budget per sandboxed call (generate or one validator) of an instance."""
_LISTED = 20  # disagreements / errors kept in a report
_SOURCE_CHARS = 20000
_SAMPLE_TRIES = 5


# --- Gate 1: LLM quality review ------------------------------------------------------------


class CriterionVerdict(BaseModel):
    """The reviewer's verdict on one criterion."""

    passed: bool
    reason: str


class QualityVerdict(BaseModel):
    """The reviewer's structured answer."""

    well_posed: CriterionVerdict
    unambiguous_answer_format: CriterionVerdict
    answer_derivable: CriterionVerdict
    difficulty_scaling: CriterionVerdict
    no_leaked_answer: CriterionVerdict
    verdict: Literal["pass", "fail"]
    feedback: str = ""


@dataclass
class ReviewReport:
    """Gate 1's LLM quality review of a family."""

    family: str
    criteria: dict[str, dict[str, Any]] = field(default_factory=dict)
    verdict: str | None = None
    feedback: str = ""
    error: str | None = None
    samples: list[dict[str, int]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when the reviewer passed the family on every criterion."""
        return (
            self.error is None
            and self.verdict == "pass"
            and all(c["passed"] for c in self.criteria.values())
        )

    @property
    def problems(self) -> list[str]:
        """One line per failed criterion (or the reason there is no verdict)."""
        if self.error is not None:
            return [f"no usable review: {self.error}"]
        out = [f"{name}: {c['reason']}" for name, c in self.criteria.items() if not c["passed"]]
        if self.verdict != "pass" and not out:
            out.append(f"reviewer verdict {self.verdict}: {self.feedback}")
        return out

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "passed": self.passed,
            "verdict": self.verdict,
            "criteria": self.criteria,
            "feedback": self.feedback,
            "error": self.error,
            "samples": self.samples,
        }


REVIEW_SYSTEM = (
    "You review task families for a dataset of verifiable logic problems. A family is a "
    "generator of questions, a question template and validators that compute the answer. "
    "Judge logical correctness and solvability; tolerate long or plain wording unless it blocks "
    "understanding. Reply with JSON only."
)


def family_source(family: Family) -> str | None:
    """The source of a family's code: a family file's text, or a built-in's module source."""
    if isinstance(family, FileFamily):
        return family.source
    module = inspect.getmodule(family.generate)
    try:
        return inspect.getsource(module) if module is not None else None
    except (OSError, TypeError):
        return None


def review_prompt(family: Family, samples: Sequence[Instance]) -> str:
    """The reviewer's prompt: family, samples with answers, source and the verdict schema."""
    shown = "\n\n".join(
        f"### Sample (difficulty {s.difficulty})\nQuestion:\n{s.question}\n\nOfficial answer: {s.answer}"
        for s in samples
    )
    source = family_source(family)
    code = f"\n\n## Family code\n```python\n{source[:_SOURCE_CHARS]}\n```" if source else ""
    criteria = "\n".join(f'  "{c}": {{"passed": true|false, "reason": "..."}},' for c in CRITERIA)
    return (
        f"## Family {family.id}: {family.title} ({family.category})\n\n"
        f"Template:\n{family.template}\n\nAnswer format: {family.answer_format}\n\n"
        f"{shown}{code}\n\n"
        "## Criteria\n"
        "- well_posed: every question is complete and consistent, with exactly one right answer.\n"
        "- unambiguous_answer_format: the answer format says exactly how to write the answer "
        "(order, separators, case, units), so a right answer cannot be marked wrong.\n"
        "- answer_derivable: the official answer follows from the question text alone.\n"
        "- difficulty_scaling: larger difficulties give harder problems (size, constraints, "
        "steps) without shortcuts.\n"
        "- no_leaked_answer: the question does not state or trivially reveal the answer.\n\n"
        "Reply with this JSON object and nothing else:\n"
        f"{{\n{criteria}\n"
        '  "verdict": "pass" or "fail" (fail when any criterion fails),\n'
        '  "feedback": "one or two sentences: what to change"\n}'
    )


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
    difficulties: Sequence[int] = (1, 5, 10),
    seed: int = 0,
    ledger: CostLedger | None = None,
    config: GenerateConfig | None = None,
    max_repairs: int = 2,
) -> ReviewReport:
    """Gate 1's LLM quality review: one reviewer call with repair rounds for malformed JSON."""
    report = ReviewReport(family.id)
    try:
        samples = _samples(family, difficulties, seed)
    except Exception as exc:  # family code failing is a finding, not a crash
        report.error = f"could not make sample instances: {exc}"
        return report
    report.samples = [{"difficulty": s.difficulty, "index": s.index} for s in samples]
    messages = [
        {"role": "system", "content": REVIEW_SYSTEM},
        {"role": "user", "content": review_prompt(family, samples)},
    ]
    try:
        verdict = await ask(
            provider,
            messages,
            parse_model(QualityVerdict),
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


# --- Gate 2a: validator consensus ------------------------------------------------------------


@dataclass
class ConsensusReport:
    """Gate 2's consensus check: the validator pool's majority vote over many instances."""

    family: str
    validators: list[str] = field(default_factory=list)
    instances: int = 0
    disagreeing: int = 0
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    split: str = "consensus"
    seed: int = 0

    @property
    def passed(self) -> bool:
        """True when every instance was made and every validator agreed on each."""
        return self.instances > 0 and not self.disagreeing and not self.errors

    @property
    def problems(self) -> list[str]:
        """One line per disagreement or error (the first few)."""
        out = list(self.errors)
        for d in self.disagreements:
            where = f"d={d['difficulty']} #{d['index']}"
            if d["majority"] is None:
                out.append(f"{where}: no strict majority among {d['answers']}")
            else:
                out.append(
                    f"{where}: {', '.join(d['minority'])} disagree with the majority "
                    f"{d['majority']!r}: {d['answers']}"
                )
        if self.instances == 0 and not out:
            out.append("no instance was checked")
        return out

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "passed": self.passed,
            "validators": self.validators,
            "instances": self.instances,
            "split": self.split,
            "seed": self.seed,
            "disagreeing": self.disagreeing,
            "disagreements": self.disagreements,
            "errors": self.errors,
        }


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
    top, count = Counter(answers.values()).most_common(1)[0]
    if count * 2 <= len(answers):
        return None, sorted(answers)
    return top, [name for name, a in answers.items() if a != top]


def check_consensus(family: Family, *, per_level: int = 20, seed: int = 0) -> ConsensusReport:
    """Gate 2a: ``per_level`` instances at each difficulty 1-10, every validator on each.

    Instance ``(d, i)`` is ``make_instance(family, d, split="consensus", seed=seed, index=i)``,
    so a recorded disagreement can be reproduced.
    """
    names = validator_names(family)
    report = ConsensusReport(family.id, validators=names, seed=seed)
    keys = [(d, i) for d in range(1, 11) for i in range(per_level)]
    requests = [
        (d, random.Random(instance_seed(family.id, family.version, report.split, seed, i)))
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
        if len(set(by_name.values())) == 1:
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


@dataclass
class BlindReport:
    """Gate 2's blind review: probes, attempts and counts per difficulty."""

    family: str
    n: int
    tau: int
    attempts: int
    probes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def required(self) -> int:
        """How many probes must be confirmed (3 of 5 by default)."""
        return math.ceil(MIN_CONFIRMED_SHARE * len(self.probes))

    @property
    def by_difficulty(self) -> dict[int, dict[str, int]]:
        """Per difficulty: probes, confirmed probes, attempts, right answers, answers asked."""
        out: dict[int, dict[str, int]] = {}
        for probe in self.probes:
            row = out.setdefault(
                probe["difficulty"],
                {"probes": 0, "confirmed": 0, "attempts": 0, "correct": 0, "asked": 0},
            )
            row["probes"] += 1
            row["confirmed"] += int(probe["confirmed"])
            row["attempts"] += len(probe["attempts"])
            row["correct"] += sum(a["correct"] for a in probe["attempts"])
            row["asked"] += sum(a["asked"] for a in probe["attempts"])
        return dict(sorted(out.items()))

    @property
    def passed(self) -> bool:
        """Every difficulty bucket has a confirmed probe and enough probes are confirmed."""
        if not self.probes:
            return False
        confirmed = sum(p["confirmed"] for p in self.probes)
        buckets = self.by_difficulty.values()
        return confirmed >= self.required and all(b["confirmed"] > 0 for b in buckets)

    @property
    def problems(self) -> list[str]:
        """One line per unconfirmed probe."""
        out = []
        for probe in self.probes:
            if not probe["confirmed"]:
                counts = ", ".join(
                    a.get("error") or f"{a['correct']}/{a['asked']}" for a in probe["attempts"]
                )
                out.append(
                    f"probe {probe['slot']} (d={probe['difficulty']}) not confirmed after "
                    f"{len(probe['attempts'])} instance(s): {counts} right (need {self.tau})"
                )
        return out

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (``by_difficulty`` keys are difficulties as strings)."""
        return {
            "passed": self.passed,
            "n": self.n,
            "tau": self.tau,
            "attempts": self.attempts,
            "required": self.required,
            "rule": (
                f"a probe is confirmed when >= {self.tau} of {self.n} blind answers are right on "
                f"one of up to {self.attempts} fresh instances; the family passes when every "
                f"difficulty has a confirmed probe and >= {self.required} of "
                f"{len(self.probes)} probes are confirmed"
            ),
            "by_difficulty": {str(d): row for d, row in self.by_difficulty.items()},
            "probes": self.probes,
        }


BLIND_PROMPT = """You are a logic problem solver (attempt {attempt}). Read the problem carefully and \
solve it independently.

## Problem

{question}

## Requirements

1. Reason step by step.
2. End with the final answer, written exactly as the problem's answer format asks, inside \
\\boxed{{...}}, for example \\boxed{{42}}.
3. If the problem cannot be solved from the information given, answer \\boxed{{N/A}}."""


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


async def _solve(
    provider: ModelProvider,
    instance: Instance,
    sample: int,
    ledger: CostLedger | None,
    config: GenerateConfig | None,
) -> str | None:
    """One blind answer (None when the reply had no usable final answer)."""
    prompt = BLIND_PROMPT.format(attempt=sample + 1, question=instance.question)
    try:
        return await ask(
            provider,
            [{"role": "user", "content": prompt}],
            _parse_boxed,
            module="blind_review",
            ledger=ledger,
            config=config,
            max_repairs=1,
            sample_index=sample,
        )
    except StructuredOutputError:
        return None


async def _attempt(
    family: Family,
    provider: ModelProvider,
    difficulty: int,
    index: int,
    n: int,
    seed: int,
    ledger: CostLedger | None,
    config: GenerateConfig | None,
) -> dict[str, Any]:
    """One instance shown to ``n`` blind solvers: how many were right."""
    try:
        instance = make_instance(family, difficulty, split="blind", seed=seed, index=index)
    except Exception as exc:  # family code failing is a finding, not a crash
        return {"index": index, "correct": 0, "asked": 0, "error": f"no instance: {exc}"}
    answers = await asyncio.gather(
        *(_solve(provider, instance, k, ledger, config) for k in range(n))
    )
    correct = sum(int(score_answer(a, instance, family)) for a in answers)
    out: dict[str, Any] = {"index": index, "correct": correct, "asked": n}
    out["answers"] = [None if a is None else _short(normalize(a), 200) for a in answers]
    out["expected"] = instance.answer
    out["question"] = _short(instance.question, 600)
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
) -> BlindReport:
    """Gate 2b: each probe difficulty gets up to ``attempts`` fresh instances until one is
    confirmed by at least ``tau`` of ``n`` blind answers (strict scoring of the ``\\boxed{}``
    answer; a reply without one gets one repair round, then counts as wrong)."""
    if not 1 <= tau <= n:
        raise ValueError(f"tau must be between 1 and n={n}, got {tau}")
    report = BlindReport(family.id, n=n, tau=tau, attempts=attempts)
    for slot, difficulty in enumerate(difficulties):
        probe: dict[str, Any] = {"slot": slot, "difficulty": difficulty, "confirmed": False}
        probe["attempts"] = []
        for attempt in range(attempts):
            index = slot * attempts + attempt
            result = await _attempt(family, provider, difficulty, index, n, seed, ledger, config)
            probe["attempts"].append(result)
            if result["correct"] >= tau:
                result.pop("question", None)  # kept only where solvers failed
                probe["confirmed"] = True
                break
        report.probes.append(probe)
    return report


# --- all gates ---------------------------------------------------------------------------------


@dataclass
class FamilyGateRecord:
    """Every gate's outcome for one family, as recorded next to a family file.

    ``mode`` is ``static`` without a model provider (Gate 1 static and consensus only) and
    ``full`` with one (the family must then also pass the quality review and blind review).
    """

    family: str
    version: str
    mode: Literal["static", "full"]
    static: GateReport
    consensus: ConsensusReport | None = None
    review: ReviewReport | None = None
    blind: BlindReport | None = None
    skipped: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    costs: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """True when every gate the mode requires ran and passed."""
        base = self.static.passed and self.consensus is not None and self.consensus.passed
        if self.mode == "static":
            return base
        return bool(
            base and self.review and self.review.passed and self.blind and self.blind.passed
        )

    @property
    def problems(self) -> list[str]:
        """Every problem found, each prefixed with its gate."""
        out = [f"gate1_static: {p}" for p in self.static.problems]
        if self.consensus is not None:
            out += [f"consensus: {p}" for p in self.consensus.problems]
        if self.review is not None:
            out += [f"review: {p}" for p in self.review.problems]
        if self.blind is not None:
            out += [f"blind_review: {p}" for p in self.blind.problems]
        return out

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict with no timing figures (the same run gives the same JSON)."""
        static = self.static.to_json()
        static["figures"] = {
            k: v for k, v in static["figures"].items() if k != "mean_us_per_instance"
        }
        static.pop("family", None)
        return {
            "family": self.family,
            "version": self.version,
            "mode": self.mode,
            "passed": self.passed,
            "problems": self.problems,
            "gates": {
                "gate1_static": static,
                "consensus": None if self.consensus is None else self.consensus.to_json(),
                "review": None if self.review is None else self.review.to_json(),
                "blind_review": None if self.blind is None else self.blind.to_json(),
            },
            "skipped": self.skipped,
            "settings": self.settings,
            "costs": self.costs,
        }

    def write(self, path: str | Path) -> Path:
        """Write :meth:`to_json` as indented JSON; returns the path."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(
            json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        return out


def _static(family: Family, per_level: int, budget_us: float | None) -> GateReport:
    """gate1_static, with sandbox time allowed for and family-code failures as problems."""
    if budget_us is None:
        budget_us = 2000.0
        if sandbox_validators(family) is not None:
            budget_us += SANDBOX_BUDGET_US_PER_CALL * (1 + len(family.validators))
    try:
        return gate1_static(family, per_level=per_level, budget_us=budget_us)
    except Exception as exc:  # family code crashing the gate is a finding
        return GateReport(family.id, problems=[f"{type(exc).__name__}: {exc}"])


def _settings(provider: ModelProvider | None, **values: Any) -> dict[str, Any]:
    out = {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}
    if provider is not None:
        out["model"] = getattr(provider, "model", None) or getattr(provider, "name", None)
    return out


async def run_gates_async(
    family: Family,
    provider: ModelProvider | None = None,
    *,
    n: int = 5,
    tau: int = 3,
    difficulties: Sequence[int] = DEFAULT_PROBES,
    attempts: int = 3,
    per_level: int = 100,
    consensus_per_level: int = 20,
    review_difficulties: Sequence[int] = (1, 5, 10),
    seed: int = 0,
    budget_us: float | None = None,
    short_circuit: bool = True,
    ledger: CostLedger | None = None,
    config: GenerateConfig | None = None,
    record_path: str | Path | None = None,
) -> FamilyGateRecord:
    """Run the gates on ``family`` (see the module docstring); async form of :func:`run_gates`.

    Args:
        family: The family (built-in or loaded from a file).
        provider: The model for the quality review and blind review; None runs the static
            gates only.
        n: Blind solver samples per instance.
        tau: Right answers that confirm an instance.
        difficulties: Blind-review probe difficulties.
        attempts: Fresh instances a probe may use before it counts as not confirmed.
        per_level: Instances per difficulty for Gate 1 static.
        consensus_per_level: Instances per difficulty for the consensus check.
        review_difficulties: Difficulties of the samples the quality reviewer sees.
        seed: Seed of every instance the gates make.
        budget_us: Gate 1's runtime budget per instance (default 2000 us, plus 1000 us per
            sandbox call for family files).
        short_circuit: Skip the model stages once a stage failed.
        ledger: Charged with this run's model costs (the record holds them too).
        config: Sampling settings for model calls.
        record_path: Where to write the record as JSON (not written when None).
    """
    local = CostLedger()
    record = FamilyGateRecord(
        family.id,
        family.version,
        "static" if provider is None else "full",
        static=_static(family, per_level, budget_us),
        settings=_settings(
            provider,
            n=n,
            tau=tau,
            difficulties=tuple(difficulties),
            attempts=attempts,
            per_level=per_level,
            consensus_per_level=consensus_per_level,
            review_difficulties=tuple(review_difficulties),
            seed=seed,
        ),
    )
    record.consensus = check_consensus(family, per_level=consensus_per_level, seed=seed)
    if provider is None:
        record.skipped = {"review": "no model provider", "blind_review": "no model provider"}
    else:
        await _model_gates(
            record,
            family,
            provider,
            short_circuit=short_circuit,
            review_kw={"difficulties": review_difficulties, "seed": seed, "config": config},
            blind_kw={
                "n": n,
                "tau": tau,
                "difficulties": difficulties,
                "attempts": attempts,
                "seed": seed,
                "config": config,
            },
            ledger=local,
        )
    record.costs = local.to_json() if local.modules else {}
    if ledger is not None:
        ledger.merge(local)
    if record_path is not None:
        record.write(record_path)
    return record


async def _model_gates(
    record: FamilyGateRecord,
    family: Family,
    provider: ModelProvider,
    *,
    short_circuit: bool,
    review_kw: dict[str, Any],
    blind_kw: dict[str, Any],
    ledger: CostLedger,
) -> None:
    """The quality review, then the blind review, each skipped after an earlier failure."""
    failed = [
        name
        for name, ok in (
            ("gate1_static", record.static.passed),
            ("consensus", record.consensus is not None and record.consensus.passed),
        )
        if not ok
    ]
    if failed and short_circuit:
        reason = f"{' and '.join(failed)} failed"
        record.skipped = {"review": reason, "blind_review": reason}
        return
    record.review = await review_family(family, provider, ledger=ledger, **review_kw)
    if not record.review.passed and short_circuit:
        record.skipped = {"blind_review": "review failed"}
        return
    record.blind = await blind_review(family, provider, ledger=ledger, **blind_kw)


def run_gates(
    family: Family,
    provider: ModelProvider | None = None,
    *,
    n: int = 5,
    tau: int = 3,
    difficulties: Sequence[int] = DEFAULT_PROBES,
    attempts: int = 3,
    per_level: int = 100,
    consensus_per_level: int = 20,
    review_difficulties: Sequence[int] = (1, 5, 10),
    seed: int = 0,
    budget_us: float | None = None,
    short_circuit: bool = True,
    ledger: CostLedger | None = None,
    config: GenerateConfig | None = None,
    record_path: str | Path | None = None,
) -> FamilyGateRecord:
    """Run every gate on ``family`` and return the record (synchronous; see
    :func:`run_gates_async` for the arguments). Must not be called from a running event loop.
    """
    return asyncio.run(
        run_gates_async(
            family,
            provider,
            n=n,
            tau=tau,
            difficulties=difficulties,
            attempts=attempts,
            per_level=per_level,
            consensus_per_level=consensus_per_level,
            review_difficulties=review_difficulties,
            seed=seed,
            budget_us=budget_us,
            short_circuit=short_circuit,
            ledger=ledger,
            config=config,
            record_path=record_path,
        )
    )
