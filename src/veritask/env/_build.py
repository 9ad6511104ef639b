"""Build database images from a spec and rows (the privileged path used for seeding)."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from veritask.env._state import Layout, rebase, tracking_sql
from veritask.policy import CompiledSQL, DomainSpec, compile_sql, quote_ident, table_order

Rows = Mapping[str, Sequence[Mapping[str, Any]]]


def insert_rows(conn: sqlite3.Connection, spec: DomainSpec, rows: Rows) -> None:
    """Insert rows table by table in dependency order, with parameterized SQL."""
    for name in table_order(spec):
        table_rows = rows.get(name, ())
        if not table_rows:
            continue
        columns = spec.table(name).column_names
        for row in table_rows:
            unknown = set(row) - set(columns)
            if unknown:
                raise ValueError(f"{name}: unknown columns {sorted(unknown)}")
            cols = [c for c in columns if c in row]
            sql = (
                f"INSERT INTO {quote_ident(name)} ({', '.join(quote_ident(c) for c in cols)}) "
                f"VALUES ({', '.join('?' for _ in cols)})"
            )
            conn.execute(sql, [row[c] for c in cols])


_COMPILED: dict[int, tuple[DomainSpec, CompiledSQL, Layout, str]] = {}


def _compiled(spec: DomainSpec) -> tuple[CompiledSQL, Layout, str]:
    """SQL, layout and tracking SQL of a spec, computed once per spec object."""
    hit = _COMPILED.get(id(spec))
    if hit is None or hit[0] is not spec:
        layout = Layout.from_spec(spec)
        hit = (spec, compile_sql(spec), layout, tracking_sql(layout))
        _COMPILED[id(spec)] = hit
    return hit[1], hit[2], hit[3]


def build_image(spec: DomainSpec, rows: Rows | None = None) -> bytes:
    """A serialized database: tables, then ``rows`` (the spec's seed by default), then triggers.

    Rows are loaded before the triggers exist, so a seeder can place the state anywhere the schema
    allows (a TICKETED flight, a quota at N-1) without replaying the history that led there.
    Foreign keys and CHECK constraints are enforced while loading. The image is rebased: it is
    the root that states reached from it are diffed against.
    """
    compiled, layout, tracking = _compiled(spec)
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.executescript(compiled.tables)
        conn.execute("BEGIN")
        insert_rows(conn, spec, spec.seed if rows is None else rows)
        conn.execute("COMMIT")
        violations = conn.execute("PRAGMA foreign_key_check").fetchall()
        if violations:
            raise ValueError(f"rows violate foreign keys: {violations[:5]}")
        conn.executescript(compiled.triggers + "\n" + tracking)
        rebase(conn, layout)
        return conn.serialize()
    finally:
        conn.close()
