"""Trajectory rows from files we did not write: any JSON value is read, checked and repaired,
or refused with ``FormatError``; nothing else is raised.

Rows whose ``tool_calls`` was not a list, held non-objects or a non-object ``function``, whose
``tools`` was a number, or whose content parts had non-text ``text``, used to raise TypeError
or AttributeError out of ``read_row``.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from veritask.domains import load_domain
from veritask.simulate import catalog_from_spec, check_turns, read_row
from veritask.simulate._formats import FormatError

KEYS = ["role", "content", "tool_calls", "function", "name", "arguments", "messages", "tools",
        "conversations", "from", "value", "id", "tool_call_id", "text", "type"]  # fmt: skip
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=8),
    st.sampled_from(["[" * 20_000, '{"a": ', "query_loans", "user", "assistant", "tool"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)
    ),
    max_leaves=25,
)
CATALOG = catalog_from_spec(load_domain("mock"))


@pytest.mark.parametrize(
    "row",
    [
        {"messages": [{"role": "assistant", "tool_calls": 5}]},
        {"messages": [{"role": "assistant", "tool_calls": [5, "x"]}]},
        {"messages": [{"role": "assistant", "tool_calls": [{"function": 5}]}]},
        {"messages": [{"role": "user", "content": [{"text": 5}]}], "tools": 7},
    ],
)
def test_malformed_chat_rows_are_read(row: dict[str, Any]) -> None:
    check_turns(read_row(row).turns, CATALOG)


@settings(max_examples=300, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))  # fmt: skip
@given(VALUES)
def test_any_json_row_is_read_or_refused(record: Any) -> None:
    try:
        row = read_row(record)
    except FormatError:
        return
    check_turns(row.turns, CATALOG)
