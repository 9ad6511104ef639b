"""Build database images from a spec and rows (the privileged path used for seeding)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from veritask.env._state import Layout, rebase, tracking_sql
from veritask.policy import CompiledSQL, DomainSpec, compile_sql, quote_ident, table_order
from veritask.policy._guard import BuildGuard, refusal, run_guarded

Rows = Mapping[str, Sequence[Mapping[str, Any]]]


class RowError(ValueError):
    """A row that cannot be loaded: the table, the row's index among that table's rows (as in
    a spec's ``seed``) and the reason (the constraint it breaks).

    Attributes:
        table: The table the row is for.
        index: 0-based position among the rows given for ``table``.
        reason: What is wrong, in SQLite's words.
    """

    def __init__(self, table: str, index: int, reason: str) -> None:
        super().__init__(f"rows break the schema: {table}[{index}]: {reason}")
        self.table, self.index, self.reason = table, index, reason


def insert_rows(conn: sqlite3.Connection, spec: DomainSpec, rows: Rows) -> None:
    """Insert rows table by table in dependency order, with parameterized SQL.

    Raises:
        RowError: A row names an unknown column or breaks a constraint (CHECK, NOT NULL,
            UNIQUE, a foreign key); the error says which row.
    """
    for name in table_order(spec):
        columns = spec.table(name).column_names
        for k, row in enumerate(rows.get(name, ())):
            unknown = set(row) - set(columns)
            if unknown:
                raise RowError(name, k, f"unknown columns {sorted(unknown)}")
            cols = [c for c in columns if c in row]
            sql = (
                f"INSERT INTO {quote_ident(name)} ({', '.join(quote_ident(c) for c in cols)}) "
                f"VALUES ({', '.join('?' for _ in cols)})"
            )
            try:
                conn.execute(sql, [row[c] for c in cols])
            except (sqlite3.Error, OverflowError) as exc:  # a constraint, or an unstorable value
                raise RowError(name, k, str(exc)) from None


@dataclass(frozen=True)
class _Compiled:
    """What building an image needs from a spec, verified once under the guard."""

    sql: CompiledSQL
    layout: Layout
    tracking: tuple[str, str]
    """The change-tracking tables, and their triggers (``tracking_sql``)."""


_CACHE_SIZE = 32
_CACHE: OrderedDict[int, tuple[weakref.ref[DomainSpec], _Compiled]] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def _forget(key: int, ref: weakref.ref[DomainSpec]) -> None:
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit[0] is ref:
            del _CACHE[key]


def _compiled(spec: DomainSpec) -> _Compiled:
    """SQL, layout and tracking SQL of a spec, computed and verified once per live spec object.

    The cache holds at most ``_CACHE_SIZE`` specs and a weak reference to each: an entry is
    dropped when its spec is garbage-collected, so a new object reusing a dead one's ``id``
    never sees the dead one's SQL.
    """
    key = id(spec)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit[0]() is spec:
            _CACHE.move_to_end(key)
            return hit[1]
    layout = Layout.from_spec(spec)
    compiled = _Compiled(compile_sql(spec), layout, tracking_sql(layout))
    _verify(spec, compiled)
    ref = weakref.ref(spec, lambda r: _forget(key, r))
    with _CACHE_LOCK:
        _CACHE[key] = (ref, compiled)
        _CACHE.move_to_end(key)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return compiled


def _verify(spec: DomainSpec, compiled: _Compiled) -> None:
    """Create the schema in a scratch database and make SQLite compile every trigger.

    ``EXPLAIN`` prepares an insert and an update on each table without running them, which
    makes SQLite resolve every name in every trigger and ask the guard about every action.
    """
    guard = BuildGuard(spec)
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        run_guarded(conn, guard, "ddl", "\n".join((compiled.sql.full, *compiled.tracking)))
        conn.set_authorizer(guard)
        with guard.during("probe"):
            for table in spec.tables:
                _probe(conn, guard, table.name, table.column_names)
    finally:
        conn.close()


def sql_culprits(spec: DomainSpec) -> list[tuple[tuple[str | int, ...], str]]:
    """Where SQL that SQLite refuses sits in a spec: ``(location, reason)`` pairs.

    Compiling a spec fails as a whole (one script of triggers). This compiles the tables alone
    (their column CHECKs), then each rule and each effect on its own, so a failure is traced
    to the rule, effect or table that holds it (``("rules", 3)``); empty when each compiles.
    """
    bare = spec.model_copy(update={"rules": [], "effects": []})
    try:
        _verify(bare, _Compiled(compile_sql(bare), Layout.from_spec(bare), ("", "")))
    except ValueError as exc:
        return [(("tables",), str(exc))]
    out: list[tuple[tuple[str | int, ...], str]] = []
    parts: list[tuple[str, int, dict[str, Any]]] = [
        ("rules", i, {"rules": [r]}) for i, r in enumerate(spec.rules)
    ]
    parts += [("effects", i, {"effects": [e]}) for i, e in enumerate(spec.effects)]
    for kind, i, only in parts:
        one = bare.model_copy(update=only)
        try:
            _verify(one, _Compiled(compile_sql(one), Layout.from_spec(one), ("", "")))
        except ValueError as exc:
            out.append(((kind, i), str(exc)))
    return out


def _probe(conn: sqlite3.Connection, guard: BuildGuard, table: str, columns: list[str]) -> None:
    cols = ", ".join(quote_ident(c) for c in columns)
    sets = ", ".join(f"{quote_ident(c)} = {quote_ident(c)}" for c in columns)
    marks = ", ".join("NULL" for _ in columns)
    for event, sql in (
        ("insert", f"INSERT INTO {quote_ident(table)} ({cols}) VALUES ({marks})"),
        ("update", f"UPDATE {quote_ident(table)} SET {sets}"),
    ):
        try:
            conn.execute(f"EXPLAIN {sql}").fetchall()
        except sqlite3.Error as exc:
            raise ValueError(f"{table} on {event}: {refusal(guard, exc)}") from None


PAGE_SIZE = 1024
"""SQLite page size of every image ``build_image`` makes (design note 0033).

A task state holds a few rows per table, and SQLite gives every table and index at least one
page: at the default 4096 bytes a retail state is 61 pages, 5-10% used, so copying, hashing and
restoring it moves about 250 KB where 1 KB pages move about 100 KB. Larger tables pay a slightly
deeper B-tree. Images loaded from elsewhere keep their own page size."""


def layout_cookie(conn: sqlite3.Connection) -> int:
    """A schema cookie that names the database's schema and where each table and index is.

    SQLite re-prepares a cached statement only when the schema cookie changed, and a prepared
    statement holds the root page of each table it reads. Two images with the same cookie but
    tables at other pages would be read through stale statements, and give another table's
    rows without an error (design note 0033). Images that ``build_image`` makes carry this
    value, a 31-bit digest of ``sqlite_master`` (every name, root page and SQL text), so images
    laid out differently get different cookies (an image made before this rule keeps its own).
    """
    rows = conn.execute(
        "SELECT type, name, tbl_name, rootpage, coalesce(sql, '') FROM sqlite_master ORDER BY name"
    ).fetchall()
    digest = hashlib.sha256(json.dumps(rows).encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF or 1


def _set_layout_cookie(conn: sqlite3.Connection) -> None:
    conn.execute(f"PRAGMA schema_version = {layout_cookie(conn)}")


RECORD_FORMAT = 1
"""The schema format number (file header bytes 44-47) of the images ``build_image`` makes.

At format 4, SQLite may store the integers 0 and 1 as zero-length constants, but only when
the connection has read the schema since the image was loaded: a statement taken from the
cache after ``deserialize`` sees an unread schema (format 0) and writes them as one-byte
integers. The same calls on the same image then give other bytes depending on what the
connection ran before. At format 1 both cases write one-byte integers, so an image's bytes
depend only on the image and the calls (design note 0033). Format 4's other feature, descending
indexes, is not used: the compiler only writes ascending foreign-key indexes."""


def _set_record_format(conn: sqlite3.Connection) -> None:
    image = bytearray(conn.serialize())
    image[44:48] = RECORD_FORMAT.to_bytes(4, "big")
    conn.deserialize(bytes(image))


def build_image(spec: DomainSpec, rows: Rows | None = None) -> bytes:
    """A serialized database: tables, then ``rows`` (the spec's seed by default), then triggers.

    Rows are loaded before the triggers exist, so a seeder can place the state anywhere the schema
    allows (a TICKETED flight, a quota at N-1) without replaying the history that led there.
    Foreign keys and CHECK constraints are enforced while loading. The image is rebased: it is
    the root that states reached from it are diffed against. Everything runs under a
    ``BuildGuard`` (no ATTACH, no PRAGMA beyond the build's own, no writes outside the spec's
    tables); a refusal raises ValueError naming what was refused, and so do rows that break a
    constraint (CHECK, NOT NULL, UNIQUE, foreign keys).
    """
    compiled = _compiled(spec)
    guard = BuildGuard(spec)
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        conn.execute("PRAGMA foreign_keys = ON")
        run_guarded(conn, guard, "ddl", compiled.sql.tables + "\n" + compiled.tracking[0])
        conn.set_authorizer(guard)
        with guard.during("load"):
            conn.execute("BEGIN")
            insert_rows(conn, spec, spec.seed if rows is None else rows)
            conn.execute("COMMIT")
            violations = conn.execute("PRAGMA foreign_key_check").fetchall()
        if violations:
            raise ValueError(f"rows violate foreign keys: {violations[:5]}")
        run_guarded(conn, guard, "ddl", compiled.sql.triggers + "\n" + compiled.tracking[1])
        conn.set_authorizer(None)
        _set_layout_cookie(conn)
        _set_record_format(conn)
        conn.set_authorizer(guard)
        with guard.during("admin"):
            rebase(conn, compiled.layout)
        conn.set_authorizer(None)
        return conn.serialize()
    finally:
        conn.close()
