"""Schema names in the user's words."""

from __future__ import annotations

import pytest

from veritask.synth._analysis import humanize


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("flight_bookings", "flight booking"),
        ("trip_purpose", "trip purpose"),
        ("policies", "policy"),
        ("branches", "branch"),
        ("travel_travel_requests", "travel request"),  # a fused spec's service prefix
        ("clinic_appointments", "clinic appointment"),
    ],
)
def test_humanize(name: str, words: str) -> None:
    assert humanize(name) == words
