"""Row-level diffs as tables: added, removed and changed rows with the changed cells marked.

A DIFF lists the rows only in the second state (added) and only in the first (removed). A row an
update changed shows up once on each side; pairing them back turns the two into one *changed*
row. Rows pair on the table's primary key when the diff keeps it (text keys such as ``m_01``),
otherwise on the columns no update changes (tools and triggers alike), then on the most cells in
common; with neither, at least half the cells must agree.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Row = dict[str, Any]


@dataclass
class TableView:
    """One table of a diff, ready to draw.

    Attributes:
        name: The table.
        columns: The columns shown (those of the diffed rows).
        added: Rows only in the second state.
        removed: Rows only in the first state.
        changed: ``(before, after, changed columns)`` for rows present on both sides.
    """

    name: str
    columns: list[str]
    added: list[Row] = field(default_factory=list)
    removed: list[Row] = field(default_factory=list)
    changed: list[tuple[Row, Row, set[str]]] = field(default_factory=list)

    @property
    def rows(self) -> int:
        """How many rows the table shows."""
        return len(self.added) + len(self.removed) + len(self.changed)


def _changed_columns(before: Row, after: Row) -> set[str]:
    return {c for c in after if before.get(c) != after.get(c)}


def _pair(removed: list[Row], added: list[Row], fixed: Sequence[str]) -> list[tuple[Row, Row]]:
    """Pairs (before, after): the after row agrees on every ``fixed`` column and has the most
    cells in common; with no fixed columns, at least half the cells must agree."""
    pairs, free = [], list(added)
    for row in removed:
        scored = [
            (len(row) - len(_changed_columns(row, cand)), i)
            for i, cand in enumerate(free)
            if all(row.get(c) == cand.get(c) for c in fixed)
        ]
        same, index = max(scored, default=(0, -1))
        if index >= 0 and (fixed or same * 2 >= len(row)):
            pairs.append((row, free.pop(index)))
    return pairs


def table_view(
    name: str, added: Sequence[Row], removed: Sequence[Row], fixed: Sequence[str] = ()
) -> TableView:
    """Pair the removed and added rows of one table into changed rows where they match.

    Args:
        name: The table.
        added: Rows only in the second state.
        removed: Rows only in the first state.
        fixed: Columns no update changes (a kept primary key, else the columns neither tools
            nor the system update): a changed row agrees on all of them.
    """
    adds, rems = list(added), list(removed)
    pairs = _pair(rems, adds, [c for r in rems[:1] for c in fixed if c in r])
    paired_before = {id(b) for b, _ in pairs}
    paired_after = {id(a) for _, a in pairs}
    columns = list(dict.fromkeys(c for r in [*adds, *rems] for c in r))
    return TableView(
        name,
        columns,
        added=[r for r in adds if id(r) not in paired_after],
        removed=[r for r in rems if id(r) not in paired_before],
        changed=[(b, a, _changed_columns(b, a)) for b, a in pairs],
    )


def diff_views(diff: Mapping[str, Any], fixed: Mapping[str, Sequence[str]]) -> list[TableView]:
    """Every table of a ``StateDiff.to_json()`` document as a ``TableView``.

    Args:
        diff: ``{"tables": {name: {"added": [...], "removed": [...]}}}``.
        fixed: Table -> the columns no update changes (see ``table_view``).
    """
    tables: Mapping[str, Any] = diff.get("tables", {})
    return [
        table_view(name, t.get("added", []), t.get("removed", []), fixed.get(name, ()))
        for name, t in sorted(tables.items())
    ]


def _counter(rows: Sequence[Row], seen: dict[str, Row]) -> Counter[str]:
    """Rows as a multiset of canonical JSON; ``seen`` maps each back to a row (column order
    kept)."""
    keys = [json.dumps(r, sort_keys=True, default=str) for r in rows]
    seen.update(zip(keys, rows, strict=True))
    return Counter(keys)


def final_vs_target(agent: Mapping[str, Any], gold: Mapping[str, Any]) -> dict[str, Any]:
    """DIFF(final state, s_target) from DIFF(s_origin, final) and DIFF(s_origin, s_target).

    Both diffs start from the same origin, so the rows the target has and the final state lacks
    are the gold additions the agent did not make plus the agent's removals the target did not
    make (and the other way round for rows the final state has and the target lacks).

    Returns:
        ``{"distance", "tables": {name: {"added", "removed"}}}``: added rows are in the target
        only, removed rows in the final state only.
    """
    out: dict[str, Any] = {}
    a_tables, g_tables = agent.get("tables", {}), gold.get("tables", {})
    for name in sorted(set(a_tables) | set(g_tables)):
        a, g = a_tables.get(name, {}), g_tables.get(name, {})
        seen: dict[str, Row] = {}
        a_add, a_rem = _counter(a.get("added", []), seen), _counter(a.get("removed", []), seen)
        g_add, g_rem = _counter(g.get("added", []), seen), _counter(g.get("removed", []), seen)
        missing = (g_add - a_add) + (a_rem - g_rem)
        extra = (a_add - g_add) + (g_rem - a_rem)
        if missing or extra:
            out[name] = {
                "added": [seen[k] for k in sorted(missing.elements())],
                "removed": [seen[k] for k in sorted(extra.elements())],
            }
    distance = sum(len(t["added"]) + len(t["removed"]) for t in out.values())
    return {"distance": distance, "tables": out}
