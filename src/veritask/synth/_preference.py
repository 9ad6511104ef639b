"""Preference and attribute-selection requests (LOGIGEN section 3.5, the Client's requests).

A user often names a record by what they prefer rather than by its name: "the cheapest
compliant hotel", "the earliest slot with a specialist", "my most recent booking". After the
Explorer has built a request, :func:`prefer` may restate one record it names that way: a
:class:`~veritask.task.Preference` (the least or greatest value of one attribute the user can
see) over a filter the user states (an attribute the record shares with others, and the user's
own records when the table is theirs). It is only made when the record is the UNIQUE best one
under the preference among the rows the filter picks out, every one of which has a value to
compare: ties and gaps are refused here, at generation, so the target follows from the stated
preference and the state alone. The grounding certificate and the faithful agent resolve the
ref with the same read (:func:`veritask.task.preference_args`), which the Explorer makes in the
witness before the write.

Which slot, attribute, order and filter are chosen is drawn from the Explorer's seeded RNG
among every option that names the record uniquely, so a dataset is deterministic in its seed.
"""

from __future__ import annotations

import random
from itertools import combinations
from typing import TYPE_CHECKING, Any

from veritask.policy import Column, Table, Transaction
from veritask.synth._analysis import DomainModel
from veritask.synth._values import is_time
from veritask.task import Ask, Preference, RowRef, TaskDescription, best_row, preference_args

if TYPE_CHECKING:
    from veritask.synth._refs import AskMaker

PREFERENCE_TAG = "preference"
"""The tag of a package that has at least one preference request (``report`` counts it)."""
SHARE = 0.8
"""Chance that a request with a record a preference can name names it so."""
MIN_CHOICE = 2
"""Rows a filter must leave for a preference to choose among."""
MAX_FILTER = 2
"""Most attributes one filter states."""

Option = tuple[str, Preference, dict[str, Any]]
"""(slot, preference, filter): ``slot`` is ``"target"`` or a foreign-key column of the ask."""


def prefer(
    maker: AskMaker, tx: Transaction, args: dict[str, Any], ask: Ask, rng: random.Random
) -> Ask:
    """``ask`` with one record it names restated as a preference, when some preference picks
    it out uniquely (drawn with ``SHARE``); else ``ask`` unchanged."""
    model = maker.model
    options = [
        option
        for slot, key in _slots(model, tx, args, ask)
        for option in _options(maker, _slot_table(model, tx, slot), slot, key)
    ]
    if not options or rng.random() >= SHARE:
        return ask
    slot, preference, filters = rng.choice(options)
    table = model.spec.table(_slot_table(model, tx, slot))
    match = {c: maker._part(table.name, table.column(c), v, 0) for c, v in filters.items()}
    ref = RowRef(table=table.name, match=match, prefer=preference)
    if slot == "target":
        return ask.model_copy(update={"target": ref})
    return ask.model_copy(update={"refs": {**ask.refs, slot: ref}})


def read_args(maker: AskMaker, ref: RowRef) -> dict[str, Any]:
    """The query arguments that find ``ref``: its match (parents by their keys), and for a
    preference the order and page that put the best record first."""
    match = maker.scalar(ref)
    return match if ref.prefer is None else preference_args(match, ref.prefer)


def _slot_table(model: DomainModel, tx: Transaction, slot: str) -> str:
    tool = model.tool(tx.tool)
    if slot == "target":
        return tool.table
    return (model.spec.table(tool.table).column(slot).references or ".").split(".")[0]


def _slots(
    model: DomainModel, tx: Transaction, args: dict[str, Any], ask: Ask
) -> list[tuple[str, Any]]:
    """The records an ask names that a preference may name instead: (slot, key)."""
    tool = model.tool(tx.tool)
    out: list[tuple[str, Any]] = []
    if ask.target is not None and tool.key is not None and tool.key in args:
        out.append(("target", args[tool.key]))
    out += [(col, args[col]) for col in sorted(ask.refs) if col in args]
    return [(s, k) for s, k in out if _slot_table(model, tx, s) != model.actor]


