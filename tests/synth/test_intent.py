"""What an offered alternative changes first, so that it keeps the request's intent."""

from __future__ import annotations

from veritask.domains import load_domain
from veritask.synth._intent import moves_clock, offer_rank


def test_an_offer_supplies_a_missing_value_before_changing_a_stated_one() -> None:
    """After a refusal, the alternative first supplies what the user left out, then another
    record of the same kind, and only last changes a value the user stated."""
    bookings = load_domain("travel").table("flight_bookings")
    args = {"travel_request_id": 1, "flight_code": "UA310", "cost": 1150, "class": "ECONOMY"}
    cols = ["cost", "travel_request_id", "departure_step"]
    ranked = sorted(cols, key=lambda c: offer_rank(bookings, c, args))
    assert ranked == ["departure_step", "travel_request_id", "cost"]


def test_a_stated_time_is_never_moved_but_a_missing_one_may_be_given() -> None:
    bookings = load_domain("travel").table("flight_bookings")
    assert moves_clock(bookings, "departure_step", {"departure_step": 20}, set())
    assert not moves_clock(bookings, "departure_step", {}, set())
    assert not moves_clock(bookings, "departure_step", {"departure_step": 20}, {"departure_step"})
