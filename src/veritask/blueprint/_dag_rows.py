"""Rows for compiled services: the fixture the examples run on, the Faker population and its
value summary (AgentSkiller Section 3.7, without model-written scripts).

Values come from a ``Faker`` whose seed is derived from the service name, so the same blueprint
gives the same rows on every run. Every value is drawn inside its column's constraints (ranges,
enums, NOT NULL), references point at existing rows that satisfy the service's ``requires``
policies, each person holds no more non-final rows than its quota, and the counters the effects
keep equal the rows they count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from faker import Faker

from veritask._util import derive_seed
from veritask.blueprint._dag_schema import Attribute, Blueprint, Entity, Relationship

LABELS = ("name", "full_name", "title", "label", "display_name")
"""Column names the synthesizer reads as a row's label."""

FAKER_COLUMNS = {
    "email": "email",
    "city": "city",
    "company": "company",
    "phone": "phone_number",
    "phone_number": "phone_number",
    "address": "street_address",
    "country": "country",
}
"""Text attributes with a Faker provider of the same meaning."""

Row = dict[str, Any]


def counter(rel: str) -> str:
    """The core entity's column counting its non-final rows of relationship ``rel``."""
    return f"active_{rel}"


def key(entity: str) -> str:
    """An entity table's primary key column."""
    return f"{entity}_id"


def label_column(entity: Entity) -> str:
    """The entity's label column: a text attribute named like a label, else ``name``."""
    names = [a.name for a in entity.attributes if a.type == "string"]
    return next((n for n in LABELS if n in names), "name")


def requirements(bp: Blueprint) -> dict[str, dict[str, Any]]:
    """``entity -> {column: required value}`` from the ``requires`` policies (values typed)."""
    out: dict[str, dict[str, Any]] = {}
    for policy in bp.policies:
        if policy.kind == "requires" and policy.entity and policy.column:
            out.setdefault(policy.entity, {})[policy.column] = policy.value
    return out


def typed(attr: Attribute, value: Any) -> Any:
    """A policy value in the attribute's type (bools as 0/1, enums as text)."""
    if attr.type == "bool":
        text = str(value).strip().lower()
        return 1 if text in ("1", "true", "yes") else 0 if text in ("0", "false", "no") else value
    return str(value) if attr.type == "enum" else value


def bad_value(attr: Attribute, required: Any) -> Any:
    """A value of the attribute that differs from ``required``."""
    if attr.type == "bool":
        return 1 - int(required)
    return next(v for v in attr.values or [] if v != required)


class Values:
    """Seeded values inside each attribute's constraints."""

    def __init__(self, seed: int) -> None:
        self.faker = Faker("en_US")
        self.faker.seed_instance(seed)
        self._labels: set[str] = set()

    def attribute(self, attr: Attribute, low: bool = False) -> Any:
        """A value of ``attr`` (``low``: the smallest number, the first enum value, 1)."""
        lo, hi = attr.min or 0, attr.max or 0
        if attr.type == "int":
            return int(lo) if low else self.faker.random_int(int(lo), int(hi))
        if attr.type == "number":
            return lo if low else round(lo + (hi - lo) * self.faker.random.random(), 2)
        if attr.type == "bool":
            return 1 if low else self.faker.random_int(0, 1)
        if attr.type == "enum":
            values = attr.values or [""]
            return values[0] if low else self.faker.random_element(values)
        provider = FAKER_COLUMNS.get(attr.name)
        if provider is not None:
            return str(getattr(self.faker, provider)())
        return self.faker.sentence(nb_words=4).rstrip(".")

    def label(self, entity: Entity) -> str:
        """A fresh label: a person's name, else a word and the entity's title."""
        title = entity.name.replace("_", " ").title()
        for _ in range(50):
            word = self.faker.word().title()
            text = self.faker.name() if entity.is_person else f"{word} {title}"
            if text not in self._labels:
                break
        self._labels.add(text)
        return text


def entity_row(
    entity: Entity, ident: str, values: Values, fixed: Mapping[str, Any], low: bool
) -> Row:
    """One row of an entity table: key, label, attributes (``fixed`` wins), counters apart."""
    row: Row = {key(entity.name): ident, label_column(entity): values.label(entity)}
    for attr in entity.attributes:
        if attr.name in row:
            continue
        if attr.name in fixed:
            row[attr.name] = typed(attr, fixed[attr.name])
        else:
            row[attr.name] = values.attribute(attr, low)
    return row


