"""Load a DomainSpec from YAML, reporting errors with file, line and field."""

from __future__ import annotations

import functools
import inspect
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from veritask._util import FAST_LOADER, InputError, Limits, compose_yaml
from veritask.policy._actor import actor_table
from veritask.policy._dual import check_dual
from veritask.policy._issues import SpecError as SpecError
from veritask.policy._issues import SpecIssue as SpecIssue
from veritask.policy._seed_files import SEED_FILES_KEY, SeedFileError, merge_seed_files
from veritask.policy._spec import Column, DomainSpec, Rule, Table
from veritask.policy._sqlcheck import check_spec_sql

Loc = tuple[str | int, ...]


class _Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 booleans: only true/false, so a key named ``on`` stays a string."""


_Loader.yaml_implicit_resolvers = {
    key: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


MAX_SPEC_BYTES = 4_000_000
"""The largest spec file accepted (the biggest built-in is well under 100 kB). Larger seed data
goes in data files the spec names (``seed_files``, limited per file: ``_seed_files.py``)."""

MAX_YAML_EXPANDED_BYTES = 16_000_000
"""The most bytes of scalar text a spec may stand for once YAML aliases are expanded (a small
file of nested aliases otherwise stands for gigabytes: the billion laughs)."""

MAX_TABLES = 500
"""The most tables a spec may declare: SQLite's limit on the terms of one compound SELECT, which
the engine's change tracking uses over all tables (found late, by SQLite, and unlocated)."""

MAX_YAML_DEPTH = 64
"""The deepest nesting of YAML collections in a spec (built-ins nest about six deep)."""

SPEC_LIMITS = Limits(
    max_bytes=MAX_SPEC_BYTES, max_depth=MAX_YAML_DEPTH, max_expanded=MAX_YAML_EXPANDED_BYTES
)


class _FastLoader(FAST_LOADER):  # type: ignore[misc]
    """``_Loader``'s resolvers on the C parser when PyYAML has it (same data, faster)."""

    yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers


