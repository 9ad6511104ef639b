"""What an alternative offered after a refusal may change and still serve the same request.

The Explorer's repairs use these when the user is offered the alternative (a reactive trigger),
so that it keeps the request's intent (docs/design/0045): a time the user stated is never
restated, and another referenced record must be of the same kind as the one asked for.
"""

from __future__ import annotations

from typing import Any

from veritask.policy import DomainSpec, Rule, Table
from veritask.synth._sampler import StateView
from veritask.task import intent_columns, is_time_column, key_names, kind_table, tested_words


def same_kind(
    view: StateView, spec: DomainSpec, ref: str, current: Any, values: list[Any], rule: Rule
) -> list[Any]:
    """The keys among ``values`` whose records agree with ``current``'s (of the table ``ref``
    points at) on its intent columns, except those ``rule`` tests; none when the table's rows
    say what the thing is (``kind_table``: an expense category, a part family)."""
    table_name = ref.split(".")[0]
    if kind_table(spec.table(table_name)):
        return []  # its rows say what the thing is: refiling it is no alternative
    asked = view.get(table_name, current) if current is not None else None
    if asked is None:
        return values
    tested = tested_words(rule, key_names(spec))
    keep = [c for c in intent_columns(spec.table(table_name)) if c not in tested]
    out = []
    for value in values:
        row = view.get(table_name, value)
        if row is not None and all(row.get(c) == asked.get(c) for c in keep):
            out.append(value)
    return out


def moves_clock(table: Table, col: str, args: dict[str, Any], decided: set[str]) -> bool:
    """True when offering another value of ``col`` would restate a time the user gave (the
    clock is not the user's to move past a time window or an irreversibility rule)."""
    if col in decided or args.get(col) is None:
        return False
    return col in table.column_names and is_time_column(table.column(col))


def offer_rank(table: Table, col: str, args: dict[str, Any]) -> int:
    """Which columns an offered alternative changes first: 0 a value the user left out, 1
    another referenced record (of the same kind), 2 a value the user stated."""
    if args.get(col) in (None, ""):
        return 0  # an empty text is a value left out: a rejection's reason is supplied
    return 1 if col in table.column_names and table.column(col).references else 2
