"""Procedural tools compiled to closures: the same values as the steps describe, in order."""

from __future__ import annotations

import json
from typing import Any

import pytest

from veritask.env import CompiledDomain, Environment
from veritask.env._procedural import _json_load
from veritask.policy import spec_from_data

SPEC: dict[str, Any] = {
    "name": "shelf",
    "wiki": {"title": "Shelf", "persona": "a clerk"},
    "tables": [
        {
            "name": "boxes",
            "tier": "entity",
            "access": "read-write",
            "columns": [
                {"name": "id", "type": "TEXT", "primary_key": True},
                {"name": "label", "type": "TEXT"},
                {"name": "tags", "type": "TEXT"},
            ],
        }
    ],
    "seed": {
        "boxes": [
            {"id": "b1", "label": "first", "tags": '["red", "blue"]'},
            {"id": "b2", "label": "second", "tags": ' {"k": 1} '},
            {"id": "b3", "label": "third", "tags": "not json"},
        ]
    },
    "procedures": [
        {
            "name": "shelf_view",
            "description": "Every box, then the box a loop variable last held.",
            "access": "read",
            "params": [{"name": "first_id", "type": "string"}],
            "steps": [
                {"op": "read", "table": "boxes", "where": {"id": "first_id"}, "into": "b"},
                {"op": "read", "table": "boxes", "where": {}, "into": "all", "many": True},
                {
                    "op": "return",
                    "value": {
                        "before": "b.label",
                        # the loop variable is the row read above: a field after the loop
                        # must see the loop's last element, as the steps say
                        "boxes": {"each": "all", "as": "b", "value": {"tags": {"$json": "b.tags"}}},
                        "after": "b.label",
                        "missing": "b.nothing",
                        "label_upper": "upper(b.label)",
                    },
                },
            ],
        }
    ],
}


@pytest.fixture(scope="module")
def env() -> Environment:
    return Environment(CompiledDomain.from_spec(spec_from_data(json.loads(json.dumps(SPEC)))))


def test_a_field_after_a_loop_reads_the_loop_variable_as_the_loop_left_it(env: Environment) -> None:
    res = env.call("shelf_view", {"first_id": "b1"})
    assert res.ok, res.error
    assert res.result == {
        "before": "first",
        "boxes": [{"tags": ["red", "blue"]}, {"tags": {"k": 1}}, {"tags": None}],
        "after": "third",
        "missing": None,
        "label_upper": "THIRD",
    }
    assert list(res.result) == ["before", "boxes", "after", "missing", "label_upper"]


def test_a_row_variable_that_is_not_a_row_reads_as_nulls(env: Environment) -> None:
    res = env.call("shelf_view", {"first_id": "nope"})
    assert res.ok, res.error
    assert res.result["before"] is None and res.result["after"] == "third"


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [1, 2.5, null]}',
        " [1] ",
        "[1] x",
        "\ufeff[1]",
        "",
        "NaN",
        "-Infinity",
        "1e400",
        '"s"',
    ],
)
def test_json_decoding_agrees_with_json_loads(text: str) -> None:
    try:
        expected = json.loads(text)
    except ValueError:
        expected = None
    found = _json_load(text)
    assert json.dumps(found) == json.dumps(expected)
    assert _json_load(42) is None and _json_load(None) is None
