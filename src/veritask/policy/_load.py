"""Load a DomainSpec from YAML, reporting errors with file, line and field."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from veritask.policy._spec import Column, DomainSpec, Table

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


@dataclass(frozen=True)
class SpecIssue:
    """One problem in a spec: where it is and what is wrong."""

    path: str
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.field}: {self.message}"


class SpecError(ValueError):
    """A spec failed to parse or validate; ``issues`` lists every problem found."""

    def __init__(self, issues: list[SpecIssue]) -> None:
        self.issues = issues
        super().__init__("invalid domain spec:\n" + "\n".join(f"  {i}" for i in issues))


def _index_lines(node: yaml.Node, loc: Loc, out: dict[Loc, int]) -> None:
    out[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            name = key.value
            out[(*loc, name)] = key.start_mark.line + 1
            _index_lines(value, (*loc, name), out)
            out[(*loc, name)] = key.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _index_lines(item, (*loc, i), out)


def _line_for(lines: dict[Loc, int], loc: Loc) -> int | None:
    for n in range(len(loc), -1, -1):
        if loc[:n] in lines:
            return lines[loc[:n]]
    return None


def _field_name(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<root>"


def load_spec(path: str | Path) -> DomainSpec:
    """Load and validate a spec file; raise SpecError naming file, line and field."""
    p = Path(path)
    return parse_spec(p.read_text(encoding="utf-8"), source=str(p))


def parse_spec(text: str, source: str = "<spec>") -> DomainSpec:
    """Parse and validate spec YAML text; raise SpecError naming line and field."""
    try:
        node = yaml.compose(text, Loader=_Loader)
        data = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise SpecError([SpecIssue(source, line, "<yaml>", str(exc))]) from exc
    lines: dict[Loc, int] = {}
    if node is not None:
        _index_lines(node, (), lines)
    if not isinstance(data, dict):
        raise SpecError([SpecIssue(source, 1, "<root>", "a spec is a YAML mapping")])
    return spec_from_data(data, source=source, lines=lines)


def spec_from_data(
    data: dict[str, Any], source: str = "<spec>", lines: dict[Loc, int] | None = None
) -> DomainSpec:
    """Validate already-parsed spec data (structure, then cross references)."""
    lines = lines or {}
    try:
        spec = DomainSpec.model_validate(data)
    except ValidationError as exc:
        issues = [
            SpecIssue(
                source, _line_for(lines, tuple(e["loc"])), _field_name(tuple(e["loc"])), e["msg"]
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


_NEW_OLD = re.compile(r"\b(NEW|OLD)\.([A-Za-z_][A-Za-z0-9_]*)")
_RESERVED_QUERY_ARGS = {"limit", "offset", "order_by", "descending"}


def _check_columns(table: Table, loc: Loc) -> Iterator[tuple[Loc, str]]:
    names = [c.name for c in table.columns]
    for i, col in enumerate(table.columns):
        cloc = (*loc, "columns", i)
        if names.count(col.name) > 1:
            yield (*cloc, "name"), f"duplicate column {col.name!r}"
        if col.name in _RESERVED_QUERY_ARGS or col.name.endswith(("_min", "_max")):
            yield (*cloc, "name"), f"{col.name!r} clashes with query-tool arguments"
        if col.autoincrement and not (col.primary_key and col.type == "INTEGER"):
            yield (*cloc, "autoincrement"), "autoincrement needs an INTEGER primary key"
        yield from _check_enum_default(col, cloc)
    if sum(c.primary_key for c in table.columns) > 1:
        yield (*loc, "columns"), "at most one primary-key column is supported"
    for j, group in enumerate(table.unique):
        for name in group:
            if name not in names:
                yield (*loc, "unique", j), f"unknown column {name!r}"
    if table.lifecycle and table.lifecycle.column not in names:
        yield (*loc, "lifecycle", "column"), f"unknown column {table.lifecycle.column!r}"


def _check_enum_default(col: Column, cloc: Loc) -> Iterator[tuple[Loc, str]]:
    if col.enum is not None and col.default is not None and col.default not in col.enum:
        yield (*cloc, "default"), f"default {col.default!r} is not one of {col.enum}"


def _check_sql_columns(
    spec: DomainSpec, table: str, sql: str, loc: Loc, events: list[str]
) -> Iterator[tuple[Loc, str]]:
    cols = set(spec.table(table).column_names)
    for ref, col in _NEW_OLD.findall(sql):
        if col not in cols and col != "rowid":
            yield loc, f"{ref}.{col}: {table} has no column {col!r}"
        if ref == "OLD" and "insert" in events:
            yield loc, f"OLD.{col} is not available on insert"


def check_references(spec: DomainSpec) -> Iterator[tuple[Loc, str]]:
    """Yield (location, message) for every cross-reference the schema cannot check."""
    table_names = [t.name for t in spec.tables]
    if spec.actor is not None and spec.actor not in table_names:
        yield ("actor",), f"unknown table {spec.actor!r}"
    for i, table in enumerate(spec.tables):
        if table.name.startswith("vt_"):
            yield (
                ("tables", i, "name"),
                "table names starting with 'vt_' are reserved for the engine",
            )
        if table_names.count(table.name) > 1:
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
    yield from _check_effects(spec)
    yield from _check_transactions(spec)
    yield from _check_seed(spec)


def _check_rules(spec: DomainSpec) -> Iterator[tuple[Loc, str]]:
    ids = [r.id for r in spec.rules] + [e.id for e in spec.effects]
    tx_ids = {t.id for t in spec.transactions}
    for i, rule in enumerate(spec.rules):
        loc: Loc = ("rules", i)
        if ids.count(rule.id) > 1:
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
        for part in ("when", "condition", "detail"):
            sql = getattr(rule, part)
            if sql:
                yield from _check_sql_columns(spec, rule.table, sql, (*loc, part), list(rule.on))
        if rule.repair is not None:
            if rule.repair.column not in spec.table(rule.table).column_names:
                yield (
                    (*loc, "repair", "column"),
                    f"{rule.table} has no column {rule.repair.column!r}",
                )
            yield from _check_sql_columns(
                spec, rule.table, rule.repair.value, (*loc, "repair", "value"), list(rule.on)
            )


def _check_effects(spec: DomainSpec) -> Iterator[tuple[Loc, str]]:
    tx_ids = {t.id for t in spec.transactions}
    for i, effect in enumerate(spec.effects):
        loc: Loc = ("effects", i)
        if not spec.has_table(effect.table):
            yield (*loc, "table"), f"unknown table {effect.table!r}"
            continue
        if effect.transaction and effect.transaction not in tx_ids:
            yield (*loc, "transaction"), f"unknown transaction {effect.transaction!r}"
        for part in ("when", "sql"):
            sql = getattr(effect, part)
            if sql:
                yield from _check_sql_columns(spec, effect.table, sql, (*loc, part), [effect.on])


def _check_transactions(spec: DomainSpec) -> Iterator[tuple[Loc, str]]:
    writable = {t.name for t in spec.tables if t.writable}
    for i, tx in enumerate(spec.transactions):
        kind, _, table = tx.tool.partition("_")
        if kind not in ("insert", "update") or table not in writable:
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


def _check_seed(spec: DomainSpec) -> Iterator[tuple[Loc, str]]:
    for name, rows in spec.seed.items():
        if not spec.has_table(name):
            yield ("seed", name), f"unknown table {name!r}"
            continue
        cols = set(spec.table(name).column_names)
        for k, row in enumerate(rows):
            for key in row:
                if key not in cols:
                    yield ("seed", name, k, key), f"{name} has no column {key!r}"
