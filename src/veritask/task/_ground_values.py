"""Value helpers of grounding: comparing values as JSON reads them back, finding a value in a
text, the rows a grounder has seen, and the alternatives a probe tries."""

from __future__ import annotations

import json
import string
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from veritask.policy import Column, Table
from veritask.task._package import RowRef

SCALARS = frozenset({str, int, float, bool, type(None)})


def same(a: Any, b: Any) -> bool:
    """Equality as values read back from JSON (1 == 1.0, tuples == lists).

    Two scalars read back as themselves, so they are compared directly (the common case);
    anything else goes through a JSON round trip."""
    if type(a) in SCALARS and type(b) in SCALARS:
        return bool(a == b)
    return bool(json.loads(json.dumps(a)) == json.loads(json.dumps(b)))


_WORD = frozenset(string.ascii_letters + string.digits + "_")


def in_text(value: Any, text: str) -> bool:
    """Whether ``str(value)`` occurs in ``text`` with no ASCII letter, digit or underscore on
    either side (the regex ``(?<![A-Za-z0-9_])value(?![A-Za-z0-9_])``, without compiling one
    pattern per value)."""
    shown = str(value)
    start = text.find(shown)
    while start >= 0:
        end = start + len(shown)
        if (start == 0 or text[start - 1] not in _WORD) and (
            end == len(text) or text[end] not in _WORD
        ):
            return True
        start = text.find(shown, start + 1)
    return False


def scalars(value: Any, out: list[Any]) -> None:
    """Append the scalars inside a JSON value (list items, dict values) to ``out``."""
    if isinstance(value, dict):
        for item in value.values():
            scalars(item, out)
    elif isinstance(value, list):
        for item in value:
            scalars(item, out)
    else:
        out.append(value)


def leaves(ref: RowRef, out: list[tuple[str, Any]]) -> None:
    """Append the scalar values a ref states, parents' included, to ``out``."""
    for col, value in ref.match.items():
        if isinstance(value, RowRef):
            leaves(value, out)
        else:
            out.append((col, value))


@dataclass
class Seen:
    """Rows the agent has seen in tool results, by (table, column, value)."""

    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def add(self, table: str, result: Any) -> None:
        rows = result.get("rows") if isinstance(result, dict) and "rows" in result else [result]
        if not rows:
            return
        kept = self.rows.setdefault(table, [])
        kept += (row for row in rows if isinstance(row, dict))

    def find(self, table: str, column: str, value: Any) -> Iterator[dict[str, Any]]:
        for row in self.rows.get(table, ()):
            if column in row and same(row[column], value):
                yield row


_COLUMNS: dict[int, tuple[Table, dict[str, Column]]] = {}
"""Columns by name per table object (held, so its id is not reused while the entry lives)."""

_MAX_TABLES = 512


def columns_of(table: Table) -> dict[str, Column]:
    """``table``'s columns by name, the first of a name as ``Table.column`` (built once per
    table object: a spec is not changed once it is compiled into an environment)."""
    entry = _COLUMNS.get(id(table))
    if entry is not None and entry[0] is table:
        return entry[1]
    found: dict[str, Column] = {}
    for column in table.columns:
        found.setdefault(column.name, column)
    if len(_COLUMNS) >= _MAX_TABLES:
        _COLUMNS.clear()
    _COLUMNS[id(table)] = (table, found)
    return found


def query_key(table: str, match: dict[str, Any]) -> tuple[Any, ...]:
    """The cache key of ``query_<table>`` with ``match`` (argument names, order, types and
    values: ``1``, ``1.0`` and ``True`` are different keys)."""
    return (table, tuple(match.items()), tuple(map(type, match.values())))


def matches(row: dict[str, Any], match: dict[str, Any]) -> bool:
    return all(k in row and same(row[k], v) for k, v in match.items())


def alternatives(column: Column, value: Any) -> list[Any]:
    """The other values a probe tries: other enum values, else one more and one less."""
    if column.enum is not None:
        return [v for v in column.enum if not same(v, value)]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return []
    step = 1 if column.type == "INTEGER" else max(abs(value) * 0.01, 0.01)
    return [value + step, value - step]
