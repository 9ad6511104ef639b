"""Rename tables and columns inside spec SQL through its parse tree (sqlglot, SQLite dialect).

Fusion moves each service's tables into a namespace and merges the actor tables into one
person table, so every rule, effect and check must be rewritten. The SQL is parsed, the
``Table`` and ``Column`` nodes are renamed, and the tree is rendered back: no text is pasted or
matched with regular expressions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

_THRESHOLD = "{threshold}"
_SENTINEL = "vt_threshold_placeholder"
_PSEUDO = frozenset({"new", "old"})


@dataclass(frozen=True)
class Renames:
    """What one service's SQL must call things in the fused spec.

    Attributes:
        tables: original table name -> fused table name (every table of the service).
        columns: original table name -> {original column -> fused column} (only the columns
            that change name).
    """

    tables: Mapping[str, str]
    columns: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def table(self, name: str) -> str:
        """The fused name of a table (unchanged when it is not one of the service's)."""
        return self.tables.get(name, name)

    def column(self, table: str, name: str) -> str:
        """The fused name of ``table.name``."""
        return self.columns.get(table, {}).get(name, name)

    def reference(self, ref: str) -> str:
        """A ``table.column`` reference in fused names."""
        table, column = ref.split(".", 1)
        return f"{self.table(table)}.{self.column(table, column)}"


def _aliases(tree: exp.Expr) -> dict[str, str]:
    """``alias or table name -> original table name`` for every table the tree names."""
    out: dict[str, str] = {}
    for table in tree.find_all(exp.Table):
        out[table.alias_or_name] = table.name
    return out


def _scope_table(column: exp.Column, subject: str) -> str:
    """The original table an unqualified column belongs to: the only FROM table of its
    SELECT, the target of its UPDATE / INSERT, else the trigger's own table."""
    node: exp.Expr | None = column.parent
    while node is not None:
        if isinstance(node, exp.Select):
            sources = [t for t in node.find_all(exp.Table) if t.find_ancestor(exp.Select) is node]
            if len(sources) == 1:
                return sources[0].name
        if isinstance(node, exp.Update | exp.Insert):
            target = node.this.this if isinstance(node.this, exp.Schema) else node.this
            if isinstance(target, exp.Table):
                return target.name
        node = node.parent
    return subject


def _column_table(column: exp.Column, subject: str, aliases: dict[str, str]) -> str:
    qualifier = column.table
    if qualifier.lower() in _PSEUDO:
        return subject
    if qualifier:
        return aliases.get(qualifier, qualifier)
    return _scope_table(column, subject)


def _rename_identifiers(tree: exp.Expr, renames: Renames, subject: str) -> None:
    aliases = _aliases(tree)
    for column in list(tree.find_all(exp.Column)):
        if column.name == _SENTINEL:
            continue
        owner = _column_table(column, subject, aliases)
        new = renames.column(owner, column.name)
        if new != column.name:
            column.set("this", exp.to_identifier(new))
        qualifier = column.table
        bare = qualifier in renames.tables and aliases.get(qualifier, qualifier) == qualifier
        if bare and qualifier.lower() not in _PSEUDO:  # qualified by the table's own name
            column.set("table", exp.to_identifier(renames.table(qualifier)))
    for target in list(tree.find_all(exp.Schema)):
        owner = target.this.name if isinstance(target.this, exp.Table) else subject
        for ident in target.expressions:
            if isinstance(ident, exp.Identifier):
                ident.set("this", renames.column(owner, ident.name))
    for table in list(tree.find_all(exp.Table)):
        if table.name in renames.tables:
            table.set("this", exp.to_identifier(renames.table(table.name)))


def rewrite_sql(text: str, renames: Renames, subject: str) -> str:
    """``text`` (an expression or ``;``-separated statements) with tables and columns renamed.

    ``subject`` is the original table ``NEW`` / ``OLD`` rows belong to. A ``{threshold}``
    placeholder survives the round trip.
    """
    source = text.replace(_THRESHOLD, _SENTINEL)
    trees = [t for t in sqlglot.parse(source, read="sqlite") if t is not None]
    for tree in trees:
        _rename_identifiers(tree, renames, subject)
    out = ";\n".join(t.sql(dialect="sqlite") for t in trees)
    return out.replace(_SENTINEL, _THRESHOLD)
