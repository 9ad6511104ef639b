"""A notebook database: the policy's formulas evaluated over only the rows someone has seen.

An agent that reads the policy can compute what a calculation rule expects (a refund, a fee)
from the rows tool results showed it. This module gives it a place to do so: a scratch
database with the domain's tables (no triggers, foreign keys not enforced, since the rows seen
are a fragment of the state) holding exactly those rows, on which a spec expression over
``NEW`` / ``OLD`` is evaluated.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from veritask.env._build import insert_rows
from veritask.policy import DomainSpec, compile_sql

_NEW_OLD = re.compile(r"\b(NEW|OLD)\.([A-Za-z_][A-Za-z0-9_]*)")


def bind_new_old(
    expr: str, new_row: Mapping[str, Any], old_row: Mapping[str, Any] | None
) -> tuple[str, dict[str, Any]]:
    """Replace ``NEW.col`` / ``OLD.col`` in an expression by named parameters.

    Returns:
        The SQL text and its parameters (a column missing from a row binds NULL).
    """
    params: dict[str, Any] = {}

    def bind(m: re.Match[str]) -> str:
        ref, col = m.group(1), m.group(2)
        name = f"{ref.lower()}_{col}"
        params[name] = ((old_row or {}) if ref == "OLD" else new_row).get(col)
        return f":{name}"

    return _NEW_OLD.sub(bind, expr), params


def _distinct(
    spec: DomainSpec, rows: Mapping[str, Sequence[Mapping[str, Any]]]
) -> dict[str, list[dict[str, Any]]]:
    """The latest version of each row by primary key (rows without a key are kept as they are)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for name, table_rows in rows.items():
        if not spec.has_table(name):
            continue
        table = spec.table(name)
        known = set(table.column_names)
        key = table.primary_key[0].name if table.primary_key else None
        latest: dict[Any, dict[str, Any]] = {}
        keyless: list[dict[str, Any]] = []
        for row in table_rows:
            clean = {k: v for k, v in row.items() if k in known}
            if key is not None and clean.get(key) is not None:
                latest[clean[key]] = clean
            else:
                keyless.append(clean)
        out[name] = [*latest.values(), *keyless]
    return out


def evaluate_on_rows(
    spec: DomainSpec,
    expr: str,
    new_row: Mapping[str, Any],
    old_row: Mapping[str, Any] | None,
    rows: Mapping[str, Sequence[Mapping[str, Any]]],
) -> Any:
    """Evaluate a spec expression over ``NEW``/``OLD`` on a notebook of the given rows.

    Args:
        spec: The domain (its tables are created, empty, then filled with ``rows``).
        expr: An SQL expression from the spec (a rule's ``repair.value``, say).
        new_row: The row the write would produce.
        old_row: The row before an update (None for inserts).
        rows: Table -> rows seen (several versions of one row: the last one counts).

    Returns:
        The value, or None when the expression cannot be evaluated on these rows.
    """
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        conn.executescript(compile_sql(spec).tables)
        conn.execute("BEGIN")
        try:
            insert_rows(conn, spec, _distinct(spec, rows))
        except (sqlite3.Error, ValueError):
            conn.execute("ROLLBACK")
            return None
        conn.execute("COMMIT")
        sql, params = bind_new_old(expr, new_row, old_row)
        found = conn.execute(f"SELECT {sql}", params).fetchone()
        return None if found is None else found[0]
    except sqlite3.Error:
        return None
    finally:
        conn.close()
