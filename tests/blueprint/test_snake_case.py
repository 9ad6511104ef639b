"""Names from model answers become identifiers word by word, whatever their case."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from veritask.blueprint._dag_schema import rule_id, snake


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("LabEquipment", "lab_equipment"),
        ("lab equipment", "lab_equipment"),
        ("Lab-Equipment", "lab_equipment"),
        ("BOOKING_QUOTA", "booking_quota"),
        ("ATTENDED", "attended"),
        ("HTTPServer", "http_server"),
        ("userID2", "user_id2"),
        ("room 101", "room_101"),
    ],
)
def test_snake(text: str, want: str) -> None:
    assert snake(text) == want


WORD = st.from_regex(r"[a-z]{2,8}", fullmatch=True)


@given(st.lists(WORD, min_size=1, max_size=4))
def test_every_spelling_of_the_same_words_gives_the_same_identifier(words: list[str]) -> None:
    want = "_".join(words)
    for spelling in (
        "_".join(w.upper() for w in words),
        " ".join(words),
        "".join(w.capitalize() for w in words),
        "-".join(w.capitalize() for w in words),
    ):
        assert snake(spelling) == want
    assert rule_id(" ".join(words)) == want.upper()
