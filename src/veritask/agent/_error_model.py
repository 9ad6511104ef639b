"""The faithful agent with a seeded error model: a reference solver that can fail.

The faithful agent never fails a grounded task, so a run that attributes failures with it can
never call a task unsolvable. :class:`ErringAgent` wraps it and, per episode, decides once from
the episode seed whether this episode errs (probability ``rate``) and how (one of ``kinds``):

- ``wrong-argument``: every write the agent makes carries one argument changed (the first
  argument, in name order, that is not the record key: a number plus one, a text with ``-x``
  appended, a boolean flipped).
- ``premature-end``: at its first write the agent says it is done instead, and stays done.
- ``skip-confirmation``: after its first write the agent neither confirms the change nor takes
  the user's remaining requests; it says it is done.

An episode that does not err is the faithful agent's, call for call. The same seed gives the
same decision, so runs stay deterministic.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any, Literal

from veritask.agent._base import Turn, text_message
from veritask.agent._faithful import FaithfulAgent
from veritask.policy import DomainSpec

ErrorKind = Literal["wrong-argument", "premature-end", "skip-confirmation"]
ERROR_KINDS: tuple[ErrorKind, ...] = ("premature-end", "skip-confirmation", "wrong-argument")
DONE = "All done on my side."


@dataclass(frozen=True)
class ErrorModel:
    """How often the agent errs, and which errors it makes."""

    rate: float = 0.0
    kinds: tuple[ErrorKind, ...] = ERROR_KINDS

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"error rate must be in [0, 1], got {self.rate}")
        if not self.kinds:
            raise ValueError("give at least one error kind")
        unknown = sorted(set(self.kinds) - set(ERROR_KINDS))
        if unknown:
            raise ValueError(f"unknown error kinds {unknown}; choose from {list(ERROR_KINDS)}")

    def draw(self, seed: int) -> ErrorKind | None:
        """The error of the episode with ``seed`` (None: the episode does not err)."""
        rng = random.Random(seed)
        if rng.random() >= self.rate:
            return None
        return rng.choice(sorted(self.kinds))

    def to_json(self) -> dict[str, Any]:
        """The model as a run config records it."""
        return {"rate": self.rate, "kinds": sorted(self.kinds)}


def parse_kinds(text: str) -> tuple[ErrorKind, ...]:
    """Comma-separated kind names -> kinds (raises ValueError on an unknown name)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = sorted(set(names) - set(ERROR_KINDS))
    if unknown or not names:
        raise ValueError(f"unknown error kinds {unknown or names}; choose from {list(ERROR_KINDS)}")
    return tuple(k for k in ERROR_KINDS if k in names)


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return f"{value}-x"
    return value


class ErringAgent:
    """The faithful agent, erring in the episodes its :class:`ErrorModel` picks."""

    name = "faithful"

    def __init__(self, spec: DomainSpec, errors: ErrorModel, seed: int) -> None:
        self.inner = FaithfulAgent(spec)
        self.error: ErrorKind | None = errors.draw(seed)
        self.wrote = False
        self.done = False

    async def respond(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        """The faithful agent's turn, or the episode's error in its place."""
        if self.done:
            return Turn(text_message(DONE))
        turn = await self.inner.respond(messages, tools)
        call = self._write_call(turn)
        if call is None or self.error is None:
            return turn
        if self.error == "premature-end" or (self.error == "skip-confirmation" and self.wrote):
            self.done = True
            return Turn(text_message(DONE))
        self.wrote = True
        if self.error == "wrong-argument":
            self._corrupt(call)
        return turn

    def _write_call(self, turn: Turn) -> dict[str, Any] | None:
        calls = turn.message.get("tool_calls") or []
        if not calls:
            if self.error == "skip-confirmation" and self.wrote:
                self.done = True
                turn.message.clear()
                turn.message.update(text_message(DONE))
            return None
        function: dict[str, Any] = calls[0]["function"]
        spec = self.inner.tools.get(function["name"])
        return function if spec is not None and spec.writes else None

    def _corrupt(self, function: dict[str, Any]) -> None:
        args = json.loads(function["arguments"])
        key = self.inner.tools[function["name"]].key or "id"
        names = sorted(n for n in args if n != key)
        if names:
            args[names[0]] = _changed(args[names[0]])
        function["arguments"] = json.dumps(args, sort_keys=True)
