"""Boundaries of every kind, read from each rule's parsed condition (issue 29, deliverable 2)."""

from __future__ import annotations

import pytest

from veritask.domains import builtin_domains, load_domain
from veritask.env import CompiledDomain, Environment
from veritask.synth._boundaries import BOUNDARY_KINDS, Boundaries, shape


@pytest.fixture(scope="module")
def mock() -> tuple[Boundaries, Environment]:
    spec = load_domain("mock")
    env = Environment(CompiledDomain.from_spec(spec))
    yield Boundaries(spec), env
    env.close()


def test_kinds_come_from_the_parsed_condition() -> None:
    gym = load_domain("gym")
    kinds = {r.id: shape(gym, r).kind for r in gym.rules}
    assert kinds["BOOKING_QUOTA"] == "quota"  # the threshold's counter
    assert kinds["CANCEL_FINAL"] == "state"  # OLD.status = 'CANCELLED'
    assert kinds["FREEZE_LENGTH"] == "numeric"  # NEW.days < 7 OR NEW.days > 90
    assert kinds["GUEST_PLAN"] == "multi"  # a plan's privilege flag and the member's status
    mock = load_domain("mock")
    assert shape(mock, mock.rule("MEMBER_ACTIVE")).kind == "flag"  # members.active = 1
    clinic = load_domain("clinic")
    lead = shape(clinic, clinic.rule("APPT_LEAD_TIME"))
    assert lead.kind == "window"
    assert {i.name for i in lead.inputs} == {"slots.start_step", "NEW.booking_step"}


def test_a_value_only_compared_for_equality_is_no_boundary() -> None:
    """``NEW.amount != quantity * price``: any change breaks it, so it is not an input."""
    gym = load_domain("gym")
    inputs = {i.name for i in shape(gym, gym.rule("PURCHASE_AMOUNT")).inputs}
    assert "NEW.amount" not in inputs
    assert "products.unit_price" in inputs


def test_every_builtin_domain_has_boundaries_of_several_kinds() -> None:
    for name in builtin_domains():
        kinds = {sh.kind for sh in Boundaries(load_domain(name)).shapes.values()}
        assert {"quota", "state"} <= kinds, name
        assert kinds - {None} <= set(BOUNDARY_KINDS)


def test_quota_at_n_minus_one_is_adjacent_and_at_zero_it_is_not(
    mock: tuple[Boundaries, Environment],
) -> None:
    bounds, env = mock
    # m_ben holds 1 of 2 loans: one more loan fills the quota
    ben = bounds.adjacent(env, "insert_loans", {"member_id": "m_ben", "book_id": "b_dune"})
    assert "LOAN_QUOTA" in {a.rule for a in ben}
    quota = next(a for a in ben if a.rule == "LOAN_QUOTA")
    assert quota.kind == "quota"
    assert quota.describe() == "members.active_loans +1"
    ana = bounds.adjacent(env, "insert_loans", {"member_id": "m_ana", "book_id": "b_dune"})
    assert "LOAN_QUOTA" not in {a.rule for a in ana}
    # the eligibility flag is one flip away for an active member
    assert "MEMBER_ACTIVE" in {a.rule for a in ana}


def test_a_violated_call_is_not_adjacent(mock: tuple[Boundaries, Environment]) -> None:
    bounds, env = mock
    lapsed = bounds.adjacent(env, "insert_loans", {"member_id": "m_lapsed", "book_id": "b_dune"})
    assert "MEMBER_ACTIVE" not in {a.rule for a in lapsed}  # already refused: past the edge


def test_a_status_one_step_from_a_final_state(mock: tuple[Boundaries, Environment]) -> None:
    bounds, env = mock
    found = bounds.adjacent(env, "update_loans", {"id": 1, "due_step": 6})
    final = next(a for a in found if a.rule == "RETURN_FINAL")
    assert final.kind == "state"
    assert final.moves[0].step == "='RETURNED'"
