"""Cross-domain fusion: namespaces, one person table, SQL rewritten by parse tree, harmonized
rules, examples still passing, and certified tasks generated from the fused spec."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.blueprint import (
    FusionError,
    Renames,
    example_failures,
    fuse_specs,
    harmonize,
    rewrite_sql,
)
from veritask.domains import load_domain
from veritask.policy import build_tools, load_spec
from veritask.synth import generate
from veritask.task import check_dataset


@pytest.fixture(scope="module")
def travel_clinic() -> Any:
    return fuse_specs([load_domain("travel"), load_domain("clinic")])


def test_namespaces_and_one_person(travel_clinic: Any) -> None:
    spec = travel_clinic.spec
    names = [t.name for t in spec.tables]
    assert names[0] == "persons" and spec.actor == "persons"
    assert "travel_flight_bookings" in names and "clinic_appointments" in names
    assert not {"users", "patients"} & set(names)
    tools = build_tools(spec)
    assert "insert_travel_travel_requests" in tools and "insert_clinic_appointments" in tools
    person = spec.table("persons")
    assert {"company_id", "user_level", "insurance_plan_id", "visits_this_year"} <= set(
        person.column_names
    )
    assert person.column("company_id").references == "travel_companies.id"
    refs = {c.references for t in spec.tables for c in t.columns if c.references}
    assert "persons.id" in refs and not any(r.startswith(("users.", "patients.")) for r in refs)
    assert {r.id.split("_")[0] for r in spec.rules} == {"TRAVEL", "CLINIC"}


def test_persons_pair_by_shared_values(travel_clinic: Any) -> None:
    clinic = travel_clinic.id_maps["clinic"]
    assert clinic["p_ana"] == "u_staff_01"
    assert clinic["p_dev"] == "u_staff_inactive"  # the inactive patient joins an inactive user
    rows = {r["id"]: r for r in travel_clinic.spec.seed["persons"]}
    assert rows["u_staff_inactive"]["active"] == 0
    assert rows["u_staff_01"]["insurance_plan_id"] == "PLAN_STANDARD"
    assert rows["u_gamma_01"]["visits_this_year"] == 0  # no clinic partner: the default
    appointments = travel_clinic.spec.seed["clinic_appointments"]
    assert {a["patient_id"] for a in appointments} <= set(rows)


def test_rule_sql_is_rewritten(travel_clinic: Any) -> None:
    rule = travel_clinic.spec.rule("CLINIC_APPT_PATIENT_ACTIVE")
    assert "FROM persons" in rule.condition and "patients" not in rule.condition
    quota = travel_clinic.spec.rule("CLINIC_APPT_ACTIVE_QUOTA").threshold
    assert quota is not None and quota.quantity == "persons.active_appointment_count"
    lead = travel_clinic.spec.rule("CLINIC_APPT_LEAD_TIME").threshold
    assert lead is not None
    assert lead.quantity == "clinic_slots.start_step - clinic_appointments.booking_step"


@pytest.mark.parametrize(
    "pair", [("travel", "clinic"), ("retail", "registrar"), ("mock", "clinic")]
)
def test_fused_examples_still_pass(pair: tuple[str, str]) -> None:
    fusion = fuse_specs([load_domain(d) for d in pair])
    assert example_failures(fusion.spec) == []


def test_rewrite_renames_through_the_parse_tree() -> None:
    renames = Renames(
        {"users": "persons", "books": "lib_books"}, {"users": {"active": "lib_active"}}
    )
    out = rewrite_sql(
        "(SELECT COUNT(*) FROM users u JOIN books b ON u.id = b.owner WHERE u.active = 1)"
        " >= {threshold}",
        renames,
        "loans",
    )
    assert out == (
        "(SELECT COUNT(*) FROM persons AS u JOIN lib_books AS b ON u.id = b.owner"
        " WHERE u.lib_active = 1) >= {threshold}"
    )
    out = rewrite_sql("UPDATE users SET active = active - 1 WHERE id = NEW.user_id", renames, "x")
    assert out == "UPDATE persons SET lib_active = lib_active - 1 WHERE id = NEW.user_id"
    # a string that looks like a table name is data, not a name
    assert rewrite_sql("NEW.note = 'users'", renames, "users") == "NEW.note = 'users'"


def _limit(rid: str, value: int, comparison: str = "max", on: str = "insert") -> dict[str, Any]:
    return {
        "id": rid,
        "table": "persons",
        "on": [on],
        "condition": f"NEW.n >= {value}",
        "threshold": {"quantity": "persons.n", "value": value, "comparison": comparison},
    }


def test_harmonize_keeps_the_stricter_limit() -> None:
    kept, decisions = harmonize([("a", _limit("A_CAP", 5)), ("b", _limit("B_CAP", 3))])
    assert [r["id"] for r in kept] == ["B_CAP"]
    assert decisions[0].kind == "stricter" and decisions[0].dropped == "A_CAP"
    kept, _ = harmonize([("a", _limit("A_MIN", 5, "min")), ("b", _limit("B_MIN", 3, "min"))])
    assert [r["id"] for r in kept] == ["A_MIN"]


def test_harmonize_dedupes_and_leaves_independent_rules() -> None:
    same = {**_limit("B_CAP", 5), "threshold": None}
    first = {**_limit("A_CAP", 5), "threshold": None}
    kept, decisions = harmonize([("a", first), ("b", same)])
    assert [r["id"] for r in kept] == ["A_CAP"] and decisions[0].kind == "duplicate"
    other_event = _limit("B_CAP", 3, on="update")
    kept, decisions = harmonize([("a", _limit("A_CAP", 5)), ("b", other_event)])
    assert len(kept) == 2 and decisions == []


def test_harmonize_refuses_unorderable_limits() -> None:
    with pytest.raises(FusionError, match="cannot be ordered"):
        harmonize([("a", _limit("A_CAP", 5, "max")), ("b", _limit("B_CAP", 3, "min"))])


def test_fuse_refuses_bad_input() -> None:
    with pytest.raises(FusionError):
        fuse_specs([load_domain("mock")])
    with pytest.raises(FusionError):
        fuse_specs([load_domain("mock"), load_domain("mock")])


def test_cli_fuse_then_generate_certified(tmp_path: Path) -> None:
    out = tmp_path / "fused.yaml"
    result = CliRunner().invoke(cli, ["fuse", "mock", "clinic", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["services"] == ["mock", "clinic"] and report["examples"] == "all pass"
    spec = load_spec(out)
    assert spec.name == "mock_clinic" and spec.actor == "persons"
    summary = generate(str(out), 12, 0, tmp_path / "ds")
    assert summary.tasks == 12
    check = check_dataset(tmp_path / "ds")
    assert check.certified == check.tasks == 12
