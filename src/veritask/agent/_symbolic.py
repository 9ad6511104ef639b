"""Symbolic assistants: the oracle that replays the witness, a do-nothing agent, a random one."""

from __future__ import annotations

import json
import random
from collections.abc import Collection
from typing import Any

from veritask.agent._base import Turn, text_message, tool_call_message
from veritask.agent._dual import ask_user_to_call
from veritask.task import WitnessCall

DONE = "All the requested changes have been made."


class OracleAgent:
    """Replays the task's witness episode, one tool call per assistant message, then reports done.

    Through the full rollout loop it must reach s_target exactly: the end-to-end counterpart of
    the package's certificate.
    """

    name = "oracle"

    def __init__(
        self, witness: list[WitnessCall], user_tools: Collection[str] = frozenset()
    ) -> None:
        self._calls = list(witness)
        self._next = 0
        self._user_tools = frozenset(user_tools)
        """The user's own tools (dual control): the oracle asks the user to make those calls."""

    async def respond(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        """The next witness call, or a closing message once all are made."""
        del messages, tools  # the witness decides every call
        if self._next < len(self._calls):
            call = self._calls[self._next]
            self._next += 1
            if call.tool in self._user_tools:  # the user makes this call
                return Turn(ask_user_to_call(f"call_{self._next}", call.tool, dict(call.args)))
            args = json.dumps(call.args, sort_keys=True)
            return Turn(tool_call_message(f"call_{self._next}", call.tool, args))
        return Turn(text_message(DONE))


class NoopAgent:
    """Answers without ever calling a tool: the floor every real agent must beat."""

    name = "noop"

    async def respond(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        """A polite message that changes nothing."""
        del messages, tools
        return Turn(text_message("I'm sorry, I can't make changes right now."))


Pool = dict[str, list[Any]]
"""Values seen in tool results, by column name."""


def observed_values(messages: list[dict[str, Any]]) -> Pool:
    """Every scalar value the tool results so far showed, by column name, in first-seen order
    (the rows a read returned, the row a write returned)."""
    pool: Pool = {}
    for message in messages:
        if message.get("role") != "tool":
            continue
        try:
            payload = json.loads(message.get("content") or "null")
        except (json.JSONDecodeError, TypeError):
            continue
        rows = payload.get("rows") if isinstance(payload, dict) else None
        for row in rows if isinstance(rows, list) else [payload]:
            if not isinstance(row, dict):
                continue
            for key, value in row.items():
                if isinstance(value, str | int | float) and not isinstance(value, bool):
                    seen = pool.setdefault(key, [])
                    if value not in seen:
                        seen.append(value)
    return pool


def _fits(schema: dict[str, Any], value: Any) -> bool:
    if "enum" in schema:
        return value in schema["enum"]
    kind = schema.get("type")
    if kind == "integer":
        return isinstance(value, int)
    if kind == "number":
        return isinstance(value, int | float)
    return isinstance(value, str) if kind == "string" else False


def _seen_value(name: str, schema: dict[str, Any], pool: Pool, rng: random.Random) -> Any:
    """A value seen under this name (or, for ``*_id``, any id seen), or None."""
    candidates = [v for v in pool.get(name, []) if _fits(schema, v)]
    if not candidates and name.endswith("_id"):
        candidates = [v for v in pool.get("id", []) if _fits(schema, v)]
    return rng.choice(candidates) if candidates else None


def _random_value(schema: dict[str, Any], rng: random.Random) -> Any:
    if "enum" in schema:
        return rng.choice(schema["enum"])
    kind = schema.get("type")
    if kind == "integer":
        low = int(schema.get("minimum", 0))
        return rng.randint(low, max(low, int(schema.get("maximum", 50))))
    if kind == "number":
        return round(rng.uniform(0, 1000), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    return rng.choice(["x", "test", "1", "A1"])


def random_arguments(
    tool: dict[str, Any], rng: random.Random, pool: Pool | None = None
) -> dict[str, Any]:
    """Schema-valid but aimless arguments: every required one and a few optional ones. With a
    ``pool`` of values seen in tool results, most arguments reuse one of them (real ids rather
    than invented ones), so random calls reach real records."""
    params = tool["function"]["parameters"]
    required = set(params.get("required", []))
    args = {}
    for name, schema in params.get("properties", {}).items():
        if name in required or rng.random() < 0.15:
            seen = _seen_value(name, schema, pool, rng) if pool and rng.random() < 0.8 else None
            args[name] = seen if seen is not None else _random_value(schema, rng)
    return args


class RandomAgent:
    """Makes a few valid, aimless tool calls per turn (seeded), then says something generic.

    Arguments mostly reuse values the agent has seen in tool results (ids, names, amounts), so
    its writes hit real records: a baseline that moves the state, unlike ``noop``, without a
    plan."""

    name = "random"

    def __init__(self, seed: int, calls_per_turn: int = 3) -> None:
        self._rng = random.Random(seed)
        self._calls_per_turn = calls_per_turn
        self._made = 0
        self._count = 0

    async def respond(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        """A random tool call, or a text turn after ``calls_per_turn`` calls."""
        if tools and self._made < self._calls_per_turn:
            self._made += 1
            self._count += 1
            tool = self._rng.choice(tools)
            pool = observed_values(messages)
            args = json.dumps(random_arguments(tool, self._rng, pool), sort_keys=True)
            return Turn(tool_call_message(f"call_{self._count}", tool["function"]["name"], args))
        self._made = 0
        return Turn(text_message("I have looked into it. Is there anything else?"))
