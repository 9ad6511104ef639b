"""Import a domain from raw SQLite DDL and triggers (the shape of LOGIGEN Appendix A).

The script is first executed in a scratch in-memory database, which proves that SQLite accepts
it; columns, keys and indexes are then read back with ``PRAGMA`` introspection, and what SQLite
does not expose (CHECK enums, tier comments, trigger bodies) is read from the statement text with
the small tokenizer in ``_sqltext``. A tokenizer is enough because every statement has already
compiled, so only a few fixed shapes must be recognised; it also keeps the package free of a full
SQL parser dependency (sqlglot), whose SQLite trigger support would need checking anyway.

What does not survive the import: non-constant defaults, composite primary or foreign keys,
generated columns, partial or expression unique indexes, views, DELETE and INSTEAD OF triggers
(all rejected with a SpecError); ON DELETE/UPDATE actions, non-unique indexes and PRAGMA
statements (dropped). No column is marked computed, insert-only or update-only: the DDL does not
say which columns the system owns. See ``_import_triggers`` for how triggers become rules and
effects.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from veritask.policy._guard import BuildGuard, run_guarded
from veritask.policy._import_triggers import (
    Trigger,
    firing_order,
    parse_trigger,
    trigger_effect,
    trigger_rules,
)
from veritask.policy._load import spec_from_data
from veritask.policy._spec import DomainSpec, Scalar
from veritask.policy._sql import compile_sql, quote_ident
from veritask.policy._sqltext import (
    Statement,
    Tok,
    fail,
    literal,
    matching_paren,
    render,
    significant,
    split_statements,
    split_top,
    tokenize,
)

_TIER_MARK = re.compile(r"\bL([012])_(?:REFERENCE|ENTITY|TRANSACTION)\b", re.I)
_TIERS = {"0": "reference", "1": "entity", "2": "transaction"}
_INACTIVE_STATUSES = ("CANCELLED", "CANCELED", "DENIED", "REJECTED", "INACTIVE", "CLOSED")
_TABLE_CONSTRAINTS = ("CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK", "FOREIGN")
_KINDS = (["CREATE", "TABLE"], ["CREATE", "TRIGGER"], ["CREATE", "INDEX"])
_AFFINITY = (
    ("INT", "INTEGER"),
    ("BOOL", "INTEGER"),
    ("CHAR", "TEXT"),
    ("CLOB", "TEXT"),
    ("TEXT", "TEXT"),
    ("DATE", "TEXT"),
    ("TIME", "TEXT"),
    ("REAL", "REAL"),
    ("FLOA", "REAL"),
    ("DOUB", "REAL"),
    ("NUM", "REAL"),
    ("DEC", "REAL"),
)
"""Declared type fragments mapped onto the spec's three types (first match wins)."""

Columns = dict[str, dict[str, Any]]


@dataclass
class _Imported:
    """What the import builds up before validation: plain spec data."""

    tables: list[dict[str, Any]] = field(default_factory=list)
    triggers: list[Trigger] = field(default_factory=list)
    rules: list[dict[str, Any]] = field(default_factory=list)
    effects: list[dict[str, Any]] = field(default_factory=list)


# -- statements --------------------------------------------------------------------------------


def _statement_kind(stmt: Statement, source: str) -> str:
    words = [t.kw for t in stmt.tokens[:4]]
    if words[0] == "PRAGMA":
        return "pragma"
    words = [w for w in words if w not in ("TEMP", "TEMPORARY", "UNIQUE")]
    if words[:2] in _KINDS:
        return words[1].lower()
    message = "only CREATE TABLE, CREATE INDEX and CREATE TRIGGER statements can be imported"
    fail(source, stmt.line, f"statement {stmt.summary!r}", message)


def _execute(conn: sqlite3.Connection, stmt: Statement, source: str) -> None:
    try:
        conn.execute(stmt.sql)
    except sqlite3.Error as exc:
        fail(source, stmt.line, f"statement {stmt.summary!r}", f"SQLite rejected it: {exc}")


# -- columns -----------------------------------------------------------------------------------


def _sql_type(declared: str, where: str, source: str) -> str:
    upper = declared.upper()
    for needle, sql_type in _AFFINITY:
        if needle in upper:
            return sql_type
    fail(source, None, where, f"column type {declared!r} has no TEXT/INTEGER/REAL equivalent")


