"""Constraint-satisfying seed rows for a compiled service (AgentSkiller Step 6, by construction).

The fixture the examples need stays as it is; seeded Faker rows are added around it: persons,
peripheral rows, and relationship rows that reference only rows meeting every ``requires``
policy, keep each person under its quota (or at a quota of one, when a function updates the
rows: :func:`open_rows_most`) and each capped column under its cap. The counters the effects
maintain are set from the rows. ``row_problems`` re-checks those invariants and
``check_spec`` (SQLite: CHECK, FK, enum, unique; then every example) checks the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from veritask._util import derive_seed
from veritask.blueprint._dag_rows import (
    Row,
    Values,
    entity_row,
    key,
    quota_of,
    requirements,
    set_counters,
    typed,
)
from veritask.blueprint._dag_schema import Attribute, Blueprint, Entity, Relationship


def _meets(row: Row, entity: Entity, required: Mapping[str, Any]) -> bool:
    attrs = {a.name: a for a in entity.attributes}
    return all(row.get(col) == typed(attrs[col], value) for col, value in required.items())


def _caps(bp: Blueprint, rel: Relationship) -> dict[str, float]:
    functions = {f.name for f in bp.functions if f.relationship == rel.name}
    return {
        p.column: p.limit
        for p in bp.policies
        if p.kind == "max_value" and p.function in functions and p.column and p.limit is not None
    }


def _capped(attr: Attribute, values: Values, cap: float | None) -> Any:
    value = values.attribute(attr)
    if cap is None or value <= cap:
        return value
    return values.attribute(attr.model_copy(update={"max": cap}))


def _add_entities(entity: Entity, rows: list[Row], count: int, values: Values) -> None:
    start = len(rows)
    for n in range(start + 1, start + count + 1):
        rows.append(entity_row(entity, f"{entity.name}_{n:03d}", values, {}, low=False))


def open_rows_most(bp: Blueprint, rel: Relationship) -> int:
    """The most open (non-final) rows of ``rel`` a populated person holds.

    Under a quota of N, N-1: the person can still make one more. A quota of one would then
    leave no open row at all, and a function that updates the relationship (finish, cancel)
    would have only the fixture's row to act on, so a user's task could only update the row it
    had just made (undoing its own work). There a person holds none or one: about half the
    owners can make a row, the others have one to update.
    """
    quota = quota_of(bp, rel.name)
    if quota is None:
        return 2
    updates = any(f.kind == "update" and f.relationship == rel.name for f in bp.functions)
    return max(quota - 1, int(updates))


def _relationship_rows(
    bp: Blueprint,
    rel: Relationship,
    owners: list[str],
    pools: Mapping[str, list[str]],
    values: Values,
    first_id: int,
) -> list[Row]:
    """Rows of ``rel`` for ``owners``: at most :func:`open_rows_most` open rows each,
    references that meet the policies."""
    most = open_rows_most(bp, rel)
    caps = _caps(bp, rel)
    out: list[Row] = []
    for owner in owners:
        statuses = [rel.statuses[0]] * values.faker.random_int(0, most)
        statuses += [values.faker.random_element(rel.final)] * values.faker.random_int(0, 1)
        for status in statuses:
            row: Row = {"id": first_id + len(out), key(bp.core): owner}
            row.update({key(e): values.faker.random_element(pools[e]) for e in rel.links})
            row.update({a.name: _capped(a, values, caps.get(a.name)) for a in rel.attributes})
            row["status"] = status
            out.append(row)
    return out


def populate(
    bp: Blueprint,
    entities: Mapping[str, Entity],
    fixture: Mapping[str, list[Row]],
    persons: int,
    resources: int,
) -> dict[str, list[Row]]:
    """The fixture plus ``persons`` core rows, ``resources`` rows per peripheral and their
    relationship rows (a new dict; the fixture is not changed)."""
    values = Values(derive_seed("blueprint-population", bp.name))
    rows = {table: [dict(r) for r in table_rows] for table, table_rows in fixture.items()}
    fixture_core = len(rows[bp.core])
    _add_entities(entities[bp.core], rows[bp.core], persons, values)
    for name in bp.peripherals:
        _add_entities(entities[name], rows[name], resources, values)
    required = requirements(bp)
    pools = {
        name: [
            r[key(name)] for r in rows[name] if _meets(r, entities[name], required.get(name, {}))
        ]
        for name in bp.peripherals
    }
    owners = [
        r[key(bp.core)]
        for r in rows[bp.core][fixture_core:]
        if _meets(r, entities[bp.core], required.get(bp.core, {}))
    ]
    for rel in bp.relationships:
        first = len(rows[rel.name]) + 1
        rows[rel.name] += _relationship_rows(bp, rel, owners, pools, values, first)
    set_counters(bp, rows)
    return rows


def row_problems(bp: Blueprint, rows: Mapping[str, list[Row]]) -> list[str]:
    """Rows that break an invariant the policies imply: a quota exceeded, a cap exceeded, a
    counter that does not count its rows."""
    problems: list[str] = []
    core = {r[key(bp.core)]: r for r in rows[bp.core]}
    for rel in bp.relationships:
        quota = quota_of(bp, rel.name)
        held: dict[str, int] = {}
        for row in rows[rel.name]:
            if row["status"] not in rel.final:
                held[row[key(bp.core)]] = held.get(row[key(bp.core)], 0) + 1
            problems += [
                f"{rel.name} {row['id']}: {col} {row[col]} over its cap {cap}"
                for col, cap in _caps(bp, rel).items()
                if row[col] > cap
            ]
        for ident, row in core.items():
            count = held.get(ident, 0)
            if row[f"active_{rel.name}"] != count:
                problems.append(f"{bp.core} {ident}: counter of {rel.name} is not {count}")
            if quota is not None and count > quota:
                problems.append(f"{bp.core} {ident}: {count} open {rel.name} over quota {quota}")
    return problems


def summarize(rows: Mapping[str, list[Row]]) -> dict[str, Any]:
    """Value domains per table and column (Section 3.7.1's meta-profile): row counts, number
    ranges, and the distinct values of columns with few of them."""
    out: dict[str, Any] = {}
    for table, table_rows in rows.items():
        columns: dict[str, Any] = {}
        for column in dict.fromkeys(c for r in table_rows for c in r):
            seen = [r[column] for r in table_rows if r.get(column) is not None]
            distinct = sorted({str(v) for v in seen})
            if seen and all(isinstance(v, int | float) for v in seen):
                columns[column] = {"min": min(seen), "max": max(seen), "distinct": len(distinct)}
            elif len(distinct) <= 8:
                columns[column] = {"values": distinct}
            else:
                columns[column] = {"distinct": len(distinct)}
        out[table] = {"rows": len(table_rows), "columns": columns}
    return out
