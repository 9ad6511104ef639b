"""Solvability by difficulty: a model's pass@k per level of a family (SSLogic's solvability
curve).

For each level, ``per_level`` instances (split ``solvability``, so the same instances on every
run) are each answered ``n`` times by the model with the blind-review prompt (the question
alone, a final answer in ``\\boxed{}``); every answer is scored strictly by
:func:`~veritask.logic.score_answer`, and the level's pass@k is the mean unbiased estimate
over its instances for each requested k. Any registered provider works (``scripted`` and
``replay`` offline).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from veritask.logic._family import Family, make_instance, score_answer
from veritask.logic._review import _solve
from veritask.model import CostLedger, GenerateConfig, ModelProvider
from veritask.verify import pass_at_k


@dataclass
class SolvabilityReport:
    """pass@k per level of one family.

    Attributes:
        family: The family id.
        n: Answers drawn per instance.
        ks: The k values reported (each at most ``n``).
        levels: Level -> ``{"instances", "correct", "asked", "pass@K": ...}``.
    """

    family: str
    n: int
    ks: tuple[int, ...]
    levels: dict[int, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (level keys become strings)."""
        return {
            "family": self.family,
            "n": self.n,
            "ks": list(self.ks),
            "levels": {str(d): v for d, v in self.levels.items()},
        }


async def _level(
    family: Family,
    provider: ModelProvider,
    level: int,
    settings: tuple[int, int, Sequence[int]],
    ledger: CostLedger | None,
    config: GenerateConfig | None,
) -> dict[str, Any]:
    per_level, n, ks = settings
    counts: list[int] = []
    for index in range(per_level):
        inst = make_instance(family, level, split="solvability", index=index)
        answers = await asyncio.gather(
            *(_solve(provider, inst, s, ledger, config) for s in range(n))
        )
        counts.append(sum(int(score_answer(a, inst, family)) for a in answers))
    out: dict[str, Any] = {"instances": per_level, "correct": sum(counts), "asked": n * per_level}
    for k in ks:
        out[f"pass@{k}"] = round(sum(pass_at_k(n, c, k) for c in counts) / len(counts), 4)
    return out


async def solvability(
    family: Family,
    provider: ModelProvider,
    *,
    levels: Sequence[int] = tuple(range(1, 11)),
    per_level: int = 5,
    n: int = 4,
    ks: Sequence[int] = (1,),
    ledger: CostLedger | None = None,
    config: GenerateConfig | None = None,
) -> SolvabilityReport:
    """The model's pass@k at each level of ``family``.

    Args:
        family: The family.
        provider: Any model provider.
        levels: Difficulties to measure.
        per_level: Instances per level.
        n: Answers drawn per instance.
        ks: The k values to report, each between 1 and ``n``.
        ledger: Counts the model calls and their cost.
        config: Generation settings for the calls.

    Returns:
        The report.

    Raises:
        ValueError: A k outside 1..n, or per_level below 1.
    """
    if per_level < 1 or any(not 1 <= k <= n for k in ks):
        raise ValueError(f"need per_level >= 1 and every k in 1..{n}")
    report = SolvabilityReport(family.id, n, tuple(ks))
    for level in levels:
        settings = (per_level, n, ks)
        report.levels[level] = await _level(family, provider, level, settings, ledger, config)
    return report
