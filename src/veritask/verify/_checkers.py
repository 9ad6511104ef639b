"""Per-instance checkers: read-only SQL predicates over a final state, made from a task's diff.

Each row that DIFF(s_origin, s_target) adds or removes gives one predicate: "table T holds
exactly n rows equal to this one" (on the canonical columns, technical keys left out), where n
is the row's count in s_target. The predicate is true on s_target by construction and false on
s_origin because the diff says the count differs there; :func:`make_checkers` checks both by
running every predicate through :meth:`veritask.env.Environment.select` (read mode, under the
authorizer) and refuses a checker set that does not separate the two states. On an agent's
final state the predicates give a readable partial-credit breakdown next to the exact match.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict

from veritask.env import Environment, Snapshot, diff_full
from veritask.policy import quote_ident


class Checker(BaseModel):
    """One predicate: ``SELECT <bool>`` with positional parameters, and what it says."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """What the predicate asserts, in words (``loans: 1 row {...} (was 0)``)."""
    sql: str
    params: list[Any]


class CheckerError(ValueError):
    """A checker set does not hold on s_target or does not fail on s_origin."""


def _count_sql(table: str, row: dict[str, Any]) -> str:
    """SQL counting the rows of ``table`` equal to ``row`` (parameters: the row's values)."""
    where = " AND ".join(f"{quote_ident(col)} IS ?" for col in row)
    return f"SELECT COUNT(*) FROM {quote_ident(table)} WHERE {where}"


def _key(row: dict[str, Any]) -> str:
    return json.dumps(row, sort_keys=True, default=str)


def _table_checkers(
    table: str, added: list[dict[str, Any]], removed: list[dict[str, Any]], env: Environment
) -> list[Checker]:
    """One checker per distinct changed row of one table (count taken on the current state)."""
    rows: dict[str, dict[str, Any]] = {}
    for row in [*removed, *added]:
        rows.setdefault(_key(row), row)
    delta = Counter(_key(r) for r in added)
    delta.subtract(Counter(_key(r) for r in removed))
    out: list[Checker] = []
    for key, row in rows.items():
        count_sql = _count_sql(table, row)
        found = int(env.select(count_sql, list(row.values()))[0][0])
        shown = ", ".join(f"{c}={v!r}" for c, v in row.items())
        out.append(
            Checker(
                name=f"{table}: {found} row(s) {{{shown}}} (was {found - delta[key]})",
                sql=f"SELECT ({count_sql}) = ?",
                params=[*row.values(), found],
            )
        )
    return out


def evaluate_checkers(checkers: list[Checker], env: Environment) -> list[bool]:
    """Each checker's verdict on the environment's current state (read-only)."""
    return [bool(env.select(c.sql, c.params)[0][0]) for c in checkers]


def make_checkers(env: Environment, origin: bytes, target: bytes) -> list[Checker]:
    """The checkers of one task, checked: all true on ``target``, each false on ``origin``.

    Args:
        env: An environment of the task's domain; it is left restored to ``target``.
        origin: The s_origin image.
        target: The s_target image.

    Returns:
        One checker per distinct changed row, by table in diff order; empty when the task does
        not change the state (a refusal task is checked by the exact match alone).

    Raises:
        CheckerError: A predicate is false on s_target or true on s_origin.
    """
    changes = diff_full(origin, target, env.domain.layout)
    env.restore(target)
    checkers: list[Checker] = []
    for table, tdiff in changes.tables.items():
        checkers += _table_checkers(table, tdiff.added, tdiff.removed, env)
    on_target = evaluate_checkers(checkers, env)
    env.restore(origin)
    on_origin = evaluate_checkers(checkers, env)
    env.restore(target)
    for checker, t, o in zip(checkers, on_target, on_origin, strict=True):
        if not t or o:
            raise CheckerError(f"{checker.name}: on s_target {t}, on s_origin {o}")
    return checkers


def partial_credit(
    checkers: list[Checker], env: Environment, state: bytes | Snapshot
) -> dict[str, Any]:
    """The breakdown of a final state: ``{"passed", "total", "score", "checks": [{name, ok}]}``.

    ``score`` is the fraction of checkers that hold (1.0 when there are none).
    """
    env.restore(state)
    verdicts = evaluate_checkers(checkers, env)
    passed = sum(verdicts)
    return {
        "passed": passed,
        "total": len(checkers),
        "score": passed / len(checkers) if checkers else 1.0,
        "checks": [{"name": c.name, "ok": ok} for c, ok in zip(checkers, verdicts, strict=True)],
    }
