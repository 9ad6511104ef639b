"""Snapshots of an environment's database and LOGIGEN's DIFF between them.

Every database image carries change tracking: triggers record which rows changed since the
image's *root* (the state it was last rebased at, e.g. a task's s_origin) and what they looked like
there. Two states that share a root are diffed by looking only at the rows either touched, so the
cost grows with the rows touched, not the database size. States with different roots fall back to
a full scan of both databases.
"""

from __future__ import annotations

import functools
import hashlib
import sqlite3
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veritask.env._image import check_database_file
from veritask.policy import DomainSpec, quote_ident
from veritask.policy._sql import sql_literal

Row = tuple[Any, ...]


@dataclass(frozen=True)
class TableLayout:
    """Column names of a table and which positions are technical (ignored by diffs)."""

    name: str
    columns: tuple[str, ...]
    technical: frozenset[int]

    def canonical(self, row: Row) -> Row:
        """The row without its technical columns."""
        return tuple(v for i, v in enumerate(row) if i not in self.technical)

    @property
    def canonical_columns(self) -> tuple[str, ...]:
        """Names of the columns kept by ``canonical``."""
        return tuple(c for i, c in enumerate(self.columns) if i not in self.technical)

    @functools.cached_property
    def select_sql(self) -> str:
        """``SELECT rowid, <columns> FROM <table>`` (all rows)."""
        cols = ", ".join(quote_ident(c) for c in self.columns)
        return f"SELECT rowid, {cols} FROM {quote_ident(self.name)}"

    @functools.cached_property
    def tracked_sql(self) -> str:
        """Each tracked row of the table: rowid, whether it existed at the root, its columns at
        the root, its columns now."""
        base = ", ".join(f"b.{quote_ident(c)}" for c in self.columns)
        cur = ", ".join(f"m.{quote_ident(c)}" for c in self.columns)
        return (
            f"SELECT b.rid, b.existed, {base}, {cur} FROM {quote_ident('vt_base_' + self.name)} b "
            f"JOIN {quote_ident(self.name)} m ON m.rowid = b.rid"
        )

    @functools.cached_property
    def by_rowid_sql(self) -> str:
        """``SELECT <columns> FROM <table> WHERE rowid = ?``."""
        cols = ", ".join(quote_ident(c) for c in self.columns)
        return f"SELECT {cols} FROM {quote_ident(self.name)} WHERE rowid = ?"


@dataclass(frozen=True)
class Layout:
    """The tables a diff compares."""

    tables: dict[str, TableLayout]

    @functools.cached_property
    def dirty_sql(self) -> str:
        """One query listing the tables whose tracking table is non-empty."""
        return _dirty_sql(self)

    @classmethod
    def from_spec(cls, spec: DomainSpec) -> Layout:
        """Layout of a spec's tables, technical keys from the spec."""
        return cls(
            {
                t.name: TableLayout(
                    t.name,
                    tuple(t.column_names),
                    frozenset(i for i, c in enumerate(t.columns) if c.technical),
                )
                for t in spec.tables
            }
        )

    @classmethod
    def from_database(cls, conn: sqlite3.Connection) -> Layout:
        """Layout read from a database; AUTOINCREMENT primary keys count as technical."""
        tables: dict[str, TableLayout] = {}
        for name, sql in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' "
            "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'vt_%' ORDER BY name"
        ):
            info = conn.execute(f"PRAGMA table_info({quote_ident(name)})").fetchall()
            auto = "AUTOINCREMENT" in (sql or "").upper()
            technical = frozenset(i for i, col in enumerate(info) if auto and col[5])
            tables[name] = TableLayout(name, tuple(col[1] for col in info), technical)
        return cls(tables)

    @classmethod
    def from_file(cls, path: str | Path) -> Layout:
        """Layout read from a database file (opened read-only).

        Raises:
            NotADatabase: The file is not a SQLite database.
        """
        check_database_file(path)
        conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
        try:
            return cls.from_database(conn)
        finally:
            conn.close()


TRACK_PREFIX = "vt_"
"""Engine tables (change tracking, lineage) are named with this prefix; specs may not use it."""


