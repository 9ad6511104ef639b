"""Blueprint -> DomainSpec: a deterministic compilation, checked by the engine.

The blueprint's entities become read-only tables (the core person is the actor, an ``entity``
table; peripherals are ``reference`` tables, or ``entity`` tables when they are persons), its
relationships read-write ``transaction`` tables with foreign keys to the core and the linked
peripherals, typed attribute columns (ranges as CHECKs, enums) and a status lifecycle. Policies
compile to rules with examples, each relationship gets its counter effects and an
irreversibility rule for its final statuses, and functions become the procedures.

The policy is closed-world: ``closed_world_problems`` refuses any policy naming a table, column
or value the blueprint does not define, before anything is compiled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from veritask.blueprint._dag_rows import (
    FAKER_COLUMNS,
    Fixture,
    Row,
    build_fixture,
    counter,
    good_attributes,
    key,
    label_column,
    quota_of,
    typed,
)
from veritask.blueprint._dag_schema import Attribute, Blueprint, Entity, Policy, Relationship
from veritask.env import example_coverage, run_spec_examples
from veritask.policy import DomainSpec, SpecError, spec_from_data

Data = dict[str, Any]


def _in(values: list[str]) -> str:
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values)


def _requires_problem(policy: Policy, owners: list[str], entities: Mapping[str, Entity]) -> str:
    if policy.entity not in owners:
        return f"names entity {policy.entity}; the function's rows reference {', '.join(owners)}"
    attrs = {a.name: a for a in entities[policy.entity].attributes}
    attr = attrs.get(policy.column or "")
    if attr is None:
        return f"names column {policy.entity}.{policy.column}, which does not exist"
    if attr.type not in ("bool", "enum"):
        return f"{policy.entity}.{attr.name} is {attr.type}; requires needs a bool or enum column"
    allowed: list[Any] = [0, 1] if attr.type == "bool" else list(attr.values or [])
    if typed(attr, policy.value) not in allowed:
        return f"value {policy.value!r} is not a value of {policy.entity}.{attr.name} {allowed}"
    return ""


def _max_problem(policy: Policy, rel: Relationship) -> str:
    attr = next((a for a in rel.attributes if a.name == policy.column), None)
    if attr is None or attr.type not in ("int", "number"):
        return f"names {rel.name}.{policy.column}, which is not a number column of {rel.name}"
    lo, hi = attr.min or 0, attr.max or 0
    if policy.limit is None or not lo <= policy.limit < hi:
        return f"limit {policy.limit} must lie in [{lo}, {hi}) of {rel.name}.{attr.name}"
    return ""


def _policy_problem(bp: Blueprint, policy: Policy, entities: Mapping[str, Entity]) -> str:
    fn = next(f for f in bp.functions if f.name == policy.function)
    rel = next(r for r in bp.relationships if r.name == fn.relationship)
    if policy.kind != "max_value" and fn.kind != "create":
        return f"{policy.kind} applies to create functions; {fn.name} is {fn.kind}"
    if policy.kind == "requires":
        return _requires_problem(policy, [bp.core, *rel.links], entities)
    if policy.kind == "quota":
        return "" if (policy.limit or 0) >= 1 else "a quota needs a limit of at least 1"
    return _max_problem(policy, rel)


def closed_world_problems(bp: Blueprint, entities: Mapping[str, Entity]) -> list[str]:
    """Every policy that names something the blueprint does not define, or contradicts another.

    ``bp`` must already pass the structural checks (``structure_errors``)."""
    problems = [
        f"entity {name} is not an extracted entity"
        for name in [bp.core, *bp.peripherals]
        if name not in entities
    ]
    if problems:
        return problems
    seen: dict[tuple[str, str, str], str] = {}
    for policy in bp.policies:
        problem = _policy_problem(bp, policy, entities)
        if problem:
            problems.append(f"policy {policy.id}: {problem}")
            continue
        slot = (policy.kind, policy.entity or policy.function, policy.column or "")
        if policy.kind != "max_value" and slot in seen:
            problems.append(f"policy {policy.id}: repeats {seen[slot]} on the same {slot[0]}")
        seen[slot] = policy.id
    return problems


def attribute_column(attr: Attribute, person: bool) -> Data:
    """A column from an attribute: typed, NOT NULL, ranges as CHECK, enums, a Faker provider
    for text with a known meaning."""
    col: Data = {"name": attr.name, "description": attr.description or attr.name}
    col["not_null"] = True
    if attr.type in ("int", "number"):
        col["type"] = "INTEGER" if attr.type == "int" else "REAL"
        lo, hi = (
            (int(attr.min or 0), int(attr.max or 0)) if attr.type == "int" else (attr.min, attr.max)
        )
        col["check"] = f"{attr.name} >= {lo} AND {attr.name} <= {hi}"
    elif attr.type == "bool":
        col.update(type="INTEGER", enum=[0, 1])
    elif attr.type == "enum":
        col.update(type="TEXT", enum=list(attr.values or []))
    else:
        col["type"] = "TEXT"
        provider = "name" if person and attr.name in ("name", "full_name") else None
        provider = provider or FAKER_COLUMNS.get(attr.name)
        if provider is not None:
            col["faker"] = provider
    return col


def entity_table(entity: Entity, bp: Blueprint) -> Data:
    """The read-only table of an entity (the core also gets one counter per relationship)."""
    label = label_column(entity)
    title = entity.name.replace("_", " ")
    columns: list[Data] = [
        {
            "name": key(entity.name),
            "type": "TEXT",
            "primary_key": True,
            "description": f"{title} id",
        },
        {"name": label, "type": "TEXT", "not_null": True, "description": f"{title} {label}"},
    ]
    if entity.is_person and label in ("name", "full_name"):
        columns[1]["faker"] = "name"
    columns += [attribute_column(a, entity.is_person) for a in entity.attributes if a.name != label]
    if entity.name == bp.core:
        columns += [
            {
                "name": counter(r.name),
                "type": "INTEGER",
                "not_null": True,
                "default": 0,
                "computed": True,
                "description": f"Non-final {r.name} rows (system-maintained)",
            }
            for r in bp.relationships
        ]
    tier = "entity" if entity.name == bp.core or entity.is_person else "reference"
    return {
        "name": entity.name,
        "tier": tier,
        "access": "read-only",
        "description": entity.description or title,
        "columns": columns,
    }


def relationship_table(rel: Relationship, bp: Blueprint) -> Data:
    """The read-write table of a relationship (star schema: the core key, then the links)."""
    columns: list[Data] = [
        {
            "name": "id",
            "type": "INTEGER",
            "primary_key": True,
            "autoincrement": True,
            "technical": True,
            "description": f"{rel.name} id",
        },
    ]
    for owner in [bp.core, *rel.links]:
        columns.append(
            {
                "name": key(owner),
                "type": "TEXT",
                "not_null": True,
                "references": f"{owner}.{key(owner)}",
                "updatable": False,
                "description": f"The {owner.replace('_', ' ')}",
            }
        )
    columns += [attribute_column(a, False) for a in rel.attributes]
    columns.append(
        {
            "name": "status",
            "type": "TEXT",
            "not_null": True,
            "default": rel.statuses[0],
            "enum": list(rel.statuses),
            "insertable": False,
            "description": f"Status; {', '.join(rel.final)} is final",
        }
    )
    return {
        "name": rel.name,
        "tier": "transaction",
        "access": "read-write",
        "description": rel.description or rel.name.replace("_", " "),
        "columns": columns,
        "lifecycle": {
            "column": "status",
            "inactive_values": list(rel.final),
            "description": f"A {rel.name} ends in {', '.join(rel.final)}.",
        },
    }


def insert_args(rel: Relationship, bp: Blueprint, fx: Fixture, person: str) -> Row:
    """Arguments of an insert that every rule accepts, for ``person``."""
    args: Row = {key(bp.core): person, **{key(e): fx.good[e] for e in rel.links}}
    return {**args, **good_attributes(rel)}


def _relationship_of(bp: Blueprint, function: str) -> Relationship:
    fn = next(f for f in bp.functions if f.name == function)
    return next(r for r in bp.relationships if r.name == fn.relationship)


def _insert(rel: Relationship, args: Row, expect: str = "ok") -> Data:
    return {"tool": f"insert_{rel.name}", "args": args, "expect": expect}


def requires_rule(policy: Policy, bp: Blueprint, fx: Fixture) -> Data:
    """``requires``: the referenced row must carry the value (a prerequisite)."""
    rel = _relationship_of(bp, policy.function)
    entity, column = policy.entity or "", policy.column or ""
    value = policy.value if isinstance(policy.value, int) else f"'{policy.value}'"
    if isinstance(policy.value, str) and policy.value.lower() in ("true", "false", "1", "0"):
        value = 1 if policy.value.lower() in ("true", "1") else 0
    good = insert_args(rel, bp, fx, fx.fresh)
    bad = {**good, key(entity): fx.bad[policy.id]}
    title = entity.replace("_", " ")
    return {
        "id": policy.id,
        "table": rel.name,
        "on": ["insert"],
        "category": "prerequisite",
        "condition": f"NOT EXISTS (SELECT 1 FROM {entity} WHERE {key(entity)} = "
        f"NEW.{key(entity)} AND {column} = {value})",
        "code": "PREREQ_FAIL",
        "message": policy.message or f"The {title} must have {column} = {policy.value}.",
        "hint": f"Check the {title}'s {column} before {policy.function.replace('_', ' ')}.",
        "transaction": policy.function,
        "examples": [{"calls": [_insert(rel, bad, policy.id), _insert(rel, good)]}],
    }


def quota_rule(policy: Policy, bp: Blueprint, fx: Fixture) -> Data:
    """``quota``: at most ``limit`` non-final rows per core row (the counter, at N-1 in the
    fixture's busy row)."""
    rel = _relationship_of(bp, policy.function)
    args = insert_args(rel, bp, fx, fx.busy)
    column = counter(rel.name)
    return {
        "id": policy.id,
        "table": rel.name,
        "on": ["insert"],
        "category": "quota",
        "condition": f"(SELECT {column} FROM {bp.core} WHERE {key(bp.core)} = "
        f"NEW.{key(bp.core)}) >= {{threshold}}",
        "threshold": {"quantity": f"{bp.core}.{column}", "value": policy.limit},
        "code": "QUOTA_EXCEEDED",
        "message": policy.message
        or f"At most {policy.limit} open {rel.name} rows per {bp.core.replace('_', ' ')}.",
        "hint": f"Close an open {rel.name.replace('_', ' ')} first.",
        "transaction": policy.function,
        "examples": [
            {
                "name": "accepts at N-1, rejects at N",
                "calls": [_insert(rel, args), _insert(rel, args, policy.id)],
            }
        ],
    }


def max_rule(policy: Policy, bp: Blueprint, fx: Fixture) -> Data:
    """``max_value``: a column may not exceed the limit (on insert and update)."""
    rel = _relationship_of(bp, policy.function)
    column, limit = policy.column or "", policy.limit or 0
    attr = next(a for a in rel.attributes if a.name == column)
    over = limit + 1 if attr.type == "int" else (limit + (attr.max or limit)) / 2
    args = insert_args(rel, bp, fx, fx.fresh)
    return {
        "id": policy.id,
        "table": rel.name,
        "on": ["insert", "update"],
        "category": "policy",
        "condition": f"NEW.{column} > {{threshold}}",
        "threshold": {"quantity": f"{rel.name}.{column}", "value": limit},
        "code": "LIMIT_EXCEEDED",
        "message": policy.message or f"{column.replace('_', ' ')} may not exceed {limit}.",
        "hint": f"Use a {column.replace('_', ' ')} of at most {limit}.",
        "transaction": policy.function,
        "examples": [
            {
                "calls": [
                    _insert(rel, {**args, column: over}, policy.id),
                    _insert(rel, {**args, column: limit}),
                ]
            }
        ],
    }


def _update_function(bp: Blueprint, rel: Relationship) -> str | None:
    return next(
        (f.name for f in bp.functions if f.kind == "update" and f.relationship == rel.name), None
    )


def _create_function(bp: Blueprint, rel: Relationship) -> str:
    return next(f.name for f in bp.functions if f.kind == "create" and f.relationship == rel.name)


def final_rule(rel: Relationship, bp: Blueprint, fx: Fixture) -> Data:
    """A row in a final status cannot change (irreversibility)."""
    update = f"update_{rel.name}"
    rid = f"{rel.name.upper()}_FINAL"
    return {
        "id": rid,
        "table": rel.name,
        "on": ["update"],
        "category": "irreversibility",
        "condition": f"OLD.status IN ({_in(rel.final)})",
        "code": "IRREVERSIBLE",
        "message": f"A {rel.name.replace('_', ' ')} in {', '.join(rel.final)} cannot change.",
        "hint": f"Create a new {rel.name.replace('_', ' ')} instead.",
        "transaction": _update_function(bp, rel),
        "examples": [
            {
                "calls": [
                    {
                        "tool": update,
                        "args": {"id": fx.final[rel.name], "status": rel.statuses[0]},
                        "expect": rid,
                    },
                    {"tool": update, "args": {"id": fx.active[rel.name], "status": rel.final[0]}},
                ]
            }
        ],
    }


def counter_effects(rel: Relationship, bp: Blueprint, fx: Fixture) -> list[Data]:
    """The core's counter of non-final rows: +1 on insert, -1 when a row reaches a final status."""
    column, core = counter(rel.name), bp.core
    where = f"WHERE {key(core)} = NEW.{key(core)}"
    finals = _in(rel.final)
    return [
        {
            "id": f"{rel.name.upper()}_OPENED",
            "table": rel.name,
            "on": "insert",
            "description": f"Adds one to the {core.replace('_', ' ')}'s {column}.",
            "sql": f"UPDATE {core} SET {column} = {column} + 1 {where}",
            "transaction": _create_function(bp, rel),
            "examples": [
                {
                    "calls": [_insert(rel, insert_args(rel, bp, fx, fx.fresh))],
                    "expect_rows": [
                        {"table": core, "where": {key(core): fx.fresh}, "values": {column: 1}}
                    ],
                }
            ],
        },
        {
            "id": f"{rel.name.upper()}_CLOSED",
            "table": rel.name,
            "on": "update",
            "when": f"OLD.status NOT IN ({finals}) AND NEW.status IN ({finals})",
            "description": f"Subtracts one from the {core.replace('_', ' ')}'s {column}.",
            "sql": f"UPDATE {core} SET {column} = {column} - 1 {where}",
            "transaction": _update_function(bp, rel),
            "examples": [
                {
                    "calls": [
                        {
                            "tool": f"update_{rel.name}",
                            "args": {"id": fx.active[rel.name], "status": rel.final[0]},
                        }
                    ],
                    "expect_rows": [
                        {"table": core, "where": {key(core): fx.holder}, "values": {column: 0}}
                    ],
                }
            ],
        },
    ]


def transactions(bp: Blueprint) -> list[Data]:
    """One procedure per create or update function (lookups are the query tools)."""
    out: list[Data] = []
    for fn in bp.functions:
        rel = next(r for r in bp.relationships if r.name == fn.relationship)
        if fn.kind == "create":
            tool = f"insert_{rel.name}"
            params = [key(e) for e in [bp.core, *rel.links]] + [a.name for a in rel.attributes]
        elif fn.kind == "update":
            tool, params = f"update_{rel.name}", ["id", "status"]
        else:
            continue
        goal = fn.description or fn.name.replace("_", " ").capitalize()
        out.append(
            {
                "id": fn.name,
                "name": fn.name.replace("_", " ").title(),
                "goal": goal,
                "tool": tool,
                "parameters": params,
            }
        )
    return out


def _wiki(bp: Blueprint) -> Data:
    person = bp.core.replace("_", " ")
    title = bp.name.replace("_", " ").title()
    return {
        "title": f"{title} Policy",
        "context": bp.description or title,
        "persona": f"You are a precise assistant of the {title} service.",
        "mission": f"Help each {person} with their requests within the service's rules.",
        "conversation_rules": [
            f"Verify the {person}'s id before any change.",
            f"Confirm the details with the {person} before each change.",
        ],
    }


def _rules(bp: Blueprint, fx: Fixture) -> list[Data]:
    makers = {"requires": requires_rule, "quota": quota_rule, "max_value": max_rule}
    rules = [makers[p.kind](p, bp, fx) for p in bp.policies]
    return rules + [final_rule(r, bp, fx) for r in bp.relationships]


def compile_blueprint(bp: Blueprint, entities: Mapping[str, Entity]) -> Data:
    """The spec data of a blueprint that passed ``closed_world_problems`` (fixture as seed)."""
    fx = build_fixture(bp, entities)
    tables = [entity_table(entities[n], bp) for n in [bp.core, *bp.peripherals]]
    tables += [relationship_table(r, bp) for r in bp.relationships]
    return {
        "name": bp.name,
        "version": "1",
        "description": bp.description or bp.name.replace("_", " "),
        "actor": bp.core,
        "wiki": _wiki(bp),
        "tables": tables,
        "rules": _rules(bp, fx),
        "effects": [e for r in bp.relationships for e in counter_effects(r, bp, fx)],
        "transactions": transactions(bp),
        "confirm_writes": confirm_writes(bp),
        "seed": fx.rows,
    }


def confirm_writes(bp: Blueprint) -> list[str]:
    """The write tools of the functions marked ``confirm`` (lookups are never gated)."""
    kinds = {"create": "insert", "update": "update"}
    tools = {
        f"{kinds[fn.kind]}_{fn.relationship}"
        for fn in bp.functions
        if fn.confirm and fn.kind in kinds
    }
    return sorted(tools)


def check_spec(data: Data) -> tuple[DomainSpec | None, list[str]]:
    """Validate spec data and run every example (``run_spec_examples``) and the coverage check.

    Returns:
        The spec when it validates and every example behaves, and the problems found.
    """
    try:
        spec = spec_from_data(data)
    except SpecError as exc:
        return None, [f"spec: {issue}" for issue in exc.issues] or [f"spec: {exc}"]
    failures = [*run_spec_examples(spec), *example_coverage(spec)]
    problems = [f"{f.check} {f.owner}: {f.message}" for f in failures]
    return (None if problems else spec), problems


def compile_service(
    bp: Blueprint, entities: Mapping[str, Entity]
) -> tuple[Data | None, DomainSpec | None, list[str]]:
    """Closed-world check, compilation, validation and examples: (data, spec, problems)."""
    problems = closed_world_problems(bp, entities)
    if problems:
        return None, None, problems
    data = compile_blueprint(bp, entities)
    spec, problems = check_spec(data)
    return data, spec, problems


def needs_quota_rows(bp: Blueprint, rel: Relationship) -> int:
    """How many non-final rows a person may hold (its quota minus one, or 2 without one)."""
    limit = quota_of(bp, rel.name)
    return 2 if limit is None else limit - 1
