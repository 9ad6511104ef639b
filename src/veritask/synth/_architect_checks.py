"""Stage verifiers of the Architect: a semantic checklist and physical checks per stage.

Each ``verify_*`` function returns the list of :class:`StageError` for one stage artifact; an
empty list accepts it. The semantic checklist is derived from upstream artifacts (seed rules ->
plan -> wiki -> tables -> rules); the physical checks run the artifact in SQLite.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from veritask.env import example_coverage
from veritask.policy import DomainSpec, SpecError, Wiki, spec_from_data
from veritask.synth._architect_artifacts import (
    COMPLEX_KINDS,
    ComplexityPlan,
    RulesArtifact,
    StageError,
    TablesArtifact,
)
from veritask.synth._architect_physical import (
    check_tables_sql,
    check_triggers_sql,
    run_spec_examples,
)
from veritask.synth._architect_seed import Seed, numbers_in


@dataclass(frozen=True)
class PlanLimits:
    """Bounds on what a complexity plan may ask for.

    Attributes:
        min_entities / max_entities: How many tables a domain has.
        min_rules / max_rules: How many rejecting rules (side effects excluded).
        max_effects: How many side effects.
        min_complex_kinds: How many distinct kinds of complex logic (quota, state machine,
            immutability, permission) the plan must include.
    """

    min_entities: int = 2
    max_entities: int = 30
    min_rules: int = 3
    max_rules: int = 150
    max_effects: int = 60
    min_complex_kinds: int = 2


def _duplicates(names: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for name in names:
        if name in seen and name not in out:
            out.append(name)
        seen.add(name)
    return out


# -- stage 1: complexity plan ------------------------------------------------------------------


def _coverage_errors(plan: ComplexityPlan, seed: Seed) -> list[StageError]:
    errors = []
    covered = {i for rule in plan.rules for i in rule.seed_rules}
    for index, sentence in enumerate(seed.rules, 1):
        if index not in covered:
            errors.append(
                StageError(
                    "plan",
                    "seed_rule_uncovered",
                    f"no planned rule lists {index} in seed_rules; seed rule: {sentence}",
                    f"seed rule {index}",
                )
            )
    for rule in plan.rules:
        for index in rule.seed_rules:
            if not 1 <= index <= len(seed.rules):
                message = f"seed_rules has {index}, but the seed has rules 1..{len(seed.rules)}"
                errors.append(StageError("plan", "seed_rule_unknown", message, f"rule {rule.id}"))
    return errors


def _plan_reference_errors(plan: ComplexityPlan, seed: Seed) -> list[StageError]:
    errors = []
    entities = {e.name for e in plan.entities}
    for name in _duplicates(e.name for e in plan.entities):
        errors.append(StageError("plan", "duplicate_entity", "entity planned twice", name))
    for rule_id in _duplicates(r.id for r in plan.rules):
        errors.append(StageError("plan", "duplicate_rule", "rule id used twice", rule_id))
    for rule in plan.rules:
        if rule.entity not in entities:
            message = f"entity {rule.entity!r} is not one of the planned entities"
            errors.append(StageError("plan", "unknown_entity", message, f"rule {rule.id}"))
    for actor in plan.actors:
        if actor not in entities:
            message = "an actor must be one of the planned entities"
            errors.append(StageError("plan", "unknown_actor", message, actor))
    for name in seed.hints.entities:
        if name not in entities:
            message = "the seed expects this entity, but the plan has no such entity"
            errors.append(StageError("plan", "hinted_entity_missing", message, name))
    if seed.hints.actor and seed.hints.actor not in plan.actors:
        message = "the seed names this actor, but the plan's actors do not include it"
        errors.append(StageError("plan", "hinted_actor_missing", message, seed.hints.actor))
    return errors


def _count_errors(plan: ComplexityPlan, limits: PlanLimits) -> list[StageError]:
    rules = sum(r.kind != "side_effect" for r in plan.rules)
    effects = len(plan.rules) - rules
    counts = {"tables": len(plan.entities), "rules": rules, "effects": effects}
    bounds = {
        "tables": (limits.min_entities, limits.max_entities),
        "rules": (limits.min_rules, limits.max_rules),
        "effects": (0, limits.max_effects),
    }
    errors = []
    for what, (low, high) in bounds.items():
        if not low <= counts[what] <= high:
            message = f"{counts[what]} planned {what}; the allowed range is {low}..{high}"
            errors.append(StageError("plan", "count_out_of_bounds", message, what))
        declared = getattr(plan.targets, what)
        if declared != counts[what]:
            message = f"targets.{what} is {declared}, but the plan enumerates {counts[what]}"
            errors.append(StageError("plan", "target_mismatch", message, what))
    kinds = sorted({r.kind for r in plan.rules} & COMPLEX_KINDS)
    if len(kinds) < limits.min_complex_kinds:
        message = (
            f"the plan has {len(kinds)} kind(s) of complex logic ({', '.join(kinds) or 'none'}); "
            f"include at least {limits.min_complex_kinds} of {', '.join(sorted(COMPLEX_KINDS))}"
        )
        errors.append(StageError("plan", "too_simple", message))
    return errors


def verify_plan(plan: ComplexityPlan, seed: Seed, limits: PlanLimits) -> list[StageError]:
    """Every seed rule covered by a planned rule; references resolve; counts within bounds."""
    return [
        *_coverage_errors(plan, seed),
        *_plan_reference_errors(plan, seed),
        *_count_errors(plan, limits),
    ]


# -- stage 2: wiki policy ----------------------------------------------------------------------


def _mentions(text: str, word: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])", text) is not None


def verify_wiki(wiki: str, plan: ComplexityPlan, seed: Seed) -> list[StageError]:
    """A titled document naming every planned rule id and entity and every seed number."""
    errors = []
    first = next((ln for ln in wiki.splitlines() if ln.strip()), "")
    if not first.startswith("# "):
        message = "the policy must start with a '# Title' line"
        errors.append(StageError("wiki", "wiki_title", message))
    for rule in plan.rules:
        if not _mentions(wiki, rule.id):
            message = f"the planned {rule.kind} rule is not described (name it by its id)"
            errors.append(StageError("wiki", "rule_not_in_wiki", message, f"rule {rule.id}"))
    for entity in plan.entities:
        if not _mentions(wiki, entity.name):
            message = "the planned entity is not described"
            errors.append(StageError("wiki", "entity_not_in_wiki", message, entity.name))
    wiki_numbers = set(numbers_in(wiki))
    for index in range(1, len(seed.rules) + 1):
        for number in seed.rule_numbers(index):
            if number not in wiki_numbers:
                message = f"the seed rule's number {number} does not appear in the policy"
                errors.append(
                    StageError("wiki", "seed_number_missing", message, f"seed rule {index}")
                )
    return errors


# -- stage 3: tables ---------------------------------------------------------------------------


def _issue_errors(exc: SpecError, stage: str) -> list[StageError]:
    out = []
    for issue in exc.issues:
        check = "foreign_key" if issue.field.endswith(".references") else "spec_invalid"
        out.append(StageError(stage, check, issue.message, issue.field))
    return out


def provisional_spec_data(seed: Seed, tables: TablesArtifact) -> dict[str, Any]:
    """DomainSpec data holding the tables and seed rows (and a placeholder wiki)."""
    return {
        "name": seed.domain_name,
        "description": seed.context,
        "actor": tables.actor,
        "wiki": Wiki(title=seed.scenario, persona="(written in stage 4)").model_dump(mode="json"),
        "tables": [t.model_dump(mode="json", exclude_defaults=True) for t in tables.tables],
        "seed": tables.seed,
    }


def verify_tables(
    tables: TablesArtifact, plan: ComplexityPlan, seed: Seed
) -> tuple[list[StageError], DomainSpec | None]:
    """Tables validate as a DomainSpec; every planned entity has one; the DDL and rows load.

    Returns the errors and, when the tables validate, the provisional spec (no rules yet).
    """
    names = {t.name for t in tables.tables}
    errors = [
        StageError("tables", "entity_without_table", "the plan has this entity", e.name)
        for e in plan.entities
        if e.name not in names
    ]
    if tables.actor is not None and tables.actor not in plan.actors:
        message = f"the actor must be one of the planned actors ({', '.join(plan.actors)})"
        errors.append(StageError("tables", "actor_not_planned", message, tables.actor))
    if not any(t.writable for t in tables.tables):
        message = "no table is read-write, so agents could not change anything"
        errors.append(StageError("tables", "no_writable_table", message))
    try:
        spec = spec_from_data(provisional_spec_data(seed, tables), source="tables")
    except SpecError as exc:
        return errors + _issue_errors(exc, "tables"), None
    return errors + check_tables_sql(spec, "tables"), spec


# -- stage 4: rules and effects ----------------------------------------------------------------


def full_spec_data(seed: Seed, tables: TablesArtifact, rules: RulesArtifact) -> dict[str, Any]:
    """The complete DomainSpec data: stage 3's tables and rows plus stage 4's artifact."""
    data = provisional_spec_data(seed, tables)
    data.update(
        description=rules.description.strip() or seed.context,
        wiki=rules.wiki.model_dump(mode="json", exclude_defaults=True),
        rules=[r.model_dump(mode="json", exclude_defaults=True) for r in rules.rules],
        effects=[e.model_dump(mode="json", exclude_defaults=True) for e in rules.effects],
        transactions=[t.model_dump(mode="json", exclude_defaults=True) for t in rules.transactions],
    )
    return data


def _checklist_errors(spec: DomainSpec, plan: ComplexityPlan) -> list[StageError]:
    rule_ids = {r.id for r in spec.rules}
    effect_ids = {e.id for e in spec.effects}
    errors = []
    for planned in plan.rules:
        wanted, have = (
            ("effect", effect_ids) if planned.kind == "side_effect" else ("rule", rule_ids)
        )
        if planned.id not in have:
            message = (
                f"the plan has this {planned.kind} rule, but the spec has no {wanted} {planned.id}"
            )
            errors.append(StageError("rules", "planned_rule_missing", message, planned.id))
            continue
        if wanted == "rule" and planned.threshold is not None:
            threshold = spec.rule(planned.id).threshold
            value = threshold.value if threshold is not None else None
            if value is not None and value != planned.threshold:
                message = f"threshold.value is {value}, the plan says {planned.threshold}"
                errors.append(
                    StageError("rules", "threshold_mismatch", message, f"rule {planned.id}")
                )
    return errors


def _example_coverage_errors(spec: DomainSpec) -> list[StageError]:
    """Rules without a rejecting and a passing example call, effects without expect_rows."""
    errors = []
    for failure in example_coverage(spec):
        kind = "effect" if failure.check == "effect_without_example" else "rule"
        errors.append(
            StageError("rules", failure.check, failure.message, f"{kind} {failure.owner}")
        )
    return errors


def verify_rules(
    artifact: RulesArtifact, tables: TablesArtifact, plan: ComplexityPlan, seed: Seed
) -> tuple[list[StageError], DomainSpec | None]:
    """The full spec validates; every planned rule exists with examples; the triggers compile;
    every example behaves as declared on a fresh environment.

    Returns the errors and, when the spec validates, the spec.
    """
    try:
        spec = spec_from_data(full_spec_data(seed, tables, artifact), source="rules")
    except SpecError as exc:
        return _issue_errors(exc, "rules"), None
    errors = _checklist_errors(spec, plan) + _example_coverage_errors(spec)
    compile_errors = check_triggers_sql(spec, "rules")
    if compile_errors:
        return errors + compile_errors, spec
    return errors + run_spec_examples(spec, "rules"), spec