def tracking_sql(layout: Layout) -> tuple[str, str]:
    """Tables, then triggers, that record which rows change after a rebase, and their old values.

    They live in the database image itself, so a state loaded from disk still knows its lineage
    (the ``root`` it was rebased at) and which rows differ from that root. The tables are
    created with the spec's own tables, before any row, so their root pages are the same in
    every image of a domain (design note 0033); the triggers after the rows are loaded.
    """
    tables = ["CREATE TABLE vt_meta (key TEXT PRIMARY KEY, value TEXT)"]
    triggers: list[str] = []
    for name, t in layout.tables.items():
        q, track = quote_ident(name), quote_ident(f"vt_base_{name}")
        cols = ", ".join(quote_ident(c) for c in t.columns)
        old = ", ".join(f"OLD.{quote_ident(c)}" for c in t.columns)
        tables.append(
            f"CREATE TABLE {track} (rid INTEGER PRIMARY KEY, existed INTEGER NOT NULL, {cols})"
        )
        triggers += [
            f"CREATE TRIGGER {quote_ident(f'vt_track_{name}_u')} BEFORE UPDATE ON {q} BEGIN "
            f"INSERT OR IGNORE INTO {track} VALUES (OLD.rowid, 1, {old}); END",
            # OR REPLACE: an effect may update a just-inserted row before this trigger runs.
            f"CREATE TRIGGER {quote_ident(f'vt_track_{name}_i')} AFTER INSERT ON {q} BEGIN "
            f"INSERT OR REPLACE INTO {track} (rid, existed) VALUES (NEW.rowid, 0); END",
        ]
    return ";\n".join(tables) + ";", ";\n".join(triggers) + ";"


def _dirty_sql(layout: Layout) -> str:
    parts = [
        f"SELECT {sql_literal(name)} WHERE EXISTS (SELECT 1 FROM {quote_ident('vt_base_' + name)})"
        for name in sorted(layout.tables)
    ]
    return " UNION ALL ".join(parts)


def dirty_tables(conn: sqlite3.Connection, layout: Layout) -> list[str]:
    """Tables with at least one tracked change (one query over all tracking tables)."""
    sql = layout.dirty_sql
    return [r[0] for r in conn.execute(sql)]


def rebase(conn: sqlite3.Connection, layout: Layout) -> str:
    """Forget tracked changes and make the current state a new root; return its id.

    The id is the sha256 of the image with empty tracking tables, so it is deterministic.
    """
    for name in dirty_tables(conn, layout):
        conn.execute(f"DELETE FROM {quote_ident('vt_base_' + name)}")
    conn.execute("DELETE FROM vt_meta WHERE key = 'root'")
    root = hashlib.sha256(conn.serialize()).hexdigest()
    conn.execute("INSERT INTO vt_meta VALUES ('root', ?)", (root,))
    return root


@dataclass(frozen=True)
class Tracked:
    """Rows changed since the root: per table, rowid -> (row at the root or None, row now)."""

    root: str
    rows: Mapping[str, Mapping[int, tuple[Row | None, Row]]] = field(default_factory=dict)

    def count(self) -> int:
        """Number of touched rows."""
        return sum(len(r) for r in self.rows.values())


def read_tracked(conn: sqlite3.Connection, layout: Layout) -> Tracked:
    """Read the root id and the touched rows (old and current values) from a database."""
    found = conn.execute("SELECT value FROM vt_meta WHERE key = 'root'").fetchone()
    out: dict[str, dict[int, tuple[Row | None, Row]]] = {}
    for name in dirty_tables(conn, layout):
        t = layout.tables[name]
        n = len(t.columns)
        out[name] = {
            r[0]: (r[2 : 2 + n] if r[1] else None, r[2 + n :]) for r in conn.execute(t.tracked_sql)
        }
    return Tracked(found[0] if found else "", out)


def _open(data: bytes) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.deserialize(data)
    return conn


class Snapshot:
    """A restorable state: the serialized database, readable for diffs without restoring it."""

    __slots__ = ("data", "known_tracked", "layout")

    def __init__(self, data: bytes, layout: Layout, tracked: Tracked | None = None) -> None:
        self.data = data
        self.layout = layout
        self.known_tracked = tracked
        """The tracked changes once read (or given); None until then."""

    @property
    def tracked(self) -> Tracked:
        """Root id and rows touched since it (read from the image on first use)."""
        if self.known_tracked is None:
            conn = _open(self.data)
            try:
                self.known_tracked = read_tracked(conn, self.layout)
            finally:
                conn.close()
        return self.known_tracked

    def digest(self) -> str:
        """sha256 of the serialized database."""
        return hashlib.sha256(self.data).hexdigest()


