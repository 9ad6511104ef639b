"""What a piece of spec SQL reads and writes, from its parse tree (never from its text)."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from veritask.policy import DomainSpec, Rule

_PSEUDO = frozenset({"new", "old"})


def _trees(text: str) -> list[exp.Expr]:
    return [t for t in sqlglot.parse(text, read="sqlite") if t is not None]


def tables_read(text: str | None) -> set[str]:
    """Names of the tables a SQL expression or statement list selects from."""
    if not text:
        return set()
    found: set[str] = set()
    for tree in _trees(text):
        targets = {id(t.this) for t in tree.find_all(exp.Insert, exp.Update)}
        for table in tree.find_all(exp.Table):
            if id(table) not in targets and table.name.lower() not in _PSEUDO:
                found.add(table.name)
    return found


def _target_name(node: exp.Expr) -> str:
    target = node.this
    if isinstance(target, exp.Schema):
        target = target.this
    return target.name if isinstance(target, exp.Table) else ""


def tables_written(text: str) -> set[str]:
    """Names of the tables the INSERT / UPDATE statements of an effect write."""
    return {
        name
        for tree in _trees(text)
        for node in tree.find_all(exp.Insert, exp.Update)
        if (name := _target_name(node))
    }


def rule_reads(rule: Rule) -> set[str]:
    """Tables a rule's guard and condition look up (its own table excluded)."""
    condition = rule.condition.replace("{threshold}", "0")
    return (tables_read(rule.when) | tables_read(condition)) - {rule.table}


def effect_writes(spec: DomainSpec) -> dict[str, set[str]]:
    """``effect id -> tables its SQL writes``."""
    return {effect.id: tables_written(effect.sql) for effect in spec.effects}
