"""What the procedural generators share: a draft task, the read tools, customer words for
payment methods and names (``_procedural_gen.py``, ``_procedural_air.py``)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from veritask.env import Environment

Json = dict[str, Any]


@dataclass
class Draft:
    """One candidate task: lookups, the write, and the words of the request."""

    lookups: list[tuple[str, Json]]
    tool: str
    args: Json
    goal: str
    request: str
    known: list[str] = field(default_factory=list)


Builder = Callable[["Reader", Json, random.Random], Draft | None]


class Reader:
    """Read tools of the domain, called through the engine (what the agent sees)."""

    def __init__(self, env: Environment) -> None:
        self.env = env

    def get(self, tool: str, args: Json) -> Any:
        result = self.env.call(tool, args)
        return result.result if result.ok else None


def options_words(options: Any) -> str:
    if isinstance(options, dict):
        return ", ".join(f"{v} {k}" if k != "style" else f"{v} style" for k, v in options.items())
    return str(options)


def card_words(method: Json) -> str:
    source = method.get("source")
    if source == "credit_card":
        return f"{method.get('brand', 'credit')} card ending in {method.get('last_four')}"
    if source == "gift_card":
        return "gift card"
    if source == "paypal":
        return "PayPal account"
    if source == "certificate":
        return "travel certificate"
    return str(source)


def methods_of(user: Json) -> list[tuple[str, Json]]:
    methods = user.get("payment_methods") or {}
    return sorted(methods.items()) if isinstance(methods, dict) else []


def name_of(user: Json) -> str:
    name = user.get("name") or {}
    return f"{name.get('first_name', '')} {name.get('last_name', '')}".strip()
