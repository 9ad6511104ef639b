"""The text-only gate: every question must determine its answer from its own text.

Validators read the generator's structured inputs, so they cannot see a question whose text
drops a fact the answer depends on (a parent link without the parent's role, say). A family's
``text_solver`` reads only the rendered question: it parses the text back into the facts it
states and solves from those, and raises :class:`Undetermined` when the text admits no answer or
more than one. The gate runs it on every instance and compares its answer with the validator
pool's; a disagreement, an undetermined question or a solver error fails the family, naming the
instance (difficulty, split, seed, index) so it can be rebuilt with ``make_instance``.

The same module measures how many questions adjacent difficulties share for the same seed and
index range: a level that repeats more than ``MAX_OVERLAP`` of the level below is not a new
level.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from veritask.logic._family import Family, Instance, canonical, make_instance, normalize

MAX_OVERLAP = 0.05
"""The largest share of questions two adjacent difficulties may have in common."""
LISTED = 10
"""How many failing instances a report names one by one (the rest are counted)."""


class Undetermined(ValueError):
    """The question text admits no answer, or more than one."""


def between(text: str, start: str, end: str | None = None) -> str:
    """The part of ``text`` after the first ``start`` and before the next ``end`` (or the end).

    Raises:
        ValueError: ``start`` or ``end`` is not in the text.
    """
    begin = text.index(start) + len(start)
    if end is None:
        return text[begin:]
    return text[begin : text.index(end, begin)]


def findall(pattern: str, text: str) -> list[Any]:
    """``re.findall`` that raises when nothing matches (a parse that found no facts)."""
    found = re.findall(pattern, text)
    if not found:
        raise ValueError(f"no match for {pattern!r}")
    return found


@dataclass
class TextOnlyResult:
    """What the text-only check found on a set of instances.

    Attributes:
        checked: Instances the text solver ran on.
        undetermined: Instances whose text admits no answer or several.
        disagreements: Instances where the solver's answer differs from the pool's.
        errors: Instances where the solver failed otherwise (a parse error, say).
        problems: The first ``LISTED`` failures, one line each naming the instance.
        seconds: Time spent in the text solver.
    """

    checked: int = 0
    undetermined: int = 0
    disagreements: int = 0
    errors: int = 0
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failures(self) -> int:
        """Undetermined, disagreeing and erroring instances together."""
        return self.undetermined + self.disagreements + self.errors

    def summary(self) -> list[str]:
        """The listed problems, plus a count line when more failed than are listed."""
        extra = self.failures - len(self.problems)
        more = [f"text-only: {extra} more failing instance(s) not listed"] if extra > 0 else []
        return [*self.problems, *more]

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (no timing, so equal runs give equal records)."""
        return {
            "checked": self.checked,
            "undetermined": self.undetermined,
            "disagreements": self.disagreements,
            "errors": self.errors,
            "problems": self.summary(),
        }


def _name(inst: Instance) -> str:
    return f"d={inst.difficulty} #{inst.index} (split {inst.split}, seed {inst.seed})"


def _agrees(family: Family, inst: Instance, answer: Any) -> bool:
    text = normalize(canonical(answer))
    if family.checker is not None:
        return family.checker(dict(inst.inputs), text)
    return text == normalize(inst.answer)


def check_text_only(family: Family, instances: Iterable[Instance]) -> TextOnlyResult:
    """Run ``family.text_solver`` on each instance's question and compare with its answer.

    A family without a text solver gives an empty result (``checked`` 0).
    """
    result = TextOnlyResult()
    solver = family.text_solver
    if solver is None:
        return result
    start = time.perf_counter()
    for inst in instances:
        result.checked += 1
        problem = ""
        try:
            answer = solver(inst.question)
        except Undetermined as exc:
            result.undetermined += 1
            problem = f"the question text does not determine the answer: {exc}"
        except Exception as exc:  # family code failing is a finding, not a crash
            result.errors += 1
            problem = f"the text solver failed: {type(exc).__name__}: {exc}"
        else:
            if not _agrees(family, inst, answer):
                result.disagreements += 1
                problem = (
                    f"the text solver answered {canonical(answer)!r}, "
                    f"the validator pool {inst.answer!r}"
                )
        if problem and len(result.problems) < LISTED:
            result.problems.append(f"{_name(inst)}: {problem}")
    result.seconds = time.perf_counter() - start
    return result


