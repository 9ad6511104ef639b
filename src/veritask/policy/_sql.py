"""Compile a DomainSpec into SQLite DDL (tables) and triggers (rules and effects)."""

from __future__ import annotations

import graphlib
import re
from dataclasses import dataclass

from veritask.policy._spec import Column, DomainSpec, Effect, Rule, Scalar, Table

RAISE_PATTERN = re.compile(
    r"^\[(?P<code>[A-Z0-9_]+)\] (?P<message>.*) \(rule (?P<rule>[A-Z0-9_]+)\)$", re.S
)
"""Matches the message a compiled rule raises: ``[CODE] message (rule RULE_ID)``."""


def quote_ident(name: str) -> str:
    """Quote an identifier taken from the spec (never from user input)."""
    return '"' + name.replace('"', '""') + '"'


def sql_literal(value: Scalar | None) -> str:
    """Render a spec constant as an SQL literal."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + value.replace("'", "''") + "'"


def _column_sql(col: Column) -> str:
    parts = [quote_ident(col.name), col.type]
    if col.primary_key:
        parts.append("PRIMARY KEY")
        if col.autoincrement:
            parts.append("AUTOINCREMENT")
    if col.not_null and not col.primary_key:
        parts.append("NOT NULL")
    if col.unique:
        parts.append("UNIQUE")
    if col.default is not None:
        parts.append(f"DEFAULT {sql_literal(col.default)}")
    if col.enum is not None:
        values = ", ".join(sql_literal(v) for v in col.enum)
        parts.append(f"CHECK ({quote_ident(col.name)} IN ({values}))")
    if col.check:
        parts.append(f"CHECK ({col.check})")
    if col.references:
        ref_table, ref_col = col.references.split(".")
        parts.append(f"REFERENCES {quote_ident(ref_table)}({quote_ident(ref_col)})")
    return " ".join(parts)


def table_sql(table: Table) -> str:
    """CREATE TABLE for one table, plus an index on each foreign-key column.

    Rules and effects look rows up by their parent (quotas count a request's bookings), so
    indexing foreign keys keeps trigger cost independent of the table size.
    """
    lines = [_column_sql(c) for c in table.columns]
    lines += [f"UNIQUE ({', '.join(quote_ident(n) for n in group)})" for group in table.unique]
    body = ",\n  ".join(lines)
    header = f"-- {table.tier} table, {table.access}"
    indexes = "".join(
        f"\nCREATE INDEX {quote_ident(f'vt_idx_{table.name}_{c.name}')} "
        f"ON {quote_ident(table.name)}({quote_ident(c.name)});"
        for c in table.columns
        if c.references and not c.primary_key and not c.unique
    )
    return f"{header}\nCREATE TABLE {quote_ident(table.name)} (\n  {body}\n);{indexes}"


def raise_message(rule: Rule) -> str:
    """The text a rule's trigger raises; parsed back by RAISE_PATTERN."""
    return f"[{rule.code}] {rule.message} (rule {rule.id})"


def rule_condition(rule: Rule) -> str:
    """The violation condition with ``{threshold}`` substituted and the guard folded in."""
    cond = rule.condition.strip()
    if rule.threshold is not None and rule.threshold.value is not None:
        cond = cond.replace("{threshold}", sql_literal(rule.threshold.value))
    if rule.when:
        return f"({rule.when.strip()}) AND ({cond})"
    return f"({cond})"


def _rules_trigger(table: str, event: str, rules: list[Rule]) -> str:
    branches = "\n".join(
        f"    WHEN {rule_condition(r)}\n      THEN RAISE(ABORT, {sql_literal(raise_message(r))})"
        for r in rules
    )
    name = quote_ident(f"vt_rules_{table}_{event}")
    return (
        f"CREATE TRIGGER {name}\nBEFORE {event.upper()} ON {quote_ident(table)}\nFOR EACH ROW\n"
        f"BEGIN\n  SELECT CASE\n{branches}\n  END;\nEND;"
    )


def _effect_trigger(effect: Effect) -> str:
    body = effect.sql.strip()
    if not body.endswith(";"):
        body += ";"
    when = f"\nWHEN {effect.when.strip()}" if effect.when else ""
    name = quote_ident(f"vt_effect_{effect.id.lower()}")
    return (
        f"-- effect {effect.id}: {' '.join(effect.description.split())}\n"
        f"CREATE TRIGGER {name}\nAFTER {effect.on.upper()} ON {quote_ident(effect.table)}\n"
        f"FOR EACH ROW{when}\nBEGIN\n  {body}\nEND;"
    )


def table_order(spec: DomainSpec) -> list[str]:
    """Tables ordered so that referenced tables come before the tables that reference them."""
    sorter: graphlib.TopologicalSorter[str] = graphlib.TopologicalSorter()
    for table in spec.tables:
        deps = {c.references.split(".")[0] for c in table.columns if c.references}
        sorter.add(table.name, *sorted(deps - {table.name}))
    try:
        order = list(sorter.static_order())
    except graphlib.CycleError:
        return [t.name for t in spec.tables]
    return order


@dataclass(frozen=True)
class CompiledSQL:
    """The SQL of a spec, split so seed rows can be loaded before triggers exist."""

    tables: str
    triggers: str

    @property
    def full(self) -> str:
        """Tables followed by triggers, as one script."""
        return f"{self.tables}\n\n{self.triggers}\n"


def compile_sql(spec: DomainSpec) -> CompiledSQL:
    """Compile a spec into SQL that SQLite accepts.

    Rules become one BEFORE trigger per (table, event) whose CASE branches follow spec order,
    so the first violated rule in the spec is the one reported. Effects become one AFTER trigger
    each, created in reverse spec order so SQLite (which fires the newest trigger first) runs them
    in spec order.
    """
    tables = "\n\n".join(table_sql(spec.table(name)) for name in table_order(spec))
    triggers: list[str] = []
    for table in spec.tables:
        for event in ("insert", "update"):
            rules = [r for r in spec.rules if r.table == table.name and event in r.on]
            if rules:
                triggers.append(_rules_trigger(table.name, event, rules))
    triggers += [_effect_trigger(e) for e in reversed(spec.effects)]
    return CompiledSQL(tables=tables, triggers="\n\n".join(triggers))
