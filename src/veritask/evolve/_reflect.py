"""Symbolic reflection: shift a stream's plan weights by what failed, and why.

Every task-side failure (a candidate that failed task verification, a trajectory attributed
TASK) counts against the features of its task; every trajectory attributed TRAJECTORY (the task
is solvable from its text, the assistant failed) counts for them. A feature is a rule the task
exercises, one of its tool-use patterns, its user archetype or its difficulty. A feature with
more task-side failures than assistant failures has its weight halved (away from what makes bad
tasks); one with more assistant failures is multiplied by 1.5, and a rule or archetype the plan
did not name yet joins it with weight 1 (toward what the assistant fails on: a curriculum).
The evaluation plan moves too: a stream that verified nothing because of the difficulty range
widens it, and a stream whose assistant solved everything raises its lower bound.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from veritask.evolve._plans import TIERS, EvaluationPlan, PlanPair, SynthesisPlan, Tier
from veritask.task import TaskPackage

FLOOR = 0.05
"""No weight falls below this, so a feature can come back."""
CEILING = 8.0
"""No weight grows above this."""


@dataclass
class Evidence:
    """What one iteration of a stream observed, by task feature."""

    task_side: Counter[str] = field(default_factory=Counter)
    assistant_side: Counter[str] = field(default_factory=Counter)
    verification_kinds: Counter[str] = field(default_factory=Counter)
    verified: int = 0
    rolled_out: int = 0
    succeeded: int = 0

    def blame_task(self, pkg: TaskPackage) -> None:
        """A task-side failure (verification FAIL or TASK attribution)."""
        self.task_side.update(features(pkg))

    def blame_assistant(self, pkg: TaskPackage) -> None:
        """An assistant failure on a solvable task (TRAJECTORY attribution)."""
        self.assistant_side.update(features(pkg))


def features(pkg: TaskPackage) -> list[str]:
    """A task's features: ``rule:ID``, ``pattern:TAG``, ``archetype:NAME``, ``tier:Ln``."""
    return [
        *(f"rule:{r}" for r in sorted(set(pkg.rules_exercised))),
        *(f"pattern:{t}" for t in sorted(set(pkg.tags))),
        f"archetype:{pkg.user_profile.archetype}",
        f"tier:{pkg.difficulty}",
    ]


def _factor(evidence: Evidence, feature: str) -> float:
    task, assistant = evidence.task_side[feature], evidence.assistant_side[feature]
    if task > assistant:
        return 0.5
    if assistant > task:
        return 1.5
    return 1.0


def _shift(
    weights: dict[Any, float], kind: str, evidence: Evidence, grow: bool
) -> dict[Any, float]:
    """New weights for one family of features (``grow``: add names the assistant fails on)."""
    out = {
        key: round(min(CEILING, max(FLOOR, w * _factor(evidence, f"{kind}:{key}"))), 4)
        for key, w in weights.items()
    }
    if grow:
        for feature in sorted(evidence.assistant_side):
            name = feature.split(":", 1)[1]
            if (
                feature.startswith(f"{kind}:")
                and name not in out
                and _factor(evidence, feature) > 1
            ):
                out[name] = 1.0
    return dict(sorted(out.items()))


def _synthesis(plan: SynthesisPlan, evidence: Evidence) -> SynthesisPlan:
    mix = _shift(dict(plan.difficulty_mix), "tier", evidence, grow=False)
    return plan.model_copy(
        update={
            "rules": _shift(plan.rules, "rule", evidence, grow=True),
            "tool_patterns": _shift(plan.tool_patterns, "pattern", evidence, grow=False),
            "archetypes": _shift(dict(plan.archetypes), "archetype", evidence, grow=True),
            "difficulty_mix": mix,
            "notes": "symbolic reflection",
        }
    )


def _evaluation(plan: EvaluationPlan, evidence: Evidence) -> EvaluationPlan:
    low, high = TIERS.index(plan.min_difficulty), TIERS.index(plan.max_difficulty)
    if evidence.verified == 0 and evidence.verification_kinds["difficulty"] > 0:
        low, high = max(0, low - 1), min(len(TIERS) - 1, high + 1)
    elif evidence.rolled_out and evidence.succeeded == evidence.rolled_out and low < high:
        low += 1
    new_low: Tier = TIERS[low]
    new_high: Tier = TIERS[high]
    return plan.model_copy(update={"min_difficulty": new_low, "max_difficulty": new_high})


def reflect(pair: PlanPair, evidence: Evidence) -> PlanPair:
    """The next version of a stream's plans, shifted by one iteration's evidence."""
    following = pair.next_version()
    shifted = PlanPair(
        synthesis=_synthesis(following.synthesis, evidence),
        evaluation=_evaluation(following.evaluation, evidence),
    )
    return PlanPair.model_validate(shifted.model_dump(mode="json"))
