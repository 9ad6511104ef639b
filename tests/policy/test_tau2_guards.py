"""Policy guards of imported τ²-bench domains (``import-tau2 --guards``).

The guards are the policy's rules the toolkits do not enforce, as veritask rules with ids,
codes, messages and examples. Off by default (parity is measured without them); on, they
refuse what the policy forbids and leave the state unchanged.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.env import CompiledDomain, Environment
from veritask.env._examples import example_coverage, run_spec_examples
from veritask.env._tau2 import tau2_db
from veritask.policy import load_spec
from veritask.policy.tau2 import import_tau2

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tau2"


@pytest.fixture(scope="module")
def airline() -> CompiledDomain:
    return CompiledDomain.from_spec(import_tau2(FIXTURES / "airline", "airline", guards=True).spec)


@pytest.mark.parametrize(("domain", "count"), [("airline", 9), ("retail", 2)])
def test_every_guard_has_examples_that_hold_on_the_fixture(domain: str, count: int) -> None:
    assert import_tau2(FIXTURES / domain, domain).spec.rules == []  # off unless asked
    spec = import_tau2(FIXTURES / domain, domain, guards=True).spec
    assert len(spec.rules) == count
    assert all(r.id.startswith(domain.upper() + "_") for r in spec.rules)
    assert example_coverage(spec) == []
    assert run_spec_examples(spec) == []


def test_a_refused_cancellation_names_its_rule_and_changes_nothing(
    airline: CompiledDomain,
) -> None:
    env = Environment(airline)
    before = env.image()
    res = env.call("cancel_reservation", {"reservation_id": "RES001"})
    assert not res.ok and res.error is not None
    assert (res.error.violated_rule, res.error.code) == (
        "AIRLINE_CANCEL_ELIGIBLE",
        "POLICY_VIOLATION",
    )
    assert res.error.message == "The reservation is not eligible for cancellation"
    assert env.image() == before
    # booked within the last 24 hours: allowed, and the toolkit's own effects follow
    ok = env.call("cancel_reservation", {"reservation_id": "RES004"})
    assert ok.ok and ok.result["status"] == "cancelled"


def test_bag_allowance_follows_membership_and_cabin(airline: CompiledDomain) -> None:
    env = Environment(airline)
    args = {"reservation_id": "RES001", "payment_id": "credit_card_1001"}
    # gold, economy, two passengers: 3 free bags each
    over = env.call(
        "update_reservation_baggages", {**args, "total_baggages": 7, "nonfree_baggages": 0}
    )
    assert over.error is not None and over.error.violated_rule == "AIRLINE_BAGGAGE_ALLOWANCE"
    ok = env.call(
        "update_reservation_baggages", {**args, "total_baggages": 7, "nonfree_baggages": 1}
    )
    assert ok.ok and ok.result["payment_history"][-1] == {
        "payment_id": "credit_card_1001",
        "amount": 50,
    }


def test_the_cli_keeps_only_examples_that_hold_on_the_database(tmp_path: Path) -> None:
    root = tmp_path / "co"
    shutil.copytree(FIXTURES / "airline", root)
    db_path = root / "data" / "tau2" / "domains" / "airline" / "db.json"
    db = json.loads(db_path.read_text())
    db["users"]["dan_roe_4004"]["membership"] = "gold"  # now eligible for compensation
    db_path.write_text(json.dumps(db))
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli, ["import-tau2", str(root), "--domain", "airline", "--out", str(out), "--guards"]
    )
    assert result.exit_code == 0, result.output
    assert "14 tools, 9 guards" in result.output and "left out" not in result.output
    written = root / "data" / "tau2" / "domains" / "airline" / "policy.md"
    assert (out / "policy.md").read_text() == written.read_text()
    assert "dropped AIRLINE_COMPENSATION_ELIGIBLE example 0" in result.output
    spec = load_spec(out / "spec.yaml")
    kept = {r.id: len(r.examples) for r in spec.rules}
    assert kept["AIRLINE_COMPENSATION_ELIGIBLE"] == 0 and kept["AIRLINE_CANCEL_FLOWN"] == 1
    assert run_spec_examples(spec) == []
    state = tau2_db(Environment(CompiledDomain.from_spec(spec)))  # the seed as written
    assert state["users"]["dan_roe_4004"]["membership"] == "gold"
    assert state["reservations"]["RES004"]["status"] is None


def test_generation_on_an_imported_domain_is_allowed_and_other_procedures_refused() -> None:
    from veritask.synth import generation_problems

    spec = import_tau2(FIXTURES / "airline", "airline", guards=True).spec
    assert generation_problems(spec) == []  # the procedural generator knows its requests
    unknown = spec.model_copy(
        update={"procedures": [p for p in spec.procedures if p.access == "read"]}
    )
    ((loc, why),) = generation_problems(unknown)
    assert loc == ("atomic_tools",) and "procedural tools is not supported yet" in why


def test_telecom_is_refused_naming_what_is_missing(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        ["import-tau2", str(FIXTURES / "airline"), "--domain", "telecom", "--out", str(tmp_path)],
    )
    assert result.exit_code != 0
    assert "user-side tools" in result.output and "second database" in result.output
    assert not list(tmp_path.iterdir())
