"""The SQLite authorizer compiled spec SQL runs under: the second layer behind the SQL checks.

Spec SQL is parsed and checked before it is compiled (``_sqlcheck``). This guard is what still
holds if that check had a gap: while a database is built from compiled SQL, SQLite asks it about
every action, and it allows only what building needs.

Phases (``BuildGuard.phase``):

- ``ddl``: the compiled script runs. Only CREATE TABLE / INDEX / TRIGGER of the names the
  compiler produces, and the catalogue writes those statements make.
- ``load``: seed rows are inserted, top level, into the spec's tables.
- ``admin``: the engine's own bookkeeping (rebase): writes to ``vt_`` tables only.
- ``probe``: ``EXPLAIN`` of an insert and an update on each table, which makes SQLite compile
  every trigger without running it: rule triggers may not write at all, effect triggers may
  write only the spec's tables, and no trigger may run a recursive query.

In every phase: no ATTACH / DETACH, no PRAGMA other than the foreign-key pragmas the build runs
itself and the ``page_count`` serializing needs (never while the schema script runs), no DROP, ALTER, view, virtual table or temporary object, no DELETE outside the
engine's tables, and only the functions spec SQL may call.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

from veritask.policy._spec import DomainSpec
from veritask.policy._sqlcheck import ALLOWED_FUNCTIONS

Phase = Literal["ddl", "load", "admin", "probe"]

_CATALOGUE = frozenset({"sqlite_master", "sqlite_schema", "sqlite_sequence"})
_PRAGMAS = frozenset({"foreign_keys", "foreign_key_check", "page_count"})
"""``page_count`` is what ``Connection.serialize`` asks; the others are the build's own."""
_WRITES = {sqlite3.SQLITE_INSERT: "INSERT", sqlite3.SQLITE_UPDATE: "UPDATE"}
_CREATES = {
    sqlite3.SQLITE_CREATE_TABLE: "table",
    sqlite3.SQLITE_CREATE_INDEX: "index",
    sqlite3.SQLITE_CREATE_TRIGGER: "trigger",
}
_ALWAYS_OK = frozenset({sqlite3.SQLITE_READ, sqlite3.SQLITE_SELECT, sqlite3.SQLITE_TRANSACTION})