class _YamlLimit(Exception):
    """A YAML document exceeds a limit; carries the line and the message."""

    def __init__(self, line: int | None, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def _index_lines(
    node: yaml.Node,
    loc: Loc,
    out: dict[Loc, int],
    dups: dict[int, tuple[Loc, int, str]] | None = None,
) -> None:
    """Record the line of every field; note keys repeated in one mapping (first line kept)."""
    out[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        first: dict[str, int] = {}
        for key, value in node.value:
            name = key.value
            line = key.start_mark.line + 1
            repeated = isinstance(name, str) and name in first
            if repeated and dups is not None and key.tag != "tag:yaml.org,2002:merge":
                msg = f"duplicate key {name!r} (lines {first[name]} and {line})"
                dups[id(key)] = ((*loc, name), line, msg)
                continue
            if isinstance(name, str):
                first[name] = line
            out[(*loc, name)] = line
            _index_lines(value, (*loc, name), out, dups)
            out[(*loc, name)] = line
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _index_lines(item, (*loc, i), out, dups)


def _line_for(lines: Mapping[Loc, int], loc: Loc) -> int | None:
    for n in range(len(loc), -1, -1):
        if loc[:n] in lines:
            return lines[loc[:n]]
    return None


def _field_name(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<root>"


@dataclass(frozen=True)
class SpecLines:
    """Where the fields of a loaded spec are in its YAML text.

    Attributes:
        source: The file (or label) the text came from.
        lines: 1-based line of every field, keyed by its location in the spec data
            (``("rules", 3, "examples", 0, "calls", 1)``).
    """

    source: str
    lines: Mapping[Loc, int]

    def line(self, loc: Loc) -> int | None:
        """The line of ``loc``, or of its nearest enclosing field that has one."""
        return _line_for(self.lines, loc)


def load_spec(path: str | Path) -> DomainSpec:
    """Load and validate a spec file; raise SpecError naming file, line and field."""
    return load_spec_with_lines(path)[0]


def load_spec_with_lines(path: str | Path) -> tuple[DomainSpec, SpecLines]:
    """``load_spec``, with the line of every field (to report later findings by line)."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_SPEC_BYTES:
            raise _YamlLimit(
                None, f"the file has {size} bytes; specs are limited to {MAX_SPEC_BYTES}"
            )
        text = p.read_bytes().decode("utf-8")
    except _YamlLimit as exc:
        raise SpecError([SpecIssue(str(p), exc.line, "<file>", exc.message)]) from None
    except UnicodeDecodeError as exc:
        line = p.read_bytes()[: exc.start].count(b"\n") + 1
        raise SpecError(
            [SpecIssue(str(p), line, "<file>", f"not UTF-8 text: {exc.reason}")]
        ) from None
    return parse_spec_with_lines(text, source=str(p), base=p.parent)


def _compose(text: str) -> tuple[Any, dict[Loc, int], dict[int, tuple[Loc, int, str]]]:
    """Compose and check the node graph (size, depth, keys, aliases, duplicate keys), then
    construct data.

    Raises:
        InputError: A limit is passed, a key is a collection, or the text is not YAML.
    """
    loader, node = compose_yaml(text, what="<spec>", limits=SPEC_LIMITS, loader=_FastLoader)
    try:
        lines: dict[Loc, int] = {}
        dups: dict[int, tuple[Loc, int, str]] = {}
        if node is None:
            return None, lines, dups
        _index_lines(node, (), lines, dups)
        return loader.construct_document(node), lines, dups
    finally:
        loader.dispose()


def parse_spec(text: str, source: str = "<spec>") -> DomainSpec:
    """Parse and validate spec YAML text; raise SpecError naming line and field.

    Refused before validation: text over ``MAX_SPEC_BYTES``, aliases expanding to more than
    ``MAX_YAML_EXPANDED_BYTES`` bytes, nesting past ``MAX_YAML_DEPTH``, a key that is a list or
    mapping, a key repeated in one mapping (both lines are named).
    """
    return parse_spec_with_lines(text, source)[0]


def parse_spec_with_lines(
    text: str, source: str = "<spec>", base: Path | None = None
) -> tuple[DomainSpec, SpecLines]:
    """``parse_spec``, with the line of every field.

    ``base`` is the folder of the spec's file: the ``seed_files`` it names are read from there
    (``policy/_seed_files.py``); a text without a folder may not name any.
    """
    try:
        data, lines, dups = _compose(text)
    except yaml.YAMLError as exc:  # a constructor error (an unknown tag...)
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise SpecError([SpecIssue(source, line, "<yaml>", str(exc))]) from None
    except InputError as exc:
        raise SpecError([SpecIssue(source, exc.line, "<yaml>", exc.reason)]) from None
    if dups:
        raise SpecError(
            [
                SpecIssue(source, line, _field_name(loc), msg)
                for loc, line, msg in sorted(dups.values(), key=lambda d: d[1])
            ]
        )
    if not isinstance(data, dict):
        raise SpecError([SpecIssue(source, 1, "<root>", "a spec is a YAML mapping")])
    try:
        merge_seed_files(data, base)
    except SeedFileError as exc:
        loc: Loc = (SEED_FILES_KEY,) if exc.index is None else (SEED_FILES_KEY, exc.index)
        raise SpecError(
            [SpecIssue(source, _line_for(lines, loc), _field_name(loc), exc.message)]
        ) from None
    return spec_from_data(data, source=source, lines=lines), SpecLines(source, lines)


def _message(kind: str, value: Any, msg: str) -> str:
    """pydantic's message, with the likely cause of an unknown field without a value: text
    after a comma in a flow mapping (``{description: A, B}`` reads ``B`` as a key)."""
    if kind == "extra_forbidden" and value is None:
        return (
            f"{msg} (a value with a comma in a flow mapping {{...}} ends at the comma: "
            "quote the value)"
        )
    return msg


def spec_from_data(
    data: dict[str, Any], source: str = "<spec>", lines: dict[Loc, int] | None = None
) -> DomainSpec:
    """Validate already-parsed spec data (structure, then cross references)."""
    lines = lines or {}
    tables = data.get("tables")
    if isinstance(tables, list) and len(tables) > MAX_TABLES:
        message = (
            f"{len(tables)} tables, past the limit of {MAX_TABLES} (the engine asks SQLite about "
            f"every table in one compound SELECT, which takes at most {MAX_TABLES} terms)"
        )
        raise SpecError([SpecIssue(source, _line_for(lines, ("tables",)), "tables", message)])
    try:
        spec = DomainSpec.model_validate(data)
    except ValidationError as exc:
        issues = [
            SpecIssue(
                source,
                _line_for(lines, tuple(e["loc"])),
                _field_name(tuple(e["loc"])),
                _message(e["type"], e.get("input"), e["msg"]),
            )
            for e in exc.errors()
        ]
        raise SpecError(issues) from None
    problems = list(check_references(spec))
    if problems:
        raise SpecError(
            [
                SpecIssue(source, _line_for(lines, loc), _field_name(loc), msg)
                for loc, msg in problems
            ]
        )
    return spec


_RESERVED_QUERY_ARGS = {"limit", "offset", "order_by", "descending"}
_ROWID_NAMES = {"rowid", "oid", "_rowid_"}


def _check_columns(table: Table, loc: Loc) -> Iterator[tuple[Loc, str]]:
    names = [c.name for c in table.columns]
    for i, col in enumerate(table.columns):
        cloc = (*loc, "columns", i)
        if names.count(col.name) > 1:
            yield (*cloc, "name"), f"duplicate column {col.name!r}"
        if col.name in _RESERVED_QUERY_ARGS or col.name.endswith(("_min", "_max")):
            yield (*cloc, "name"), f"{col.name!r} clashes with query-tool arguments"
        if col.name in _ROWID_NAMES:  # it would shadow the rowid that state tracking keys on
            yield (*cloc, "name"), f"{col.name!r} is SQLite's row id, which the engine uses"
        if col.autoincrement and not (col.primary_key and col.type == "INTEGER"):
            yield (*cloc, "autoincrement"), "autoincrement needs an INTEGER primary key"
        yield from _check_enum_default(col, cloc)
        yield from _check_value_source(col, cloc)
    if sum(c.primary_key for c in table.columns) > 1:
        yield (*loc, "columns"), "at most one primary-key column is supported"
    yield from _check_named_columns(table, names, loc)
    if table.lifecycle and table.lifecycle.column not in names:
        yield (*loc, "lifecycle", "column"), f"unknown column {table.lifecycle.column!r}"


def _check_named_columns(table: Table, names: list[str], loc: Loc) -> Iterator[tuple[Loc, str]]:
    """Columns that ``unique`` and ``intent`` name must exist."""
    for j, group in enumerate(table.unique):
        for name in group:
            if name not in names:
                yield (*loc, "unique", j), f"unknown column {name!r}"
    for j, name in enumerate(table.intent or []):
        if name not in names:
            yield (*loc, "intent", j), f"unknown column {name!r}"


def _check_enum_default(col: Column, cloc: Loc) -> Iterator[tuple[Loc, str]]:
    if col.enum is not None and col.default is not None and col.default not in col.enum:
        yield (*cloc, "default"), f"default {col.default!r} is not one of {col.enum}"


_VALUE_TYPES: dict[str, tuple[type, ...]] = {
    "TEXT": (str,),
    "INTEGER": (int,),
    "REAL": (int, float),
}


def _check_value_source(col: Column, cloc: Loc) -> Iterator[tuple[Loc, str]]:
    """``values`` and ``faker``: one of them, on a column tools may write, of the column's type."""
    if col.values is None and col.faker is None:
        return
    if col.values is not None and col.faker is not None:
        yield (*cloc, "faker"), "give either values or faker, not both"
    if col.references or col.primary_key or col.computed:
        yield (
            (*cloc, "values" if col.values is not None else "faker"),
            ("only columns with made-up values (not keys, foreign keys or computed) take a pool"),
        )
    for k, value in enumerate(col.values or []):
        if isinstance(value, bool) or not isinstance(value, _VALUE_TYPES[col.type]):
            yield (*cloc, "values", k), f"{value!r} is not a {col.type} value"
        elif col.enum is not None and value not in col.enum:
            yield (*cloc, "values", k), f"{value!r} is not one of {col.enum}"
    if col.faker is not None and col.faker not in faker_providers():
        yield (*cloc, "faker"), f"unknown Faker provider {col.faker!r} (e.g. name, city, company)"


@functools.cache
def faker_providers() -> frozenset[str]:
    """The Faker providers (en_US) a column's ``faker`` may name: those callable without
    arguments."""
    from faker import Faker

    names: set[str] = set()
    for provider in Faker("en_US")["en_US"].get_providers():
        for name in dir(provider):
            method = getattr(provider, name, None)
            if name.startswith("_") or not callable(method) or name.startswith("seed"):
                continue
            try:
                params = inspect.signature(method).parameters.values()
            except (TypeError, ValueError):
                continue
            if all(p.default is not inspect.Parameter.empty or p.kind in _VARIADIC for p in params):
                names.add(name)
    return frozenset(names)


_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def check_references(spec: DomainSpec) -> Iterator[tuple[Loc, str]]:
    """Yield (location, message) for every cross-reference the schema cannot check."""
    table_names = Counter(t.name for t in spec.tables)
    if spec.actor is not None and spec.actor not in table_names:
        yield ("actor",), f"unknown table {spec.actor!r}"
    for i, table in enumerate(spec.tables):
        if table.name.startswith(("vt_", "sqlite_")):
            yield (
                ("tables", i, "name"),
                "table names starting with 'vt_' or 'sqlite_' are reserved (engine, SQLite)",
            )
        if table_names[table.name] > 1:
            yield ("tables", i, "name"), f"duplicate table {table.name!r}"
        yield from _check_columns(table, ("tables", i))
        for j, col in enumerate(table.columns):
            if col.references:
                ref_table, ref_col = col.references.split(".")
                if (
                    not spec.has_table(ref_table)
                    or ref_col not in spec.table(ref_table).column_names
                ):
                    yield ("tables", i, "columns", j, "references"), f"unknown {col.references!r}"
    yield from _check_rules(spec)
    yield from _check_insert_only(spec)
    yield from _check_effects(spec)
    yield from _check_transactions(spec)
    yield from _check_services(spec)
    yield from _check_seed(spec)
    yield from check_dual(spec)
    yield from check_spec_sql(spec)


def _check_rules(spec: DomainSpec) -> Iterator[tuple[Loc, str]]:
    ids = Counter([r.id for r in spec.rules] + [e.id for e in spec.effects])
    tx_ids = {t.id for t in spec.transactions}
    for i, rule in enumerate(spec.rules):
        loc: Loc = ("rules", i)
        if ids[rule.id] > 1:
            yield (*loc, "id"), f"duplicate rule/effect id {rule.id!r}"
        if not spec.has_table(rule.table):
            yield (*loc, "table"), f"unknown table {rule.table!r}"
            continue
        if rule.transaction and rule.transaction not in tx_ids:
            yield (*loc, "transaction"), f"unknown transaction {rule.transaction!r}"
        if "{threshold}" in rule.condition and (
            rule.threshold is None or rule.threshold.value is None
        ):
            yield (*loc, "condition"), "uses {threshold} but threshold.value is not set"
        yield from _check_threshold(spec, rule, loc)
        if (
            rule.repair is not None
            and rule.repair.column not in spec.table(rule.table).column_names
        ):
            yield (
                (*loc, "repair", "column"),
                f"{rule.table} has no column {rule.repair.column!r}",
            )


_TABLE_COLUMN = re.compile(r"[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*")


def _check_threshold(spec: DomainSpec, rule: Rule, loc: Loc) -> Iterator[tuple[Loc, str]]:
    """A threshold's ``column`` names an existing ``table.column``, and so does its
    ``quantity`` when written that way (a short phrase is free text): a misspelt counter would
    silently leave the limit unseeded."""
    if rule.threshold is None:
        return
    fields = [("quantity", rule.threshold.quantity, False), ("column", rule.threshold.column, True)]
    for name, ref, required in fields:
        if ref is None or not (required or _TABLE_COLUMN.fullmatch(ref)):
            continue
        table, _, column = ref.partition(".")
        if not _TABLE_COLUMN.fullmatch(ref):
            yield (*loc, "threshold", name), f"{ref!r} is not of the form table.column"
        elif not spec.has_table(table):
            yield (*loc, "threshold", name), f"unknown table {table!r}"
        elif column not in spec.table(table).column_names:
            yield (*loc, "threshold", name), f"{table} has no column {column!r}"


def _check_insert_only(spec: DomainSpec) -> Iterator[tuple[Loc, str]]:
    """An insert-only table is writable, and no rule waits for an update tools cannot make."""
    once = {t.name for t in spec.tables if t.insert_only}
    for i, table in enumerate(spec.tables):
        if table.insert_only and not table.writable:
            yield (
                ("tables", i, "insert_only"),
                "insert_only needs access read-write (a read-only table has no insert tool)",
            )
    for i, rule in enumerate(spec.rules):
        if rule.table in once and "update" in rule.on:
            yield (
                ("rules", i, "on"),
                f"{rule.table} is insert_only (no update tool): a rule on it is on [insert] only",
            )


def _check_effects(spec: DomainSpec) -> Iterator[tuple[Loc, str]]:
    tx_ids = {t.id for t in spec.transactions}
    ids = Counter([r.id for r in spec.rules] + [e.id for e in spec.effects])
    for i, effect in enumerate(spec.effects):
        loc: Loc = ("effects", i)
        if ids[effect.id] > 1:
            yield (*loc, "id"), f"duplicate rule/effect id {effect.id!r}"
        if not spec.has_table(effect.table):
            yield (*loc, "table"), f"unknown table {effect.table!r}"
            continue
        if effect.transaction and effect.transaction not in tx_ids:
            yield (*loc, "transaction"), f"unknown transaction {effect.transaction!r}"


def _check_transactions(spec: DomainSpec) -> Iterator[tuple[Loc, str]]:
    writable = {t.name for t in spec.tables if t.writable}
    updatable = {t.name for t in spec.tables if t.updatable}
    for i, tx in enumerate(spec.transactions):
        kind, _, table = tx.tool.partition("_")
        allowed = updatable if kind == "update" else writable
        if kind not in ("insert", "update") or table not in allowed:
            yield ("transactions", i, "tool"), f"{tx.tool!r} is not a write tool of this spec"
            continue
        cols = spec.table(table).column_names
        for j, param in enumerate(tx.parameters):
            if param not in cols:
                yield ("transactions", i, "parameters", j), f"{table} has no column {param!r}"
        for j, param in enumerate(tx.agent_decides):
            if param not in tx.parameters:
                yield (
                    ("transactions", i, "agent_decides", j),
                    f"{param!r} is not one of the parameters",
                )


def _check_services(spec: DomainSpec) -> Iterator[tuple[Loc, str]]:
    """Two or more services with distinct names; each lists existing tables, the actor table in
    none (it is shared) and every other table in at most one."""
    if not spec.services:
        return
    if len(spec.services) == 1:
        yield ("services",), "list two or more services (or none for a single domain)"
    actor = actor_table(spec)
    names: set[str] = set()
    owner: dict[str, str] = {}
    for i, service in enumerate(spec.services):
        if service.name in names:
            yield ("services", i, "name"), f"duplicate service {service.name!r}"
        names.add(service.name)
        for j, table in enumerate(service.tables):
            loc: Loc = ("services", i, "tables", j)
            if not spec.has_table(table):
                yield loc, f"unknown table {table!r}"
            elif table == actor:
                yield loc, f"{table!r} is the actor table: every service shares it, list it in none"
            elif table in owner:
                yield loc, f"table {table!r} is already in service {owner[table]!r}"
            else:
                owner[table] = service.name


def _check_seed(spec: DomainSpec) -> Iterator[tuple[Loc, str]]:
    for name, rows in spec.seed.items():
        if not spec.has_table(name):
            yield ("seed", name), f"unknown table {name!r}"
            continue
        table = spec.table(name)
        for k, row in enumerate(rows):
            if not row:
                yield ("seed", name, k), "a row names no column"
            for key, value in row.items():
                if key not in table.column_names:
                    yield ("seed", name, k, key), f"{name} has no column {key!r}"
                    continue
                if isinstance(value, int) and not -(2**63) <= value < 2**63:
                    yield ("seed", name, k, key), "is outside SQLite's 64-bit integer range"
                enum = table.column(key).enum
                if enum is not None and value is not None and value not in enum:
                    yield ("seed", name, k, key), f"{value!r} is not one of {enum}"
