"""A write's result is the stored row, whether it comes from RETURNING or a read-back."""

from __future__ import annotations

import re

import pytest

from veritask.domains import builtin_domains, load_domain
from veritask.env import CompiledDomain, Environment
from veritask.policy import compile_sql


def _stored(env: Environment, table: str, key: str, value: object) -> dict[str, object]:
    (row,) = [r for r in env.rows(table) if r[key] == value]
    return row


@pytest.mark.parametrize("domain", builtin_domains())
def test_tables_written_by_a_trigger_are_read_back(domain: str) -> None:
    """Every table an effect updates or inserts into is left out of the RETURNING set."""
    spec = load_domain(domain)
    compiled = CompiledDomain.from_spec(spec)
    triggers = compile_sql(spec).triggers
    for effect in spec.effects:
        for target in re.findall(r"(?:UPDATE|INTO)\s+(\w+)", effect.sql, re.IGNORECASE):
            assert target not in compiled.returning, (domain, effect.id, target)
    assert compiled.returning, domain  # reference tables at least take the fast path
    assert all(t in compiled.layout.tables for t in compiled.returning)
    assert triggers  # the check ran over real trigger text


def test_a_returning_write_gives_the_stored_row() -> None:
    env = Environment(CompiledDomain.from_spec(load_domain("mock")))
    assert "loans" in env.domain.returning
    result = env.call("insert_loans", {"member_id": "m_ana", "book_id": "b_dune", "due_step": 10})
    assert result.ok and result.state_changed, result.error
    assert result.result == _stored(env, "loans", "id", result.result["id"])


def test_a_row_an_effect_updates_is_returned_as_stored() -> None:
    """travel's FLIGHT_POLICY_FLAG sets policy_violation_flag after the insert: the result
    shows the flag the effect wrote, which RETURNING alone would miss."""
    env = Environment(CompiledDomain.from_spec(load_domain("travel")))
    assert "flight_bookings" not in env.domain.returning
    (request,) = [r for r in env.rows("travel_requests") if r["status"] == "DRAFT"][:1]
    booking = {
        "travel_request_id": request["id"],
        "flight_code": "EMERGENCY1",
        "cost": 100,
        "class": "ECONOMY",
        "departure_step": 11,
        "booking_step": 10,
        "approval_status": "NOT_REQUIRED",
    }
    result = env.call("insert_flight_bookings", booking)
    assert result.ok, result.error
    stored = _stored(env, "flight_bookings", "id", result.result["id"])
    assert result.result == stored and stored["policy_violation_flag"] == 1
