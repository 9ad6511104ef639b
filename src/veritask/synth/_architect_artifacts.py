"""What each Architect stage produces, the verifier's errors, and the run report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from veritask.model import CostLedger
from veritask.policy import Effect, Rule, Table, Transaction, Wiki
from veritask.policy._spec import Identifier, RuleId, Scalar, Tier

Stage = Literal["plan", "wiki", "tables", "rules"]
STAGES: tuple[Stage, ...] = ("plan", "wiki", "tables", "rules")

RuleKind = Literal[
    "quota",
    "state_machine",
    "immutability",
    "permission",
    "prerequisite",
    "calculation",
    "policy",
    "integrity",
    "side_effect",
]
"""What a planned rule enforces; ``side_effect`` is bookkeeping the system does (an effect)."""

COMPLEX_KINDS: frozenset[str] = frozenset({"quota", "state_machine", "immutability", "permission"})
"""The kinds of decision logic that keep a domain from being a shallow CRUD application."""

Statement = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class _Artifact(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PlannedEntity(_Artifact):
    """A table the domain needs, with its tier (reference catalog, entity, transaction)."""

    name: Identifier
    tier: Tier
    description: str = ""


class PlannedRule(_Artifact):
    """A business rule of the plan; its id becomes a rule (or effect) id of the spec.

    Attributes:
        seed_rules: The seed rules (1-based) this rule implements.
        threshold: The number the rule guards, when it has one (a quota's N).
    """

    id: RuleId
    kind: RuleKind
    entity: Identifier
    statement: Statement
    seed_rules: list[int] = Field(default_factory=list)
    threshold: int | float | None = None


class PlanTargets(_Artifact):
    """The counts the plan commits to."""

    tables: int
    rules: int
    effects: int


class ComplexityPlan(_Artifact):
    """Stage 1: the blueprint (entities, actors, enumerated rules, target counts)."""

    entities: list[PlannedEntity] = Field(min_length=1)
    actors: list[Identifier] = Field(min_length=1)
    rules: list[PlannedRule] = Field(min_length=1)
    targets: PlanTargets


class TablesArtifact(_Artifact):
    """Stage 3: the ``tables`` part of a DomainSpec, its actor and seed rows."""

    actor: Identifier | None = None
    tables: list[Table] = Field(min_length=1)
    seed: dict[Identifier, list[dict[str, Scalar | None]]] = Field(default_factory=dict)


class RulesArtifact(_Artifact):
    """Stage 4: everything a DomainSpec needs beyond its tables."""

    description: str = ""
    wiki: Wiki
    rules: list[Rule] = Field(default_factory=list)
    effects: list[Effect] = Field(default_factory=list)
    transactions: list[Transaction] = Field(default_factory=list)


@dataclass(frozen=True)
class StageError:
    """One finding of a stage verifier, in the structured form sent back to the model.

    Attributes:
        stage: ``plan``, ``wiki``, ``tables`` or ``rules``.
        check: A stable id of the check that failed (e.g. ``trigger_compile``).
        message: What is wrong, with the evidence (SQLite's message, the call that passed).
        item: The offending item (``rule FLIGHT_QUOTA``, ``table users``), when there is one.
    """

    stage: str
    check: str
    message: str
    item: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The error as a JSON-ready dict."""
        return {
            "stage": self.stage,
            "check": self.check,
            "item": self.item,
            "message": self.message,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StageError:
        """Read back :meth:`to_json`."""
        item = data.get("item")
        return cls(
            str(data["stage"]),
            str(data["check"]),
            str(data["message"]),
            None if item is None else str(item),
        )

    def __str__(self) -> str:
        where = f" {self.item}:" if self.item else ""
        return f"[{self.check}]{where} {self.message}"


@dataclass
class RoundRecord:
    """One Check-Fix-Verify round: how many model calls it took and what the verifier found."""

    round: int
    model_calls: int
    errors: list[StageError] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "round": self.round,
            "model_calls": self.model_calls,
            "passed": not self.errors,
            "errors": [e.to_json() for e in self.errors],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RoundRecord:
        """Read back :meth:`to_json` (``passed`` follows from the errors)."""
        errors = [StageError.from_json(e) for e in data.get("errors", [])]
        return cls(int(data["round"]), int(data["model_calls"]), errors)


@dataclass
class StageReport:
    """The rounds of one stage and whether it was accepted."""

    stage: str
    max_rounds: int
    rounds: list[RoundRecord] = field(default_factory=list)
    passed: bool = False

    @property
    def rounds_used(self) -> int:
        """How many rounds ran."""
        return len(self.rounds)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "stage": self.stage,
            "passed": self.passed,
            "rounds_used": self.rounds_used,
            "max_rounds": self.max_rounds,
            "rounds": [r.to_json() for r in self.rounds],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StageReport:
        """Read back :meth:`to_json` (``rounds_used`` follows from the rounds)."""
        rounds = [RoundRecord.from_json(r) for r in data.get("rounds", [])]
        return cls(str(data["stage"]), int(data["max_rounds"]), rounds, bool(data["passed"]))


@dataclass
class ArchitectReport:
    """What an Architect run did: per-stage rounds and errors, the spec it made, its cost."""

    domain: str
    scenario: str
    stages: list[StageReport] = field(default_factory=list)
    passed: bool = False
    failure: str | None = None
    spec: dict[str, Any] | None = None
    cost: CostLedger = field(default_factory=CostLedger)
    resumed: list[str] = field(default_factory=list)
    """Stages restored from a run directory instead of run again (not part of the JSON report,
    which equals that of an uninterrupted run)."""

    def stage(self, name: str) -> StageReport:
        """The report of one stage; KeyError when it did not run."""
        for report in self.stages:
            if report.stage == name:
                return report
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form (keys: domain, scenario, passed, failure, spec, stages, cost)."""
        return {
            "domain": self.domain,
            "scenario": self.scenario,
            "passed": self.passed,
            "failure": self.failure,
            "spec": self.spec,
            "stages": [s.to_json() for s in self.stages],
            "cost": self.cost.to_json(),
        }