def adjacent_overlap(questions: Mapping[int, Sequence[str]]) -> dict[int, float]:
    """For each difficulty ``d`` whose ``d + 1`` is present: the share of level ``d + 1``'s
    distinct questions that also occur at level ``d`` (normalized)."""
    out: dict[int, float] = {}
    for low, high in pairwise(sorted(questions)):
        if high != low + 1:
            continue
        lower = {normalize(q) for q in questions[low]}
        upper = {normalize(q) for q in questions[high]}
        out[low] = len(lower & upper) / max(len(upper), 1)
    return out


def overlap_problems(overlap: Mapping[int, float], max_share: float = MAX_OVERLAP) -> list[str]:
    """One problem per adjacent pair of levels sharing more than ``max_share`` of questions."""
    return [
        f"d={d} and d={d + 1} share {share:.1%} of questions (more than {max_share:.0%}): "
        "the higher level is not a new level"
        for d, share in sorted(overlap.items())
        if share > max_share
    ]


NO_TEXT_SOLVER = (
    "no text solver: every family must show that its questions are answerable from their text "
    "alone (a family file defines solve_text(question))"
)


@dataclass
class TextOnlyGate:
    """The text-only check and the adjacent-level overlap of one family.

    Attributes:
        family: The family id.
        text: The text-only result (``checked`` 0 when the family has no text solver).
        overlap: Difficulty ``d`` -> the share of ``d + 1``'s questions also at ``d``.
        has_solver: Whether the family has a text solver.
    """

    family: str
    text: TextOnlyResult
    overlap: dict[int, float]
    has_solver: bool

    @property
    def problems(self) -> list[str]:
        """Every problem: a missing text solver or its failures, then overlapping levels."""
        missing = [] if self.has_solver else [NO_TEXT_SOLVER]
        return [*missing, *self.text.summary(), *overlap_problems(self.overlap)]

    @property
    def passed(self) -> bool:
        """True when no problem was found."""
        return not self.problems

    def figures(self) -> dict[str, Any]:
        """Figures for a gate report (no timing: equal runs give equal records; the text
        solver's cost is measured by ``benchmarks/logic_levels.py``)."""
        return {
            "text_only": self.text.to_json() if self.has_solver else "no text solver",
            "max_adjacent_overlap": round(max(self.overlap.values(), default=0.0), 4),
        }


def text_only_gate_on(family: Family, instances: Sequence[Instance]) -> TextOnlyGate:
    """The text-only check and level overlap on instances already made (one seed, the same
    index range at every difficulty, as Gate 1 makes them)."""
    by_level: dict[int, list[str]] = {}
    for inst in instances:
        by_level.setdefault(inst.difficulty, []).append(inst.question)
    return TextOnlyGate(
        family.id,
        check_text_only(family, instances),
        adjacent_overlap(by_level),
        family.text_solver is not None,
    )


def text_only_gate(
    family: Family, per_level: int = 100, *, seed: int = 0, split: str = "gate1"
) -> TextOnlyGate:
    """Make ``per_level`` instances at each difficulty 1-10 (indices ``0..per_level-1``) and
    run the text-only check and the level-overlap check on them."""
    instances = [
        make_instance(family, d, split=split, seed=seed, index=i)
        for d in range(1, 11)
        for i in range(per_level)
    ]
    return text_only_gate_on(family, instances)


def text_only_records(
    records: Iterable[tuple[int, Mapping[str, Any]]], families: Mapping[str, Family]
) -> dict[str, Any]:
    """The text-only check over dataset lines (``logic report``): each line's question is
    solved by its family's text solver and compared with the line's answer.

    Returns:
        ``checked``, ``undetermined``, ``disagreements``, ``errors``, ``no_solver`` (lines
        whose family is unknown or has no text solver) and ``problems`` (the first
        ``LISTED``, each naming the line).
    """
    total = TextOnlyResult()
    no_solver = 0
    for number, record in records:
        family = families.get(str(record.get("family")))
        if family is None or family.text_solver is None:
            no_solver += 1
            continue
        inst = _record_instance(record)
        one = check_text_only(family, [inst])
        total.checked += 1
        total.undetermined += one.undetermined
        total.disagreements += one.disagreements
        total.errors += one.errors
        if one.problems and len(total.problems) < LISTED:
            total.problems.append(f"line {number}: {family.id} {one.problems[0]}")
    return {**total.to_json(), "no_solver": no_solver}


def _record_instance(record: Mapping[str, Any]) -> Instance:
    return Instance(
        family=str(record["family"]),
        version=str(record.get("version", "")),
        split=str(record.get("split", "")),
        seed=int(record.get("seed", 0)),
        index=int(record.get("index", 0)),
        difficulty=int(record.get("difficulty", 1)),
        question=str(record["question"]),
        inputs=dict(record.get("inputs") or {}),
        answer=str(record["answer"]),
    )