def _options(maker: AskMaker, name: str, slot: str, key: Any) -> list[Option]:
    """Every (preference, filter) under which the record of ``name`` with primary key
    ``key`` is the unique best one."""
    model = maker.model
    table = model.spec.table(name)
    row = maker.view.get(name, key)
    base = _base(model, table, maker.actor, row) if row is not None else None
    if row is None or base is None or any(row.get(c) != v for c, v in base.items()):
        return []
    rows = [r for r in maker.view.rows(table.name) if all(r.get(c) == v for c, v in base.items())]
    ranked = [c for c in _ranked(maker, table) if row.get(c.name) is not None]
    out: list[Option] = []
    for filters in _filters(maker, table, row, rows):
        group = [r for r in rows if all(r.get(c) == v for c, v in filters.items())]
        if len(group) < MIN_CHOICE:
            continue
        for col in ranked:
            for order in ("min", "max"):
                pref = Preference(column=col.name, order=order)
                if best_row(group, pref) is row:
                    out.append((slot, pref, {**base, **filters}))
    return out


def _base(
    model: DomainModel, table: Table, actor: Any, row: dict[str, Any]
) -> dict[str, Any] | None:
    """What every preference over ``table`` states: the user's own records when the table is
    the user's, the record's parent on the way to the user when it is theirs through another
    record (an item of one of their orders, named as the ref names the order), else nothing."""
    path = model.owner_path.get(table.name, [])
    if not path:
        return {}
    column, parent = path[0]
    return {column: actor} if parent == model.actor else {column: row.get(column)}


def _ranked(maker: AskMaker, table: Table) -> list[Column]:
    """Attributes a user can prefer a least or greatest value of: numbers and time points
    they can see (not keys, links, computed or agent-decided columns, not flags), and on the
    user's own records the order they were made in (an autoincrement key: "your ticket made
    most recently"; the user knows the order, never the key)."""
    hidden = maker.hidden(table.name)
    label = maker.model.label.get(table.name)
    out = [
        c
        for c in table.columns
        if c.name not in hidden
        and c.name != label
        and c.references is None
        and c.enum is None
        and c.type in ("INTEGER", "REAL")
        and (is_time(c) or not c.name.startswith(("is_", "has_")))
    ]
    if maker.model.owner_path.get(table.name):
        out += [c for c in table.columns if made_order(c)]
    return out


def made_order(column: Column) -> bool:
    """Whether a column is the order records were made in (an autoincrement integer key)."""
    return column.primary_key and column.autoincrement and column.type == "INTEGER"


def _filters(
    maker: AskMaker, table: Table, row: dict[str, Any], rows: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The filters a user may state with a preference: nothing, or up to ``MAX_FILTER`` of
    the record's categorical attributes (an enum, or a text it shares with other rows)."""
    hidden = maker.hidden(table.name)
    label = maker.model.label.get(table.name)
    usable: list[str] = []
    for c in table.columns:
        value = row.get(c.name)
        if c.name in hidden or c.name == label or c.references is not None or value is None:
            continue
        if maker._avoided(value) or (isinstance(value, str) and not value.strip()):
            continue
        shared = sum(1 for r in rows if r.get(c.name) == value) >= MIN_CHOICE
        if c.enum is not None or (c.type == "TEXT" and shared):
            usable.append(c.name)
    out: list[dict[str, Any]] = [{}]
    for size in range(1, MAX_FILTER + 1):
        out += [{c: row[c] for c in group} for group in combinations(usable, size)]
    return out


def has_preference(task: TaskDescription) -> bool:
    """True when some request of ``task`` names a record by a preference."""
    for sub in task.sub_goals:
        asks = [sub.ask] if sub.ask is not None else []
        asks += [a for fb in sub.fallbacks for a in (*fb.first, fb.then) if a is not None]
        for ask in asks:
            if any(
                r is not None and r.prefer is not None for r in (ask.target, *ask.refs.values())
            ):
                return True
    return False


__all__ = [
    "PREFERENCE_TAG",
    "SHARE",
    "has_preference",
    "made_order",
    "prefer",
    "read_args",
]