class BuildGuard:
    """An authorizer (``conn.set_authorizer(guard)``) for building databases from a spec.

    ``refused`` keeps the reason of every denial, so a failed build can say what was refused.
    """

    def __init__(self, spec: DomainSpec) -> None:
        self.tables = frozenset(t.name for t in spec.tables)
        self.engine_tables = frozenset({"vt_meta"} | {f"vt_base_{t}" for t in self.tables})
        self.phase: Phase = "ddl"
        self.refused: list[str] = []

    def __call__(
        self, action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None
    ) -> int:
        """SQLite's authorizer callback: SQLITE_OK or SQLITE_DENY (reason kept in ``refused``)."""
        reason = self.reason(action, arg1, arg2, db, trigger)
        if reason is None:
            return sqlite3.SQLITE_OK
        self.refused.append(reason)
        return sqlite3.SQLITE_DENY

    @contextmanager
    def during(self, phase: Phase) -> Iterator[None]:
        """Switch to ``phase`` for the duration of the block."""
        previous, self.phase = self.phase, phase
        try:
            yield
        finally:
            self.phase = previous

    def reason(
        self, action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None
    ) -> str | None:
        """Why the action is refused in the current phase, or None when it is allowed."""
        if db not in (None, "main"):
            return f"access to database {db!r}"
        if action in _ALWAYS_OK:
            return self._read_reason(action, arg1, trigger)
        if action == sqlite3.SQLITE_FUNCTION:
            ok = (arg2 or "").lower() in ALLOWED_FUNCTIONS
            return None if ok else f"function {arg2}()"
        if action == sqlite3.SQLITE_PRAGMA:
            ok = self.phase != "ddl" and (arg1 or "").lower() in _PRAGMAS
            return None if ok else f"PRAGMA {arg1}"
        if action in _CREATES:
            return self._create_reason(_CREATES[action], arg1 or "", arg2 or "")
        if action == sqlite3.SQLITE_REINDEX:
            return None if self.phase == "ddl" else "REINDEX"
        if action in _WRITES:
            return self._write_reason(_WRITES[action], arg1 or "", trigger)
        if action == sqlite3.SQLITE_DELETE:
            ok = self.phase == "admin" and trigger is None and arg1 in self.engine_tables
            return None if ok else f"DELETE FROM {arg1}"
        return f"action {_action_name(action)} {arg1 or ''}".rstrip()

    def _read_reason(self, action: int, table: str | None, trigger: str | None) -> str | None:
        if action == sqlite3.SQLITE_READ and trigger is not None and table in _CATALOGUE:
            return f"trigger {trigger} reads {table}"
        return None

    def _create_reason(self, kind: str, name: str, table: str) -> str | None:
        if self.phase != "ddl":
            return f"CREATE {kind.upper()} {name} outside the schema script"
        expected = {
            "table": name in self.tables | self.engine_tables or name == "sqlite_sequence",
            "index": name.startswith(("vt_idx_", "sqlite_autoindex_"))
            and table in self.tables | self.engine_tables,
            "trigger": name.startswith(("vt_rules_", "vt_effect_", "vt_track_"))
            and table in self.tables,
        }
        return None if expected[kind] else f"CREATE {kind.upper()} {name}"

    def _write_reason(self, verb: str, table: str, trigger: str | None) -> str | None:
        if table in _CATALOGUE:
            ok = self.phase == "ddl" or (table == "sqlite_sequence" and self.phase == "load")
            return None if ok and trigger is None else f"{verb} on {table}"
        if trigger is None:
            allowed = {
                "ddl": frozenset[str](),
                "load": self.tables,
                "admin": self.engine_tables,
                "probe": self.tables,
            }[self.phase]
            return None if table in allowed else f"{verb} on {table} (phase {self.phase})"
        return self._trigger_write_reason(verb, table, trigger)

    def _trigger_write_reason(self, verb: str, table: str, trigger: str) -> str | None:
        if self.phase != "probe":
            return f"trigger {trigger} writes {table} (phase {self.phase})"
        if trigger.startswith("vt_track_"):
            return None if table in self.engine_tables else f"trigger {trigger} writes {table}"
        if trigger.startswith("vt_effect_") and table in self.tables:
            return None
        return f"trigger {trigger} writes {table} ({verb})"


def _action_name(action: int) -> str:
    names = {
        getattr(sqlite3, n): n.removeprefix("SQLITE_")
        for n in (
            "SQLITE_ATTACH",
            "SQLITE_DETACH",
            "SQLITE_ALTER_TABLE",
            "SQLITE_ANALYZE",
            "SQLITE_CREATE_VIEW",
            "SQLITE_CREATE_TEMP_TABLE",
            "SQLITE_CREATE_TEMP_TRIGGER",
            "SQLITE_CREATE_TEMP_INDEX",
            "SQLITE_CREATE_TEMP_VIEW",
            "SQLITE_CREATE_VTABLE",
            "SQLITE_DROP_TABLE",
            "SQLITE_DROP_INDEX",
            "SQLITE_DROP_TRIGGER",
            "SQLITE_DROP_VIEW",
            "SQLITE_DROP_VTABLE",
            "SQLITE_RECURSIVE",
            "SQLITE_SAVEPOINT",
        )
        if hasattr(sqlite3, n)
    }
    return names.get(action, str(action))


def run_guarded(conn: sqlite3.Connection, guard: BuildGuard, phase: Phase, script: str) -> None:
    """Run a compiled script under ``guard`` in ``phase``; a denial raises ValueError naming it."""
    conn.set_authorizer(guard)
    try:
        with guard.during(phase):
            conn.executescript(script)
    except sqlite3.DatabaseError as exc:
        raise ValueError(refusal(guard, exc)) from None
    finally:
        conn.set_authorizer(None)


def refusal(guard: BuildGuard, exc: sqlite3.Error) -> str:
    """The error message for a failed guarded step: what the guard refused, else SQLite's error."""
    if guard.refused:
        return f"compiled spec SQL refused: {guard.refused[-1]} ({exc})"
    return f"compiled spec SQL failed in SQLite: {exc}"
