"""The person table of a fused spec: one actor table for every service, and its rows.

Columns. The first service's actor columns come first. A column of a later service's actor
table is **shared** when the first service declares a column of the same name with the same
definition (type, constraints, enum, default, check, flags; descriptions may differ); otherwise
it is added, under ``<service>_<column>`` when its name is taken. Each service's primary key maps
to the person table's primary key (their types must agree).

Rows. Persons of the first service are the base. Each actor row of a later service joins the
first base person not yet joined by that service whose shared non-label columns hold the same
values (an inactive patient joins an inactive employee); its id maps to that person's id. A row
that finds no partner becomes a person of its own. Columns a person has no value for take the
column's default, else the value of the owning service's first actor row (a valid reference,
an in-range number). Shared label columns (a name) keep the base value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from veritask.policy import Column, DomainSpec, Table, actor_table

Row = dict[str, Any]


class FusionError(ValueError):
    """Two specs cannot be fused (the reason says why)."""


@dataclass
class PersonPlan:
    """How the actor tables merge: columns, and per service the column renames and id map."""

    table: Table
    renames: dict[str, dict[str, str]] = field(default_factory=dict)
    """service -> {original actor column -> person column}."""
    owners: dict[str, str] = field(default_factory=dict)
    """person column -> the service that declared it first."""
    id_maps: dict[str, dict[Any, Any]] = field(default_factory=dict)
    """service -> {original actor id -> person id}."""
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _definition(col: Column) -> dict[str, Any]:
    return col.model_dump(exclude={"description", "name"})


def _pk(table: Table, service: str) -> Column:
    keys = table.primary_key
    if len(keys) != 1:
        raise FusionError(f"{service}: the actor table {table.name} needs one primary key")
    return keys[0]


def _merge_columns(plan: PersonPlan, service: str, table: Table) -> None:
    base_pk = _pk(plan.table, next(iter(plan.renames)))
    own_pk = _pk(table, service)
    if own_pk.type != base_pk.type:
        raise FusionError(f"{service}: actor key {own_pk.type} differs from {base_pk.type}")
    columns = list(plan.table.columns)
    by_name = {c.name: c for c in columns}
    renames = {own_pk.name: base_pk.name}
    for col in table.columns:
        if col.primary_key:
            continue
        same = by_name.get(col.name)
        if same is not None and _definition(same) == _definition(col):
            renames[col.name] = col.name
            continue
        new = col.name if same is None else f"{service}_{col.name}"
        if new in by_name:
            raise FusionError(f"{service}: person column {new} is taken twice")
        renames[col.name] = new
        columns.append(col.model_copy(update={"name": new}))
        by_name[new] = columns[-1]
        plan.owners[new] = service
    plan.renames[service] = renames
    plan.table = plan.table.model_copy(update={"columns": columns})


def plan_person(specs: list[DomainSpec], name: str) -> PersonPlan:
    """Merge the actor tables of ``specs`` (first spec first) into one person table."""
    first = specs[0]
    base = first.table(actor_table(first))
    plan = PersonPlan(base.model_copy(update={"name": name}))
    plan.renames[first.name] = {c.name: c.name for c in base.columns}
    plan.owners = {c.name: first.name for c in base.columns}
    for spec in specs[1:]:
        table = spec.table(actor_table(spec))
        _merge_columns(plan, spec.name, table)
        if table.lifecycle and base.lifecycle:
            column = plan.renames[spec.name].get(table.lifecycle.column)
            if column != base.lifecycle.column:
                plan.notes.append(
                    f"{spec.name}: lifecycle column {table.lifecycle.column} kept as a plain"
                    f" column ({column}); the person table retires rows by {base.lifecycle.column}"
                )
    description = " ".join(
        dict.fromkeys(
            s.table(actor_table(s)).description
            for s in specs
            if s.table(actor_table(s)).description
        )
    )
    plan.table = plan.table.model_copy(update={"description": description, "unique": []})
    return plan


def _agreeing(plan: PersonPlan, service: str) -> list[str]:
    """Shared, non-key, non-label columns whose values a pairing must respect."""
    base_pk = _pk(plan.table, "")
    out = []
    for original, new in plan.renames[service].items():
        col = plan.table.column(new)
        shared = plan.owners.get(new) != service and new != base_pk.name
        label = col.type == "TEXT" and col.enum is None and col.references is None
        if shared and not label and original == new:
            out.append(new)
    return out


def _renamed(row: Row, renames: dict[str, str]) -> Row:
    return {renames.get(k, k): v for k, v in row.items()}


def _join_rows(plan: PersonPlan, service: str, rows: list[Row]) -> None:
    pk = _pk(plan.table, service).name
    agree = _agreeing(plan, service)
    joined: set[int] = set()
    ids = {p[pk] for p in plan.rows}
    id_map: dict[Any, Any] = {}
    for row in rows:
        mine = _renamed(row, plan.renames[service])
        partner = next(
            (
                i
                for i, person in enumerate(plan.rows)
                if i not in joined and all(person.get(c) == mine.get(c) for c in agree)
            ),
            None,
        )
        if partner is None:
            new_id = mine[pk] if mine[pk] not in ids else f"{service}_{mine[pk]}"
            plan.rows.append({**mine, pk: new_id})
            ids.add(new_id)
            joined.add(len(plan.rows) - 1)
            id_map[row[_original_pk(plan, service)]] = new_id
            continue
        person = plan.rows[partner]
        for key, value in mine.items():
            person.setdefault(key, value)
        joined.add(partner)
        id_map[row[_original_pk(plan, service)]] = person[pk]
    plan.id_maps[service] = id_map


def _original_pk(plan: PersonPlan, service: str) -> str:
    pk = _pk(plan.table, service).name
    return next(o for o, n in plan.renames[service].items() if n == pk)


def _fill(plan: PersonPlan, templates: dict[str, Row]) -> None:
    for person in plan.rows:
        for col in plan.table.columns:
            if col.name in person:
                continue
            owner = plan.owners.get(col.name, "")
            person[col.name] = (
                col.default if col.default is not None else templates.get(owner, {}).get(col.name)
            )


def person_rows(plan: PersonPlan, specs: list[DomainSpec]) -> None:
    """Fill ``plan.rows`` and ``plan.id_maps`` from the specs' seed actor rows."""
    first = specs[0]
    base_rows = first.seed.get(actor_table(first), [])
    plan.rows = [dict(r) for r in base_rows]
    pk = _original_pk(plan, first.name)
    plan.id_maps[first.name] = {r[pk]: r[pk] for r in base_rows}
    templates: dict[str, Row] = {first.name: dict(base_rows[0]) if base_rows else {}}
    for spec in specs[1:]:
        rows = spec.seed.get(actor_table(spec), [])
        templates[spec.name] = _renamed(rows[0], plan.renames[spec.name]) if rows else {}
        _join_rows(plan, spec.name, rows)
    _fill(plan, templates)