def _default(raw: str | None, where: str, source: str) -> Scalar | None:
    if raw is None or raw.upper() == "NULL":
        return None
    text = raw
    while text.startswith("(") and text.endswith(")"):
        text = text[1:-1].strip()
    value = literal(significant(tokenize(text)))
    if value is None:
        fail(source, None, where, f"default {raw!r} is not a constant")
    return value


def _columns(conn: sqlite3.Connection, stmt: Statement, name: str, source: str) -> Columns:
    rows = conn.execute(f"PRAGMA table_xinfo({quote_ident(name)})").fetchall()
    if sum(1 for r in rows if r[5]) > 1:
        fail(source, stmt.line, f"table {name}", "composite primary keys are not supported")
    auto = any(t.kw == "AUTOINCREMENT" for t in stmt.tokens)
    columns: Columns = {}
    for _cid, col, declared, notnull, default, pk, hidden in rows:
        where = f"table {name}.{col}"
        if hidden:
            fail(source, stmt.line, where, "generated and hidden columns are not supported")
        data: dict[str, Any] = {"name": col, "type": _sql_type(declared, where, source)}
        data.update({k: True for k, on in (("primary_key", pk), ("not_null", notnull)) if on})
        if pk and auto:
            data.update(autoincrement=True, technical=True)
        value = _default(default, where, source)
        if value is not None:
            data["default"] = value
        columns[col] = data
    return columns


# -- CHECK constraints -------------------------------------------------------------------------


def _definitions(stmt: Statement, name: str, source: str) -> list[list[Tok]]:
    opened = next((i for i, t in enumerate(stmt.tokens) if t.text == "("), None)
    if opened is None:
        fail(source, stmt.line, f"table {name}", "CREATE TABLE ... AS SELECT is not supported")
    return split_top(stmt.tokens[opened + 1 : matching_paren(stmt.tokens, opened)])


def _checks(segment: list[Tok]) -> list[list[Tok]]:
    out = []
    for i, tok in enumerate(segment[:-1]):
        if tok.kw == "CHECK" and segment[i + 1].text == "(":
            out.append(segment[i + 2 : matching_paren(segment, i + 1)])
    return out


def _enum_of(check: list[Tok]) -> tuple[str, list[Scalar]] | None:
    """``(column, values)`` when a CHECK is exactly ``column IN (literal, ...)``."""
    if len(check) < 4 or check[0].kind not in ("ident", "qident") or check[1].kw != "IN":
        return None
    if check[2].text != "(" or matching_paren(check, 2) != len(check) - 1:
        return None
    values = [literal(part) for part in split_top(check[3:-1])]
    if not values or any(v is None for v in values):
        return None
    return check[0].name, [v for v in values if v is not None]


def _add_check(columns: Columns, col: str, check: list[Tok]) -> None:
    old = columns[col].get("check")
    columns[col]["check"] = f"({old}) AND ({render(check)})" if old else render(check)


def _apply_check(columns: Columns, owner: str | None, check: list[Tok]) -> bool:
    """Record one CHECK: an enum where it has that shape, else a column ``check``.

    A table-level CHECK goes on the first column it mentions (SQLite does not mind which column
    carries it). Returns False when no column can carry it.
    """
    lower = {c.lower(): c for c in columns}
    enum = _enum_of(check)
    target = lower.get(enum[0].lower()) if enum else None
    if enum and target and "enum" not in columns[target]:
        columns[target]["enum"] = enum[1]
        return True
    mentioned = [lower[t.name.lower()] for t in check if t.name.lower() in lower]
    col = lower.get(owner.lower()) if owner else (mentioned[0] if mentioned else None)
    if col is None:
        return False
    _add_check(columns, col, check)
    return True


def _column_checks(stmt: Statement, name: str, columns: Columns, source: str) -> None:
    for segment in _definitions(stmt, name, source):
        owner = None if segment[0].kw in _TABLE_CONSTRAINTS else segment[0].name
        for check in _checks(segment):
            if not _apply_check(columns, owner, check):
                fail(source, stmt.line, f"table {name}", f"cannot place CHECK ({render(check)})")


# -- keys and indexes --------------------------------------------------------------------------


def _actual_table(conn: sqlite3.Connection, target: str) -> str:
    row = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND lower(name) = lower(?)", (target,)
    ).fetchone()
    return str(row[0]) if row else target


