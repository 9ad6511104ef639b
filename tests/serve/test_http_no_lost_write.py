"""Through the HTTP service: a hostile step is a structured error and loses no earlier write.

The service layer is driven directly (no socket): the bug lived below it, in ``Environment.call``,
which used to raise on these arguments (a 500), leave its savepoint open, and let the next rejected
step roll the served environment back to its origin.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from veritask.env import CompiledDomain
from veritask.serve import DomainSource, EnvService

GOOD = {"member_id": "m_ana", "book_id": "b_dune", "due_step": 10}
LAPSED = {"member_id": "m_lapsed", "book_id": "b_dune", "due_step": 10}


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ({**GOOD, "due_step": 2**70}, "INTEGER_OUT_OF_RANGE"),
        ({**GOOD, "member_id": "\ud800"}, "INVALID_STRING"),
        ('{"member_id": ' + "[" * 100_000 + "]" * 100_000 + "}", "ARGUMENTS_TOO_DEEP"),
    ],
)
def test_hostile_step_keeps_the_served_state(
    compiled: dict[str, CompiledDomain], arguments: Any, code: str
) -> None:
    service = EnvService(DomainSource(compiled["mock"]))
    sid = service.reset({})["session_id"]
    origin = service.state(sid)["state_sha256"]

    def step(args: Any) -> dict[str, Any]:
        body = {"session_id": sid, "action": {"tool": "insert_loans", "arguments": args}}
        observation: dict[str, Any] = service.step(body)["observation"]
        json.dumps(observation)  # the reply is serializable
        return observation

    hostile = step(arguments)
    assert hostile["error"]["code"] == code and not hostile["state_changed"]
    assert step(GOOD)["ok"]
    written = service.state(sid)["state_sha256"]
    assert written != origin
    assert step(LAPSED)["error"]["violated_rule"] == "MEMBER_ACTIVE"
    assert service.state(sid)["state_sha256"] == written
    service.close()
