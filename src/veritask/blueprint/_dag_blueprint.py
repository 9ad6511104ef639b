"""Service blueprints: name fixups and the structural checks of the feedback loop (Section 3.5).

``fix_names`` aligns every name a blueprint uses with the canonical entity names (``Advisor``
-> ``academic_advisor``, ``Courses`` -> ``course``) and normalizes identifiers; ``structure_errors``
lists every violation of the star schema, the function and lifecycle rules and the id format.
The DAG sends those errors back to the model with its draft (``veritask.model.ask``) until the
blueprint is clean or its rounds are spent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from veritask.blueprint._dag_schema import (
    Blueprint,
    Entity,
    Function,
    Policy,
    Relationship,
    label_tokens,
    rule_id,
    same_meaning,
    sanitize_attribute,
    snake,
)
from veritask.model import extract_json


def canonical(name: str, candidates: Sequence[str]) -> str:
    """The candidate ``name`` means: exact, same meaning, or the only one containing its words."""
    plain = snake(name)
    if plain in candidates:
        return plain
    same = [c for c in candidates if same_meaning(c, plain)]
    if len(same) == 1:
        return same[0]
    words = set(label_tokens(plain))
    containing = [c for c in candidates if words and words <= set(label_tokens(c))]
    return containing[0] if len(containing) == 1 else plain


def _fix_relationship(rel: Relationship, entities: Sequence[str]) -> Relationship:
    return rel.model_copy(
        update={
            "name": snake(rel.name),
            "links": [canonical(x, entities) for x in rel.links],
            "statuses": [snake(s).upper() for s in rel.statuses],
            "final": [snake(s).upper() for s in rel.final],
        }
    )


def _fix_policy(policy: Policy, entities: Sequence[str]) -> Policy:
    return policy.model_copy(
        update={
            "id": rule_id(policy.id),
            "function": snake(policy.function),
            "entity": None if policy.entity is None else canonical(policy.entity, entities),
            "column": None if policy.column is None else snake(policy.column),
        }
    )


def fix_names(bp: Blueprint, entities: Sequence[str]) -> Blueprint:
    """The blueprint with entity names aligned to ``entities`` and identifiers normalized."""
    functions = [
        f.model_copy(
            update={
                "name": snake(f.name),
                "relationship": snake(f.relationship),
                "parameters": [snake(p) for p in f.parameters],
            }
        )
        for f in bp.functions
    ]
    return bp.model_copy(
        update={
            "name": snake(bp.name)[:63],
            "core": canonical(bp.core, entities),
            "peripherals": [canonical(p, entities) for p in bp.peripherals],
            "relationships": [_fix_relationship(r, entities) for r in bp.relationships],
            "functions": functions,
            "policies": [_fix_policy(p, entities) for p in bp.policies],
        }
    )


def _relationship_errors(rel: Relationship, bp: Blueprint, entity_names: set[str]) -> list[str]:
    errors: list[str] = []
    where = f"relationship {rel.name}"
    relationship_names = {r.name for r in bp.relationships}
    for link in rel.links:
        if link in relationship_names:
            errors.append(f"{where}: links relationship {link} (relationships may not link others)")
        elif link not in bp.peripherals:
            errors.append(f"{where}: links {link}, which is not a peripheral of the blueprint")
    if rel.name in entity_names:
        errors.append(f"{where}: the name is an entity's; name the relationship")
    if len(rel.statuses) < 2 or len(set(rel.statuses)) != len(rel.statuses):
        errors.append(f"{where}: needs at least 2 distinct statuses")
    if not rel.final or not set(rel.final) <= set(rel.statuses):
        errors.append(f"{where}: final statuses {rel.final} must be among {rel.statuses}")
    elif rel.statuses[0] in rel.final:
        errors.append(f"{where}: the first status (a new row's) may not be final")
    for attr in rel.attributes:
        clean = sanitize_attribute(attr)
        if isinstance(clean, str):
            errors.append(f"{where}: attribute {clean}")
    return errors


def _function_errors(fn: Function, bp: Blueprint) -> list[str]:
    rel = next((r for r in bp.relationships if r.name == fn.relationship), None)
    if rel is None:
        return [f"function {fn.name}: unknown relationship {fn.relationship}"]
    owners = [bp.core, *rel.links]
    allowed = {f"{e}_id" for e in owners} | {"id"}
    return [
        f"function {fn.name}: parameter {p} is not an id of {', '.join(owners)}"
        f" (ids are named <entity>_id)"
        for p in fn.parameters
        if p.endswith("_id") and p not in allowed
    ]


def _unique(what: str, names: list[str]) -> list[str]:
    twice = sorted({n for n in names if names.count(n) > 1})
    return [f"duplicate {what} {n}" for n in twice]


def structure_errors(bp: Blueprint, core: str, allowed: Sequence[str]) -> list[str]:
    """Every structural violation of a (name-fixed) blueprint, as readable lines.

    Args:
        bp: The blueprint.
        core: The person the outline is about.
        allowed: The entities the core may link (its neighbours in the entity graph).
    """
    errors: list[str] = []
    if bp.core != core:
        errors.append(f"core is {bp.core}, expected {core}")
    errors += [
        f"peripheral {p} is not a neighbour of {core} in the entity graph (allowed: "
        f"{', '.join(allowed)})"
        for p in bp.peripherals
        if p not in allowed
    ]
    if not bp.relationships:
        errors.append("no relationship: a service needs at least one table it writes")
    names = {bp.core, *bp.peripherals}
    for rel in bp.relationships:
        errors += _relationship_errors(rel, bp, names)
        if not any(f.kind == "create" and f.relationship == rel.name for f in bp.functions):
            errors.append(f"relationship {rel.name}: no create function")
    for fn in bp.functions:
        errors += _function_errors(fn, bp)
    functions = {f.name for f in bp.functions}
    errors += [
        f"policy {p.id}: unknown function {p.function}"
        for p in bp.policies
        if p.function not in functions
    ]
    errors += _unique("relationship", [r.name for r in bp.relationships])
    errors += _unique("function", [f.name for f in bp.functions])
    errors += _unique("policy", [p.id for p in bp.policies])
    return errors


def blueprint_parser(
    entities: Sequence[Entity], core: str, allowed: Sequence[str]
) -> Callable[[str], Blueprint]:
    """A parser for ``veritask.model.ask``: JSON -> Blueprint, names fixed, structure checked
    (a ``ValueError`` listing every error sends the draft back for repair)."""
    names = [e.name for e in entities]

    def parse(text: str) -> Blueprint:
        data = extract_json(text)
        try:
            bp = Blueprint.model_validate(data)
        except ValueError as exc:
            raise ValueError(f"does not match Blueprint: {exc}") from None
        fixed = fix_names(bp, names)
        errors = structure_errors(fixed, core, allowed)
        if errors:
            raise ValueError("blueprint violates: " + "; ".join(errors))
        return fixed

    return parse
