"""Requests in the user's terms: the :class:`~veritask.task.Ask` a write answers.

An ask is built on the state the write meets (the Explorer builds it right before each attempt),
so the records it names are named as they are at that moment. A record is named by a
:class:`~veritask.task.RowRef`: its public code when it has one (or the user's own id), else
its label, then, while several rows still match, the owner (the user), its parents (named the
same way) and its other plain attributes, until exactly one row matches. Columns the user
cannot know (computed, technical, internal keys) or must not say (what the agent decides) are
never used.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from veritask.policy import Column, Table, Transaction
from veritask.synth._analysis import DomainModel, humanize
from veritask.synth._sampler import StateView
from veritask.synth._values import is_time
from veritask.task import Ask, RowRef

MAX_DEPTH = 3
"""How far parent records are followed when naming a record."""


def is_own(model: DomainModel, table: str, column: str) -> bool:
    """True when ``column`` of ``table`` is the required foreign key to the acting user (the
    first step of the table's ownership path): the agent fills it with the caller's id."""
    path = model.owner_path.get(table, [])
    return bool(path) and path[0] == (column, model.actor)


class AskMaker:
    """Builds asks and row refs for one user on a view of the current state."""

    def __init__(self, model: DomainModel, view: StateView, actor: Any) -> None:
        self.model = model
        self.view = view
        self.actor = actor
        self._hidden: dict[str, set[str]] = {}

    # -- records ---------------------------------------------------------------------------

    avoid: frozenset[Any] = frozenset()
    """Values a record is named without when it can be (what the agent decides in the
    request being built: an invoice named by its amount due would give away the payment)."""

    def ref(self, table: str, key: Any, depth: int = 0) -> RowRef:
        """The record of ``table`` with primary key ``key`` as the user names it: by the
        columns that first pick it out, leaving out values in ``avoid`` when the others do."""
        t = self.model.spec.table(table)
        pk = t.primary_key[0].name if t.primary_key else ""
        row = self.view.get(table, key)
        public = table in self.model.public_keys
        if row is None or public or (table == self.model.actor and key == self.actor):
            return RowRef(table=table, match={pk: key})
        columns = self._naming_columns(t)
        kept = [c for c in columns if not self._avoided(row.get(c.name))]
        match: dict[str, Any] = {}
        for group in (kept, columns) if len(kept) < len(columns) else (columns,):
            match = {}
            for col in group:
                value = row.get(col.name)
                if value is None:
                    continue
                match[col.name] = self._part(table, col, value, depth)
                if self._count(table, match, row) == 1:
                    return RowRef(table=table, match=match)
        return RowRef(table=table, match=match or {pk: key})

    def _avoided(self, value: Any) -> bool:
        return any(value == v and type(value) is type(v) for v in self.avoid)

    def scalar(self, ref: RowRef) -> dict[str, Any]:
        """The ref's match with each parent ref replaced by that record's key."""
        table = self.model.spec.table(ref.table)
        out: dict[str, Any] = {}
        for col, want in ref.match.items():
            if not isinstance(want, RowRef):
                out[col] = want
                continue
            parent_key = (table.column(col).references or ".").split(".")[1]
            match = self.scalar(want)
            rows = [
                r
                for r in self.view.rows(want.table)
                if all(r.get(c) == v for c, v in match.items())
            ]
            out[col] = rows[0][parent_key] if rows else None
        return out

    def _part(self, table: str, col: Column, value: Any, depth: int) -> Any:
        """One match value: a plain value, the user's own id, or the parent record's ref."""
        if col.references is None or (is_own(self.model, table, col.name) and value == self.actor):
            return value  # another person's link is named by their name, never their id
        parent = col.references.split(".")[0]
        if depth >= MAX_DEPTH:
            return value
        return self.ref(parent, value, depth + 1)

    def _count(self, table: str, match: dict[str, Any], row: dict[str, Any]) -> int:
        """Rows of ``table`` the match picks out (a parent ref matches by the row's own key)."""
        want = {c: (row[c] if isinstance(v, RowRef) else v) for c, v in match.items()}
        return sum(1 for r in self.view.rows(table) if all(r.get(c) == v for c, v in want.items()))

    def _naming_columns(self, table: Table) -> list[Column]:
        """Columns that may name a record, in the order they are tried: the label, the owner,
        the parents on the ownership path, plain attributes, then other parents."""
        hidden = self.hidden(table.name)
        usable = [c for c in table.columns if c.name not in hidden]
        label = self.model.label.get(table.name)
        path = [c for c, _ in self.model.owner_path.get(table.name, [])]
        first = [c for c in usable if c.name == label]
        owner = [c for c in usable if c.name in path]
        plain = [c for c in usable if c.references is None and c not in first]
        links = [c for c in usable if c.references is not None and c not in owner]
        return first + owner + plain + links

    def hidden(self, table: str) -> set[str]:
        """Columns never used to name a record: keys (unless public), computed and technical
        columns, and what some procedure on the table leaves to the agent."""
        if table not in self._hidden:
            t = self.model.spec.table(table)
            out = {c.name for c in t.columns if c.computed or c.technical or c.primary_key}
            for tx in self.model.write_transactions:
                if self.model.tool(tx.tool).table == table:
                    out |= self.model.agent_decides(tx)
            self._hidden[table] = out
        return self._hidden[table]

    # -- requests --------------------------------------------------------------------------

    def ask(
        self,
        tx: Transaction,
        args: dict[str, Any],
        decided: set[str],
        secret: frozenset[Any] = frozenset(),
    ) -> Ask:
        """The request for a write with ``args``: the record it changes, the records it names
        and the values the user states (never the user's own id or what the agent decides).
        Records are named without the values the agent decides here, or ``secret`` (what it
        decided earlier in the conversation), when they can be."""
        tool = self.model.tool(tx.tool)
        table = self.model.spec.table(tool.table)
        mine = (v for c, v in args.items() if c in decided)
        self.avoid = frozenset(v for v in (*mine, *secret) if isinstance(v, int | float | str))
        key = tool.key if tool.kind == "update" else None
        target = self.ref(tool.table, args[key]) if key is not None and key in args else None
        values: dict[str, Any] = {}
        refs: dict[str, RowRef] = {}
        for name, value in args.items():
            if name == key or name in decided or value is None:
                continue
            column = table.column(name)
            if column.references is None:
                values[name] = value
            elif not (is_own(self.model, tool.table, name) and value == self.actor):
                refs[name] = self.ref(column.references.split(".")[0], value)
        return Ask(transaction=tx.id, tool=tx.tool, target=target, values=values, refs=refs)


def lookups(ref: RowRef) -> Iterator[RowRef]:
    """The records an agent looks up to find ``ref``, parents first."""
    for value in ref.match.values():
        if isinstance(value, RowRef):
            yield from lookups(value)
    yield ref


def ref_text(model: DomainModel, ref: RowRef, actor: Any) -> str:
    """A record in words, saying every value its ref matches on."""
    t = model.spec.table(ref.table)
    pk = t.primary_key[0].name if t.primary_key else ""
    if set(ref.match) == {pk}:
        if ref.table == model.actor and ref.match[pk] == actor:
            return f'you (user id "{actor}")'
        return f"{humanize(ref.table)} {ref.match[pk]}"
    label = model.label.get(ref.table)
    own = any(is_own(model, ref.table, c) and v == actor for c, v in ref.match.items())
    head = f"{'your' if own else 'the'} {humanize(ref.table)}" + preferred_words(model, ref)
    if label in ref.match:
        head += f" '{ref.match[label]}'"
    extras = [
        part_text(model, ref.table, c, v, actor)
        for c, v in ref.match.items()
        if c != label and not (is_own(model, ref.table, c) and v == actor)
    ]
    return f"{head} ({', '.join(extras)})" if extras else head


def part_text(model: DomainModel, table: str, column: str, value: Any, actor: Any) -> str:
    """One stated value (or named record) of a request in words."""
    words = column.replace("_", " ")
    if isinstance(value, RowRef):
        t = model.spec.table(value.table)
        pk = t.primary_key[0].name if t.primary_key else ""
        if value.table == model.actor or (set(value.match) == {pk}):
            key = value.match.get(pk)
            if value.table == model.actor and key == actor:
                return f'{words.removesuffix(" id")}: you (user id "{actor}")'
            if key is not None:
                return f"{words.removesuffix(' id')} {key}"
            return f"{words.removesuffix(' id')}: {ref_text(model, value, actor)}"
        if _shares_parent(model, table, column):
            # two links to one table (from / to account, requested / decided by): say which
            return f"{words.removesuffix(' id')}: {ref_text(model, value, actor)}"
        return ref_text(model, value, actor)
    if is_own(model, table, column) and value == actor:
        return f'{words.removesuffix(" id")}: you (user id "{actor}")'
    t = model.spec.table(table)
    if column in t.column_names and t.column(column).references is not None:
        # a record's own number the user knows (an order number): "order 1001", as a named
        # record is said above, not "order id 1001", which reads as an internal row id
        return f"{words.removesuffix(' id')} {value}"
    return f"{words} {value}"


def _shares_parent(model: DomainModel, table: str, column: str) -> bool:
    """True when another foreign key of ``table`` references the same table as ``column``, so
    the record alone does not say which role it plays."""
    t = model.spec.table(table)
    if column not in t.column_names or t.column(column).references is None:
        return False
    parent = (t.column(column).references or ".").split(".")[0]
    return any(
        c.name != column and c.references and c.references.split(".")[0] == parent
        for c in t.columns
    )


def preferred_words(model: DomainModel, ref: RowRef) -> str:
    """The words a preference adds to a record's name: " with the lowest price"."""
    if ref.prefer is None:
        return ""
    column = model.spec.table(ref.table).column(ref.prefer.column)
    if column.primary_key and column.autoincrement:  # the order records were made in
        return " made " + ("first" if ref.prefer.order == "min" else "most recently")
    if is_time(column):
        most = "earliest" if ref.prefer.order == "min" else "latest"
    else:
        most = "lowest" if ref.prefer.order == "min" else "highest"
    return f" with the {most} {humanize(column.name)}"


__all__ = ["AskMaker", "is_own", "lookups", "part_text", "preferred_words", "ref_text"]
