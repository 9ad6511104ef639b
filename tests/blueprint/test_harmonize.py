"""Conflicts across fused services and the bridge rules written for them."""

from __future__ import annotations

from typing import Any

from veritask.blueprint import fuse_specs
from veritask.blueprint._examples import example_failures
from veritask.blueprint._harmonize import person_requirements
from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment
from veritask.policy import DomainSpec, spec_from_data


def _library(name: str, min_age: int) -> DomainSpec:
    """The mock library with an ``age`` on members and a minimum age to borrow."""
    data: dict[str, Any] = load_domain("mock").model_dump(mode="json", exclude_defaults=True)
    data["name"] = name
    members = next(t for t in data["tables"] if t["name"] == "members")
    members["columns"].append({"name": "age", "type": "INTEGER", "description": "Age in years"})
    rows = data["seed"]["members"]
    for row in rows:
        row["age"] = 40
    rows.append({**rows[0], "id": "m_teen", "name": "Teen Reader", "age": 19})
    rule = next(r for r in data["rules"] if r["id"] == "MEMBER_ACTIVE")
    rule["condition"] = rule["condition"].replace("active = 1", f"active = 1 AND age >= {min_age}")
    return spec_from_data(data, source=f"<{name}>")


def test_requirements_are_read_from_a_not_exists_lookup() -> None:
    cond = "NOT EXISTS (SELECT 1 FROM persons WHERE id = NEW.member_id AND age >= 18)"
    [req] = person_requirements(cond, "persons")
    assert (req.column, req.op, req.value, req.fk) == ("age", ">=", 18, "member_id")
    # a lookup that fires when it finds the person states a forbidden state, not a requirement
    assert person_requirements(cond.replace("NOT EXISTS", "EXISTS"), "persons") == []


def test_a_pair_built_to_conflict_gets_a_bridge_rule_whose_examples_pass() -> None:
    fusion = fuse_specs([_library("lenient", 18), _library("strict", 21)])
    [conflict] = fusion.conflicts
    assert conflict.kind == "thresholds" and conflict.column == "age"
    assert sorted(conflict.requirements) == ["age >= 18", "age >= 21"]
    bridge = fusion.spec.rule(conflict.bridge or "")
    assert bridge.table.startswith("lenient_")  # the laxer service is held to the stricter bound
    assert example_failures(fusion.spec) == []
    assert any(c.expect == bridge.id for ex in bridge.examples for c in ex.calls)
    env = Environment(CompiledDomain.from_spec(fusion.spec))
    teen = fusion.id_maps.get("lenient", {}).get("m_teen", "m_teen")
    call = next(c for ex in bridge.examples for c in ex.calls if c.expect == bridge.id)
    result = env.call(call.tool, {**call.args})
    assert not result.ok and result.error is not None
    assert result.error.violated_rule == bridge.id and call.args["member_id"] == teen
    assert fusion.to_json()["bridges"] == [bridge.id]


def test_travel_and_clinic_share_no_person_requirement() -> None:
    fusion = fuse_specs([load_domain("travel"), load_domain("clinic")])
    assert fusion.conflicts == [] and fusion.to_json()["bridges"] == []