def _target_key(conn: sqlite3.Connection, table: str, where: str, source: str) -> str:
    pks = [r[1] for r in conn.execute(f"PRAGMA table_info({quote_ident(table)})") if r[5]]
    if len(pks) != 1:
        fail(source, None, where, f"{table} has no single primary key to reference")
    return str(pks[0])


def _foreign_keys(conn: sqlite3.Connection, name: str, columns: Columns, source: str) -> None:
    rows = conn.execute(f"PRAGMA foreign_key_list({quote_ident(name)})").fetchall()
    lower = {c.lower(): c for c in columns}
    for fk_id, _seq, target, col, to, *_ in rows:
        if sum(1 for r in rows if r[0] == fk_id) > 1:
            fail(source, None, f"table {name}", "composite foreign keys are not supported")
        actual = _actual_table(conn, target)
        to = to or _target_key(conn, actual, f"table {name}.{col}", source)
        columns[lower[col.lower()]]["references"] = f"{actual}.{to}"


def _unique(conn: sqlite3.Connection, name: str, columns: Columns, source: str) -> list[list[str]]:
    groups: list[list[str]] = []
    for _seq, index, unique, origin, partial in conn.execute(
        f"PRAGMA index_list({quote_ident(name)})"
    ):
        if not unique or origin == "pk":
            continue
        cols = [r[2] for r in conn.execute(f"PRAGMA index_info({quote_ident(index)})")]
        if partial or None in cols:
            fail(source, None, f"index {index}", "partial and expression indexes are not supported")
        if len(cols) == 1:
            columns[cols[0]]["unique"] = True
        else:
            groups.append(cols)
    return sorted(groups)


# -- tables ------------------------------------------------------------------------------------


def _lifecycle(columns: Columns) -> dict[str, Any] | None:
    """A ``status`` column with a cancelled-like value, else an ``active`` 0/1 flag."""
    status = columns.get("status", {}).get("enum") or []
    inactive = [v for v in status if v in _INACTIVE_STATUSES]
    if inactive:
        return {"column": "status", "inactive_values": inactive}
    for flag in ("active", "is_active"):
        if sorted(columns.get(flag, {}).get("enum") or []) == [0, 1]:
            return {"column": flag, "inactive_values": [0]}
    return None


def _description(comment: str, name: str) -> str:
    text = _TIER_MARK.sub("", comment)
    text = re.sub(rf"\bTable:\s*{re.escape(name)}\b", "", text, flags=re.I)
    return " ".join(text.split()).strip(" :-")


def _table_name(stmt: Statement) -> str:
    toks = [t for t in stmt.tokens if t.kw not in ("CREATE", "TEMP", "TEMPORARY", "TABLE")]
    if [t.kw for t in toks[:3]] == ["IF", "NOT", "EXISTS"]:
        toks = toks[3:]
    if len(toks) > 2 and toks[1].text == ".":
        toks = toks[2:]
    return toks[0].name


def _import_table(conn: sqlite3.Connection, stmt: Statement, source: str) -> dict[str, Any]:
    name = _table_name(stmt)
    columns = _columns(conn, stmt, name, source)
    _column_checks(stmt, name, columns, source)
    _foreign_keys(conn, name, columns, source)
    mark = _TIER_MARK.search(stmt.comment)
    auto = any(c.get("autoincrement") for c in columns.values())
    tier = _TIERS[mark.group(1)] if mark else ("transaction" if auto else "entity")
    table: dict[str, Any] = {
        "name": name,
        "tier": tier,
        "access": "read-write" if tier == "transaction" else "read-only",
        "description": _description(stmt.comment, name),
        "unique": _unique(conn, name, columns, source),
        "columns": list(columns.values()),
    }
    lifecycle = _lifecycle(columns)
    if lifecycle is not None:
        table["lifecycle"] = lifecycle
    return table


# -- transactions and assembly -----------------------------------------------------------------


def _parameters(columns: list[dict[str, Any]], kind: str) -> list[str]:
    """Insert: the columns an insert must supply. Update: the key, then every other column."""
    if kind == "insert":
        return [
            c["name"]
            for c in columns
            if c.get("not_null") and "default" not in c and not c.get("primary_key")
        ]
    keys = [c["name"] for c in columns if c.get("primary_key")]
    return keys + [c["name"] for c in columns if not c.get("primary_key")]


