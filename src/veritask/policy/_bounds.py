"""Numeric bounds a column's ``check`` expression puts on the column, read from its parse tree.

``credits BETWEEN 1 AND 6``, ``copay_pct >= 0 AND copay_pct <= 100`` or ``capacity > 0`` give an
interval a value generator can draw from. Only conjunctions of comparisons between the column and
a numeric literal count; anything else (``OR``, other columns, functions) leaves that side open,
so the interval is a necessary condition, never a sufficient one: candidates are still checked
against the whole expression before use.
"""

from __future__ import annotations

from collections.abc import Iterator

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from veritask.policy._spec import Column

Bound = int | float | None

_FLIP: dict[type[exp.Expr], type[exp.Expr]] = {
    exp.GT: exp.LT,
    exp.GTE: exp.LTE,
    exp.LT: exp.GT,
    exp.LTE: exp.GTE,
    exp.EQ: exp.EQ,
}


def _conjuncts(node: exp.Expr) -> Iterator[exp.Expr]:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        yield from _conjuncts(node.left)
        yield from _conjuncts(node.right)
    else:
        yield node


def _number(node: exp.Expr | None) -> int | float | None:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Neg):
        inner = _number(node.this)
        return None if inner is None else -inner
    if isinstance(node, exp.Literal) and node.is_number:
        text = node.this
        return int(text) if text.lstrip("-").isdigit() else float(text)
    return None


def _is_column(node: exp.Expr | None, name: str) -> bool:
    while isinstance(node, exp.Paren):
        node = node.this
    return isinstance(node, exp.Column) and not node.table and node.name.lower() == name.lower()


def _comparison(node: exp.Expr, name: str, step: int) -> tuple[Bound, Bound]:
    kind: type[exp.Expr] = type(node)
    if kind not in _FLIP:
        return None, None
    left, right = node.args.get("this"), node.args.get("expression")
    if _is_column(right, name):
        left, right, kind = right, left, _FLIP[kind]
    value = _number(right)
    if not _is_column(left, name) or value is None:
        return None, None
    if kind is exp.EQ:
        return value, value
    if kind in (exp.GT, exp.GTE):
        return value + (step if kind is exp.GT else 0), None
    return None, value - (step if kind is exp.LT else 0)


def _node_bounds(node: exp.Expr, name: str, step: int) -> tuple[Bound, Bound]:
    if isinstance(node, exp.Between) and _is_column(node.this, name):
        return _number(node.args.get("low")), _number(node.args.get("high"))
    return _comparison(node, name, step)


def check_bounds(col: Column) -> tuple[Bound, Bound]:
    """The interval ``(low, high)`` the column's ``check`` keeps the column in (None: open).

    Strict comparisons on an ``INTEGER`` column move the bound by one (``> 0`` gives low 1);
    on ``REAL`` they stay at the literal (the check itself rejects the literal).
    """
    if not col.check:
        return None, None
    try:
        tree = sqlglot.parse_one(col.check, read="sqlite")
    except SqlglotError:
        return None, None
    step = 1 if col.type == "INTEGER" else 0
    low: Bound = None
    high: Bound = None
    for node in _conjuncts(tree):
        lo, hi = _node_bounds(node, col.name, step)
        if lo is not None:
            low = lo if low is None else max(low, lo)
        if hi is not None:
            high = hi if high is None else min(high, hi)
    return low, high
