"""Gate 1, static part (SSLogic section 3.3): checks a family must pass before anything else.

- The template's slots match what the generator fills.
- Every answer is a non-empty canonical string.
- The generator is deterministic under the same RNG.
- Generation plus the validator pool fits a runtime budget.
- Answers are not degenerate, judged against the answer space, and the honest gates of
  ``veritask.logic._honesty`` pass: few copyable answers, no copy guesser above chance, no
  hidden fact, at least two distinct validators.
- The validator pool agrees on every instance.
- The text-only solver, reading only the question, agrees with the pool on every instance
  (``veritask.logic._textonly``), and adjacent difficulties share at most 5% of questions.

The LLM quality review (the other half of Gate 1) and Gate 2's blind review go through the model
provider and come with the evolution loop.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from veritask.logic._family import ConsensusError, Family, Instance, make_instance
from veritask.logic._honesty import MAX_SHARE, honesty_gate
from veritask.logic._textonly import text_only_gate_on

__all__ = ["MAX_SHARE", "GateReport", "gate1_static"]


@dataclass
class GateReport:
    """What a gate found: passed, with one line per problem and the measured figures."""

    family: str
    problems: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """True when no problem was found."""
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "family": self.family,
            "passed": self.passed,
            "problems": self.problems,
            "figures": self.figures,
        }


def _deterministic(family: Family, difficulty: int) -> bool:
    first = family.generate(difficulty, random.Random(1234))
    second = family.generate(difficulty, random.Random(1234))
    return first == second


def gate1_static(family: Family, per_level: int = 100, budget_us: float = 2000.0) -> GateReport:
    """Run Gate 1's static checks on ``per_level`` instances at each difficulty 1-10.

    The runtime budget is judged on CPU time (:meth:`Family.cpu_seconds`: this process's, plus
    the sandboxed worker's for a family file), so a busy machine does not fail a family."""
    report = GateReport(family.id)
    if len(family.validators) < 2:
        report.problems.append("needs at least two validators")
    clock = family.cpu_seconds
    start = clock()
    made = 0
    instances: list[Instance] = []
    for difficulty in range(1, 11):
        if not _deterministic(family, difficulty):
            report.problems.append(
                f"d={difficulty}: the generator is not deterministic under the same rng"
            )
        for index in range(per_level):
            try:
                inst = make_instance(family, difficulty, split="gate1", seed=0, index=index)
            except ConsensusError as exc:
                report.problems.append(f"d={difficulty} #{index}: {exc}")
                continue
            except ValueError as exc:  # slot count mismatch and similar
                report.problems.append(f"d={difficulty} #{index}: {exc}")
                break
            made += 1
            instances.append(inst)
            if not inst.answer:
                report.problems.append(f"d={difficulty} #{index}: empty answer")
    elapsed_us = (clock() - start) * 1e6 / max(made, 1)
    report.figures = {"instances": made, "mean_us_per_instance": round(elapsed_us, 1)}
    honest = honesty_gate(family, instances)
    report.problems.extend(honest.problems)
    report.figures.update(honest.figures())
    text_only = text_only_gate_on(family, instances)
    report.problems.extend(text_only.problems)
    report.figures.update(text_only.figures())
    if elapsed_us > budget_us:
        report.problems.append(
            f"{elapsed_us:.0f} us per instance exceeds the {budget_us:.0f} us budget"
        )
    return report
