"""Value comparison and formatting shared by the verifiers."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

NUMBER_TOLERANCE = 1e-4
"""Two numbers closer than this are equal (absolute)."""


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def values_match(gold: Any, agent: Any) -> bool:
    """Whether an agent's value matches a gold value.

    Numbers are equal within ``NUMBER_TOLERANCE`` (int and float mix freely), strings compare
    case-insensitively after trimming whitespace, mappings and lists compare element-wise, and
    None equals only None.
    """
    if gold is None or agent is None:
        return gold is None and agent is None
    if _is_number(gold) and _is_number(agent):
        return math.isclose(gold, agent, abs_tol=NUMBER_TOLERANCE)
    if isinstance(gold, str) and isinstance(agent, str):
        return gold.strip().casefold() == agent.strip().casefold()
    if isinstance(gold, Mapping) and isinstance(agent, Mapping):
        return not mismatched_keys(gold, agent)
    if isinstance(gold, list | tuple) and isinstance(agent, list | tuple):
        return len(gold) == len(agent) and all(map(values_match, gold, agent))
    return bool(gold == agent)


def mismatched_keys(gold: Mapping[str, Any], agent: Mapping[str, Any]) -> list[str]:
    """Keys whose values do not match; a missing key counts as None."""
    keys = list(gold) + [k for k in agent if k not in gold]
    return [k for k in keys if not values_match(gold.get(k), agent.get(k))]


def short(value: Any, limit: int = 60) -> str:
    """``repr`` of a value, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def format_call(tool: str, args: Mapping[str, Any] | None) -> str:
    """``tool(k=v, ...)`` for messages."""
    inner = ", ".join(f"{k}={short(v)}" for k, v in (args or {}).items())
    return f"{tool}({inner})"


def _freeze(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list | dict):
        return json.dumps(value, sort_keys=True, default=str)
    return value


def row_key(row: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """A hashable form of a diff row (integral floats normalized to ints)."""
    return tuple(sorted((k, _freeze(v)) for k, v in row.items()))
