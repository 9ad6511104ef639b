"""The result types of verification: one component's result and the composite verdict."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any


class VerificationError(ValueError):
    """A reward-basis component that cannot be evaluated (unknown name or missing inputs).

    Raised instead of scoring, so a component that was listed but not evaluated never passes
    silently.
    """


@dataclass
class ComponentResult:
    """The outcome of one reward-basis component.

    Attributes:
        name: The component's reward-basis name (``state_exact``, ``actions``, ...).
        score: Its score in [0, 1]; every built-in component is binary.
        passed: Whether the component is satisfied.
        detail: A human-readable explanation, naming what is missing or wrong on failure.
    """

    name: str
    score: float
    passed: bool
    detail: str

    @classmethod
    def binary(cls, name: str, passed: bool, detail: str) -> ComponentResult:
        """A pass/fail result scored 1.0 or 0.0."""
        return cls(name, 1.0 if passed else 0.0, passed, detail)


@dataclass
class Verdict:
    """The composite verdict on a trajectory: the product of its components' scores.

    Attributes:
        reward: Product of the component scores.
        components: One result per reward-basis component, in basis order.
    """

    reward: float
    components: list[ComponentResult] = field(default_factory=list)

    @classmethod
    def of(cls, components: list[ComponentResult]) -> Verdict:
        """The verdict whose reward is the product of ``components``' scores."""
        return cls(math.prod(c.score for c in components), components)

    @property
    def passed(self) -> bool:
        """True when every component passed."""
        return all(c.passed for c in self.components)

    def breakdown(self) -> dict[str, float]:
        """Component name -> score (what ``Trajectory.reward_breakdown`` stores)."""
        return {c.name: c.score for c in self.components}

    def to_json(self) -> dict[str, Any]:
        """``{"reward", "components": [{"name", "score", "passed", "detail"}]}``."""
        return {"reward": self.reward, "components": [asdict(c) for c in self.components]}