@dataclass(frozen=True)
class TableDiff:
    """Rows only in the second state (added) and only in the first (removed)."""

    added: list[dict[str, Any]]
    removed: list[dict[str, Any]]


@dataclass(frozen=True)
class StateDiff:
    """LOGIGEN's DIFF: per-table symmetric multiset difference of canonical rows."""

    tables: dict[str, TableDiff]

    @property
    def distance(self) -> int:
        """Total number of rows in the symmetric difference."""
        return sum(len(t.added) + len(t.removed) for t in self.tables.values())

    def to_json(self) -> dict[str, Any]:
        """``{"distance", "tables": {t: {"added", "removed"}}}`` with only non-empty tables."""
        return {
            "distance": self.distance,
            "tables": {n: {"added": t.added, "removed": t.removed} for n, t in self.tables.items()},
        }


def _sort_key(row: Row) -> tuple[tuple[int, Any], ...]:
    return tuple(
        (0, "") if v is None else (1, v) if isinstance(v, int | float) else (2, str(v)) for v in row
    )


def _table_diff(
    layout: TableLayout, rows_a: Iterable[Row], rows_b: Iterable[Row]
) -> TableDiff | None:
    ca = Counter(layout.canonical(r) for r in rows_a)
    cb = Counter(layout.canonical(r) for r in rows_b)
    if ca == cb:
        return None
    cols = layout.canonical_columns
    added = sorted((cb - ca).elements(), key=_sort_key)
    removed = sorted((ca - cb).elements(), key=_sort_key)
    return TableDiff(
        [dict(zip(cols, r, strict=True)) for r in added],
        [dict(zip(cols, r, strict=True)) for r in removed],
    )


def diff_tracked(a: Tracked, b: Tracked, layout: Layout) -> StateDiff:
    """DIFF of two states that share a root, from the rows either touched since it."""
    if a.rows == b.rows:  # the same rows touched, alike before and after: nothing differs
        return StateDiff({})
    out: dict[str, TableDiff] = {}
    for table in sorted(set(a.rows) | set(b.rows)):
        ta, tb = a.rows.get(table, {}), b.rows.get(table, {})
        rows_a: list[Row] = []
        rows_b: list[Row] = []
        for rid in set(ta) | set(tb):
            base = ta[rid][0] if rid in ta else tb[rid][0]
            row_a = ta[rid][1] if rid in ta else base
            row_b = tb[rid][1] if rid in tb else base
            if row_a is not None:
                rows_a.append(row_a)
            if row_b is not None:
                rows_b.append(row_b)
        td = _table_diff(layout.tables[table], rows_a, rows_b)
        if td is not None:
            out[table] = td
    return StateDiff(out)


def _all_rows(data: bytes, layout: Layout) -> dict[str, list[Row]]:
    conn = _open(data)
    try:
        return {
            name: [r[1:] for r in conn.execute(t.select_sql)] for name, t in layout.tables.items()
        }
    finally:
        conn.close()


def diff_full(data_a: bytes, data_b: bytes, layout: Layout) -> StateDiff:
    """DIFF by scanning every row of both databases."""
    rows_a, rows_b = _all_rows(data_a, layout), _all_rows(data_b, layout)
    out: dict[str, TableDiff] = {}
    for name in sorted(layout.tables):
        td = _table_diff(layout.tables[name], rows_a[name], rows_b[name])
        if td is not None:
            out[name] = td
    return StateDiff(out)


def diff(a: Snapshot, b: Snapshot) -> StateDiff:
    """LOGIGEN's DIFF between two snapshots: rows added in ``b`` and removed from ``a``.

    Technical keys are excluded and rows compared as multisets. Snapshots that share a base are
    compared on the rows they touched only; others by a full scan.
    """
    ta, tb = a.tracked, b.tracked
    if ta.root and ta.root == tb.root:
        return diff_tracked(ta, tb, a.layout)
    return diff_full(a.data, b.data, a.layout)


def distance(a: Snapshot, b: Snapshot) -> int:
    """Number of rows in the symmetric difference of two snapshots."""
    return diff(a, b).distance
