"""Synthesis and evaluation plans: what a stream asks for, and how its candidates are judged.

Both are pydantic records with a schema version and the iteration they belong to; a stream
stores the pair it ran with in every iteration's artifact, so the history of a plan is the list
of its versions. Weights are the knobs symbolic reflection turns: a candidate task is preferred
in proportion to the weights of its rules, tool-use patterns, user archetype and difficulty.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

PLAN_SCHEMA: Literal[1] = 1
"""Version of the plan format (stored in every plan)."""

Tier = Literal["L1", "L2", "L3"]
TIERS: tuple[Tier, ...] = ("L1", "L2", "L3")
Archetype = Literal["mismatch", "entangled", "rookie", "edge"]
ARCHETYPES: tuple[Archetype, ...] = ("mismatch", "entangled", "rookie", "edge")

FAILURE_TAXONOMY = (
    "certificate",
    "ungrounded",
    "spoiler",
    "duplicate",
    "difficulty",
    "checker",
    "model",
    "TASK",
    "TRAJECTORY",
)
"""Why a candidate or a trajectory failed: the task verification checks, then the two
attributions of a failed trajectory."""


class _Plan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = PLAN_SCHEMA
    stream: str
    """The stream the plan drives (``plan-00``)."""
    iteration: int = Field(default=0, ge=0)
    """The iteration that runs with this version (0: the initial plan)."""


class SynthesisPlan(_Plan):
    """What to synthesize: domains, a complexity tier, rules, tool-use patterns, archetypes."""

    domains: list[str] = Field(min_length=1)
    tier: Tier
    """The complexity tier the stream centers on."""
    difficulty_mix: dict[Tier, float]
    """Relative weight of each difficulty among accepted tasks."""
    rules: dict[str, float] = Field(default_factory=dict)
    """Required rules (rule id -> weight); a candidate exercising none of them scores lower."""
    tool_patterns: dict[str, float] = Field(default_factory=dict)
    """Tool-use patterns (task tags such as ``multi-step``, ``refusal``) -> weight."""
    archetypes: dict[Archetype, float] = Field(min_length=1)
    """User archetypes -> weight; a candidate whose user is another archetype is not taken."""
    styles: list[str] = Field(default_factory=list)
    """Stylistic constraints on user instructions (free text; used by model roles)."""
    candidates: int = Field(default=40, ge=1)
    """Candidates synthesized per domain and iteration."""
    batch: int = Field(default=8, ge=1)
    """At most this many candidates go on to task verification per iteration."""
    notes: str = ""
    """Why the plan is what it is (a model's rationale, or the reflection that made it)."""


class EvaluationPlan(_Plan):
    """How to judge: rubrics, a failure taxonomy and thresholds."""

    rubrics: list[str] = Field(default_factory=list)
    failure_taxonomy: list[str] = Field(default_factory=lambda: list(FAILURE_TAXONOMY))
    min_difficulty: Tier = "L1"
    max_difficulty: Tier = "L3"
    require_grounded: bool = True
    """Reject a candidate whose text does not determine its target."""
    min_boundary_hits: int = Field(default=0, ge=0)
    success_reward: float = Field(default=1.0, gt=0.0, le=1.0)
    """A trajectory succeeds when its reward is at least this."""

    @model_validator(mode="after")
    def _range(self) -> EvaluationPlan:
        if TIERS.index(self.min_difficulty) > TIERS.index(self.max_difficulty):
            raise ValueError("min_difficulty is above max_difficulty")
        return self


class PlanPair(BaseModel):
    """One stream's synthesis and evaluation plan."""

    model_config = ConfigDict(extra="forbid")

    synthesis: SynthesisPlan
    evaluation: EvaluationPlan

    @property
    def stream(self) -> str:
        """The stream both plans drive."""
        return self.synthesis.stream

    def next_version(self) -> PlanPair:
        """The same plans, numbered for the next iteration."""
        k = self.synthesis.iteration + 1
        return PlanPair(
            synthesis=self.synthesis.model_copy(update={"iteration": k}),
            evaluation=self.evaluation.model_copy(update={"iteration": k}),
        )


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for key in sorted(value):
            _flatten(f"{prefix}.{key}" if prefix else str(key), value[key], out)
    else:
        out[prefix] = value


def plan_diff(old: PlanPair, new: PlanPair) -> dict[str, list[Any]]:
    """Fields that differ between two versions (dotted paths -> ``[old, new]``), the iteration
    number and notes left out; a key missing on one side shows as None."""
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    skip = {"synthesis.iteration", "evaluation.iteration", "synthesis.notes"}
    _flatten("", old.model_dump(mode="json"), before)
    _flatten("", new.model_dump(mode="json"), after)
    return {
        key: [before.get(key), after.get(key)]
        for key in sorted(set(before) | set(after))
        if key not in skip and before.get(key) != after.get(key)
    }