@dataclass
class Fixture:
    """The seed rows examples run on, and the ids the examples name.

    Attributes:
        rows: ``table -> rows``.
        fresh: A core row with no relationship rows (every insert starts here).
        holder: A core row with one non-final (id ``active``) and one final row (``final``)
            per relationship.
        busy: A core row one row short of each quota.
        good: ``entity -> id`` of a row satisfying every ``requires`` policy.
        bad: ``policy id -> id`` of the row failing only that policy.
        active, final: ``relationship -> row id`` of the holder's rows.
    """

    rows: dict[str, list[Row]] = field(default_factory=dict)
    fresh: str = ""
    holder: str = ""
    busy: str = ""
    good: dict[str, str] = field(default_factory=dict)
    bad: dict[str, str] = field(default_factory=dict)
    active: dict[str, int] = field(default_factory=dict)
    final: dict[str, int] = field(default_factory=dict)


def good_attributes(rel: Relationship) -> Row:
    """The relationship attribute values every example uses (lowest values)."""
    values = Values(0)
    return {a.name: values.attribute(a, low=True) for a in rel.attributes}


def _bad_rows(entity: Entity, bp: Blueprint, values: Values, fx: Fixture, start: int) -> list[Row]:
    """One row per ``requires`` policy on ``entity`` failing that policy only; ids from
    ``<entity>_<start + 1>``."""
    required = requirements(bp).get(entity.name, {})
    attrs = {a.name: a for a in entity.attributes}
    rows: list[Row] = []
    for policy in bp.policies:
        if policy.kind != "requires" or policy.entity != entity.name or not policy.column:
            continue
        attr = attrs[policy.column]
        fixed = {**required, policy.column: bad_value(attr, typed(attr, policy.value))}
        ident = f"{entity.name}_{start + len(rows) + 1:03d}"
        fx.bad[policy.id] = ident
        rows.append(entity_row(entity, ident, values, fixed, low=True))
    return rows


def _core_rows(core: Entity, bp: Blueprint, values: Values, fx: Fixture) -> list[Row]:
    required = requirements(bp).get(core.name, {})
    ids = [f"{core.name}_{n:03d}" for n in (1, 2, 3)]
    fx.fresh, fx.holder, fx.busy = ids
    rows = [entity_row(core, i, values, required, low=True) for i in ids]
    return rows + _bad_rows(core, bp, values, fx, 3)


def quota_of(bp: Blueprint, rel: str) -> int | None:
    """The quota on relationship ``rel`` (through its functions), or None."""
    functions = {f.name for f in bp.functions if f.relationship == rel}
    limits = [p.limit for p in bp.policies if p.kind == "quota" and p.function in functions]
    return next((n for n in limits if n is not None), None)


def set_counters(bp: Blueprint, rows: Mapping[str, list[Row]]) -> None:
    """Set each core row's counters to its non-final rows (the effects' invariant)."""
    for rel in bp.relationships:
        held: dict[str, int] = {}
        for row in rows.get(rel.name, []):
            if row["status"] not in rel.final:
                held[row[key(bp.core)]] = held.get(row[key(bp.core)], 0) + 1
        for row in rows[bp.core]:
            row[counter(rel.name)] = held.get(row[key(bp.core)], 0)


def _relationship_rows(bp: Blueprint, fx: Fixture) -> None:
    """The holder's active and final rows and the busy person's rows (N-1 of each quota)."""
    for rel in bp.relationships:
        base: Row = {key(e): fx.good[e] for e in rel.links}
        base.update(good_attributes(rel))
        plan = [(fx.holder, rel.statuses[0]), (fx.holder, rel.final[0])]
        plan += [(fx.busy, rel.statuses[0])] * ((quota_of(bp, rel.name) or 1) - 1)
        fx.rows[rel.name] = [
            {"id": n, key(bp.core): owner, **base, "status": status}
            for n, (owner, status) in enumerate(plan, 1)
        ]
        fx.active[rel.name], fx.final[rel.name] = 1, 2
    set_counters(bp, fx.rows)


def build_fixture(bp: Blueprint, entities: Mapping[str, Entity]) -> Fixture:
    """The fixture of a (closed-world checked) blueprint."""
    values = Values(derive_seed("blueprint-fixture", bp.name))
    fx = Fixture()
    fx.rows[bp.core] = _core_rows(entities[bp.core], bp, values, fx)
    for name in bp.peripherals:
        entity = entities[name]
        required = requirements(bp).get(name, {})
        good = entity_row(entity, f"{name}_001", values, required, low=True)
        fx.good[name] = f"{name}_001"
        fx.rows[name] = [good, *_bad_rows(entity, bp, values, fx, 1)]
    _relationship_rows(bp, fx)
    return fx
