"""What an exploration produces: the goals reached, the refusals met, and the witness."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from veritask.env import ToolResult
from veritask.policy import Rule, Transaction
from veritask.task import Ask, WitnessCall


@dataclass
class Hit:
    """A rejected attempt and what changed to get past it."""

    rule: str
    changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """param -> (value tried, value accepted)."""
    ask: Ask | None = None
    """The revised request the user accepts after the refusal (built when it is made)."""
    created: SubGoalTrace | None = None
    """A parent record opened for the revised request (after a quota)."""


@dataclass
class SubGoalTrace:
    """One user goal as it was achieved."""

    tx: Transaction
    args: dict[str, Any]
    result: dict[str, Any]
    target: dict[str, Any] | None
    hits: list[Hit] = field(default_factory=list)
    decided: set[str] = field(default_factory=set)
    created_parent: SubGoalTrace | None = None
    ask: Ask | None = None
    """The user's first request, built on the state it met."""


@dataclass
class Episode:
    """A whole exploration: the witness, the goals reached, and the target state."""

    actor: Any
    witness: list[WitnessCall]
    subgoals: list[SubGoalTrace]
    refusal: tuple[Transaction, dict[str, Any], dict[str, Any] | None, Rule] | None = None
    """A goal the policy forbids outright, when the whole task is that refusal."""
    declined: tuple[Transaction, dict[str, Any], dict[str, Any] | None, Rule] | None = None
    """A first goal the policy forbade, which the user gave up before the goals that follow."""
    target: bytes = b""
    refused_ask: Ask | None = None
    """The request of ``refusal`` or ``declined``, built on the state it met."""
    declined_at: int = 0
    """Where ``declined`` stands among the goals: first (0), or after the goals whose state it
    was refused on (a decision taken twice, a quota the user's own earlier request filled)."""

    @property
    def rejected(self) -> list[str]:
        """Ids of the rules that rejected witness calls, in order."""
        return [
            c.error["violated_rule"]
            for c in self.witness
            if not c.ok and c.error and c.error.get("violated_rule")
        ]


def witness_call(tool: str, args: Any, result: ToolResult) -> WitnessCall:
    """The witness record of one call and its result (arguments that are not an object: none)."""
    payload = result.to_json()
    return WitnessCall(
        tool=tool,
        args=dict(args) if isinstance(args, dict) else {},
        ok=result.ok,
        result=payload["result"],
        error=payload["error"],
    )
