"""Replay τ²-bench actions on an imported domain and read its state back in τ²-bench's shape."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from veritask.env._environment import Environment
from veritask.policy.tau2 import export_airline, export_retail


def tau2_db(env: Environment) -> dict[str, Any]:
    """The current state as τ²-bench's database ``model_dump()`` (``FlightDB`` for an imported
    airline domain, ``RetailDB`` for retail)."""
    rows = {t.name: env.rows(t.name) for t in env.spec.tables}
    return export_airline(rows) if env.spec.name == "tau2_airline" else export_retail(rows)


def tau2_content(result: Any, ok: bool, message: str) -> Any:
    """A tool result as τ²-bench's tool message carries it, parsed: the JSON of the result, a
    string as it is, or ``Error: <message>`` for a refused call."""
    if not ok:
        return f"Error: {message}"
    return result if isinstance(result, str) else json.loads(json.dumps(result))


def replay(env: Environment, actions: Iterable[Mapping[str, Any]]) -> list[tuple[str, Any]]:
    """Run gold actions (``name`` and ``arguments``) in order; each tool's name and content."""
    out: list[tuple[str, Any]] = []
    for action in actions:
        name = str(action["name"])
        res = env.call(name, dict(action.get("arguments") or {}))
        message = res.error.message if res.error is not None else ""
        out.append((name, tau2_content(res.result, res.ok, message)))
    return out
