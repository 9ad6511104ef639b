"""Scratch evaluation of a table's column constraints on a candidate row, without a database.

A synthesizer that makes up rows (clones of catalogue entries, sampled arguments) checks each
candidate here before it writes it: NOT NULL, enum, and the column's own ``check`` expression,
evaluated by SQLite itself on a one-row ``SELECT`` so the verdict is exactly the one the real
``CHECK`` constraint would give (a ``NULL`` result passes, as in SQLite).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from veritask.policy import Column, DomainSpec, Table, quote_ident


class RowChecker:
    """Checks rows against the column constraints of a spec on a private scratch connection."""

    def __init__(self, spec: DomainSpec) -> None:
        self.spec = spec
        self._conn = sqlite3.connect(":memory:", isolation_level=None)
        self._sql: dict[tuple[str, str], str] = {}

    def close(self) -> None:
        """Close the scratch connection."""
        self._conn.close()

    def _check_sql(self, table: Table, col: Column) -> str:
        key = (table.name, col.name)
        sql = self._sql.get(key)
        if sql is None:
            row = ", ".join(f"? AS {quote_ident(c)}" for c in table.column_names)
            sql = self._sql[key] = f"SELECT ({col.check}) FROM (SELECT {row})"
        return sql

    def column_ok(self, table: str, column: str, row: Mapping[str, Any]) -> bool:
        """True when ``row[column]`` satisfies the column's NOT NULL, enum and CHECK
        (columns missing from ``row`` count as their default)."""
        t = self.spec.table(table)
        col = t.column(column)
        value = row.get(column, col.default)
        if value is None:
            return not col.not_null
        if col.enum is not None and value not in col.enum:
            return False
        if not col.check:
            return True
        params = [row.get(c.name, c.default) for c in t.columns]
        try:
            found = self._conn.execute(self._check_sql(t, col), params).fetchone()
        except sqlite3.Error:
            return False
        return found is None or found[0] is None or bool(found[0])

    def violations(self, table: str, row: Mapping[str, Any]) -> list[str]:
        """The columns of ``table`` whose constraints ``row`` breaks, in declaration order."""
        return [
            c.name for c in self.spec.table(table).columns if not self.column_ok(table, c.name, row)
        ]
