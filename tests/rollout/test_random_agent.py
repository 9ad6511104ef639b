"""The random baseline reuses values it has seen in tool results."""

from __future__ import annotations

import json
import random

from veritask.agent._symbolic import observed_values, random_arguments

TOOL = {
    "type": "function",
    "function": {
        "name": "update_loans",
        "parameters": {
            "type": "object",
            "properties": {
                "id": {"type": "integer"},
                "member_id": {"type": "string"},
                "status": {"type": "string", "enum": ["OPEN", "RETURNED"]},
            },
            "required": ["id", "member_id", "status"],
        },
    },
}


def _tool(payload: object) -> dict[str, str]:
    return {"role": "tool", "tool_call_id": "c", "content": json.dumps(payload)}


def test_observed_values_collects_rows_and_written_records() -> None:
    messages = [
        {"role": "user", "content": "hi"},
        _tool({"rows": [{"id": 7, "member_id": "m_ana", "ok": True}], "total": 1}),
        _tool({"id": 9, "member_id": "m_ben", "status": "OPEN"}),
        _tool({"error": {"code": "X", "message": "no"}}),
        {"role": "tool", "tool_call_id": "c", "content": "not json"},
    ]
    pool = observed_values(messages)
    assert pool["id"] == [7, 9] and pool["member_id"] == ["m_ana", "m_ben"]
    assert "ok" not in pool  # booleans are not reusable values


def test_random_arguments_mostly_reuse_seen_values_and_respect_the_schema() -> None:
    pool = {"id": [7, 9], "member_id": ["m_ana"], "status": ["LOST", "OPEN"]}
    rng = random.Random(0)
    drawn = [random_arguments(TOOL, rng, pool) for _ in range(200)]
    assert all(d["status"] in ("OPEN", "RETURNED") for d in drawn)  # LOST is not in the enum
    reused = sum(d["id"] in (7, 9) for d in drawn)
    assert 120 <= reused <= 200
    assert sum(d["member_id"] == "m_ana" for d in drawn) >= 120
    # the same seed and pool give the same arguments
    again = random.Random(0)
    assert [random_arguments(TOOL, again, pool) for _ in range(200)] == drawn
    # with nothing seen, arguments are still schema-valid
    bare = random_arguments(TOOL, random.Random(1))
    assert isinstance(bare["id"], int) and bare["status"] in ("OPEN", "RETURNED")