def _assign(imported: _Imported, table: str, kind: str, tx_id: str) -> None:
    for rule in imported.rules:
        if rule["table"] == table and kind in rule["on"]:
            rule["transaction"] = tx_id
    for effect in imported.effects:
        if effect["table"] == table and effect["on"] == kind:
            effect["transaction"] = tx_id


def _transactions(imported: _Imported) -> list[dict[str, Any]]:
    """One generic procedure per write tool, owning that tool's rules and effects."""
    out = []
    for table in imported.tables:
        if table["access"] != "read-write":
            continue
        has_key = any(c.get("primary_key") for c in table["columns"])
        for kind in ("insert", "update") if has_key else ("insert",):
            tool = f"{kind}_{table['name']}"
            verb = "Create a new" if kind == "insert" else "Update an existing"
            out.append(
                {
                    "id": tool[:63],
                    "name": f"{verb} {table['name']} record",
                    "goal": f"{verb} row of {table['name']} within the enforced rules.",
                    "tool": tool,
                    "parameters": _parameters(table["columns"], kind),
                }
            )
            _assign(imported, table["name"], kind, tool[:63])
    return out


def _read_script(ddl: str, source: str) -> _Imported:
    statements = split_statements(ddl)
    if not statements:
        fail(source, None, "<sql>", "the script has no statements")
    kinds = [_statement_kind(s, source) for s in statements]
    imported = _Imported()
    conn = sqlite3.connect(":memory:")
    try:
        for stmt, kind in zip(statements, kinds, strict=True):
            if kind != "pragma":
                _execute(conn, stmt, source)
        for order, (stmt, kind) in enumerate(zip(statements, kinds, strict=True)):
            if kind == "table":
                imported.tables.append(_import_table(conn, stmt, source))
            elif kind == "trigger":
                imported.triggers.append(parse_trigger(stmt, source, order))
    finally:
        conn.close()
    return imported


def _check_compiles(spec: DomainSpec, source: str) -> None:
    conn = sqlite3.connect(":memory:")
    try:
        run_guarded(conn, BuildGuard(spec), "ddl", compile_sql(spec).full)
    except ValueError as exc:
        fail(source, None, "<compiled>", f"the imported spec does not compile in SQLite: {exc}")
    finally:
        conn.close()


def import_sql(ddl: str, *, name: str, source: str = "<sql>") -> DomainSpec:
    """Import a domain from a SQLite DDL script (CREATE TABLE / INDEX / TRIGGER statements).

    Tables keep their columns, types, NOT NULL, constant defaults, ``CHECK (col IN (...))``
    enums, other CHECKs, UNIQUE constraints and single-column foreign keys. The tier comes from
    an ``-- L0_REFERENCE`` / ``-- L1_ENTITY`` / ``-- L2_TRANSACTION`` comment right before the
    table, else from an AUTOINCREMENT key (transaction) or its absence (entity); transaction
    tables are read-write, the others read-only. BEFORE triggers made of ``SELECT CASE WHEN
    <cond> THEN RAISE(ABORT, '[CODE] message') ... END;`` statements become one rule per WHEN
    branch (``<TRIGGER_NAME>_<n>``); AFTER triggers become effects with their body verbatim.
    Rules and effects are listed in SQLite's firing order, so the compiled spec reports the same
    first violation as the script. Each writable table gets generic insert and update
    transactions that own its rules and effects. The wiki is minimal.

    Args:
        ddl: The SQL script.
        name: The domain name (a lower-case identifier).
        source: Where the script came from, used in error messages.

    Returns:
        A validated DomainSpec whose compiled SQL SQLite accepts.

    Raises:
        SpecError: SQLite rejects a statement, a statement or trigger has a shape the importer
            cannot represent, or the resulting spec does not validate or compile.
    """
    imported = _read_script(ddl, source)
    tables = [t["name"] for t in imported.tables]
    for trigger in firing_order(imported.triggers, tables):
        if trigger.timing == "BEFORE":
            imported.rules += trigger_rules(trigger, source)
        else:
            imported.effects.append(trigger_effect(trigger))
    data: dict[str, Any] = {
        "name": name,
        "description": f"Imported from {source}.",
        "wiki": {
            "title": f"{name.replace('_', ' ').title()} Policy",
            "persona": f"You are a helpful assistant for {name}.",
        },
        "tables": imported.tables,
        "rules": imported.rules,
        "effects": imported.effects,
        "transactions": _transactions(imported),
    }
    spec = spec_from_data(data, source=source)
    _check_compiles(spec, source)
    return spec
