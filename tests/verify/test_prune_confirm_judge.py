"""The trajectory pruner, the confirmation verifier (S1) and the LLM judge, by hand."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from veritask.model import CostLedger, ScriptedProvider, StructuredOutputError
from veritask.task import ToolStep, Trajectory, WitnessCall
from veritask.verify import (
    confirmation,
    is_confirmation,
    judge,
    prune,
    required_calls,
    unconfirmed_writes,
)

ANA = {"id": "m_ana", "name": "Ana", "active_loans": 0}
BEN = {"id": "m_ben", "name": "Ben", "active_loans": 1}
LOAN = {"id": 2, "member_id": "m_ana", "book_id": "b_dune", "status": "OPEN"}


def rows(*items: dict[str, Any]) -> dict[str, Any]:
    return {"rows": list(items), "total": len(items), "limit": 20, "offset": 0}


def call(tool: str, result: Any, ok: bool = True, **args: Any) -> WitnessCall:
    return WitnessCall(tool=tool, args=args, ok=ok, result=result)


def test_pruner_by_hand() -> None:
    gold = [
        call("query_members", rows(ANA, BEN)),  # 0 new rows: required
        call("query_members", rows(ANA), id="m_ana"),  # 1 Ana was returned by 0: pruned
        call("query_loans", rows(), member_id="m_ana"),  # 2 first empty read: required
        call("query_loans", rows(), member_id="m_ana"),  # 3 same empty read, no write: pruned
        call("insert_loans", LOAN, member_id="m_ana"),  # 4 a write: required
        call("query_loans", rows(LOAN), member_id="m_ana"),  # 5 the insert returned it: pruned
        call("query_loans", rows(), member_id="m_zed"),  # 6 another empty read: required
        call("insert_loans", None, ok=False),  # 7 a rejected write: still required
        call("query_members", rows({**ANA, "active_loans": 1})),  # 8 changed row: required
        call("query_books", None, ok=False),  # 9 a failed read: kept
    ]
    verdicts = prune(gold)
    assert [v.required for v in verdicts] == [
        True, False, True, False, True, False, True, True, True, True,
    ]  # fmt: skip
    assert required_calls(gold) == [0, 2, 4, 6, 7, 8, 9]
    assert verdicts[1].reason == "every row it returned was known"


def test_pruner_forgets_empty_reads_after_a_write() -> None:
    gold = [
        call("query_loans", rows(), member_id="m_ana"),
        call("insert_loans", LOAN),
        call("query_loans", rows(), member_id="m_ana"),
    ]
    assert required_calls(gold) == [0, 1, 2]


def test_confirmation_words() -> None:
    assert is_confirmation("Yes, please go ahead.")
    assert is_confirmation("OK, confirmed")
    assert not is_confirmation("Can you check my loans?")
    assert not is_confirmation("No, wait, not that one")


def traj(messages: list[dict[str, Any]], steps: list[ToolStep]) -> Trajectory:
    return Trajectory(
        task_id="t",
        domain="mock",
        agent="a",
        user="u",
        messages=messages,
        steps=steps,
        stop_reason="user_stop",
        initial_distance=1,
        final_distance=0,
    )


def tc(name: str) -> dict[str, Any]:
    return {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": name}}]}


def step(turn: int, tool: str) -> ToolStep:
    writes = not tool.startswith("query_")
    return ToolStep(
        turn=turn, call_id=f"c{turn}", tool=tool, args={}, raw_arguments="{}", ok=True,
        writes=writes,
    )  # fmt: skip


def test_confirmation_verifier_by_hand() -> None:
    messages = [
        {"role": "system", "content": "policy"},  # 0
        {"role": "user", "content": "I want to borrow Dune."},  # 1
        tc("query_books"),  # 2 a read needs no confirmation
        {"role": "tool", "content": "{}"},  # 3
        {"role": "assistant", "content": "Lend Dune, due step 10?"},  # 4
        {"role": "user", "content": "Yes, go ahead."},  # 5
        tc("insert_loans"),  # 6 confirmed by 5
        {"role": "tool", "content": "{}"},  # 7
        tc("update_loans"),  # 8 the yes of 5 was used by 6: unconfirmed
        {"role": "tool", "content": "{}"},  # 9
        {"role": "user", "content": "Hmm, what about Emma?"},  # 10
        tc("insert_loans"),  # 11 the preceding user turn is no confirmation
    ]
    steps = [step(2, "query_books"), step(6, "insert_loans"), step(8, "update_loans")]
    steps.append(step(11, "insert_loans"))
    t = traj(messages, steps)
    assert unconfirmed_writes(t) == [(8, "update_loans"), (11, "insert_loans")]
    result = confirmation(t)
    assert not result.passed and result.score == 0.0
    assert "update_loans (message 8)" in result.detail
    ok = traj(messages[:8], steps[:2])
    assert confirmation(ok).passed


def _judged(answers: list[str]) -> tuple[Any, ScriptedProvider, CostLedger]:
    messages = [
        {"role": "user", "content": "Lend me Dune please."},
        {"role": "assistant", "content": "Done! Your late fee will be 5 dollars."},
    ]
    provider = ScriptedProvider(answers)
    ledger = CostLedger()
    verdict = asyncio.run(judge(traj(messages, []), provider, policy="rules", ledger=ledger))
    return verdict, provider, ledger


def test_judge_findings_with_evidence() -> None:
    answer = {
        "findings": [
            {"code": "S1", "evidence": "Done!", "turn": 1},
            {"code": "H2", "evidence": "late fee will be 5 dollars", "turn": 1},
        ]
    }
    verdict, provider, ledger = _judged([f"```json\n{json.dumps(answer)}\n```"])
    assert verdict.codes == {"H2": 1, "S1": 1}
    result = verdict.component()
    assert not result.passed and "H2: 'late fee will be 5 dollars'" in result.detail
    prompt = provider.requests[0]["messages"][0]["content"]
    assert "H5" in prompt and "R2" in prompt and "S2" in prompt
    assert ledger.module("judge").successes == 1


def test_judge_repairs_then_rejects() -> None:
    bad_code = json.dumps({"findings": [{"code": "X9", "evidence": "Done!"}]})
    invented = json.dumps({"findings": [{"code": "H3", "evidence": "you owe 99 dollars"}]})
    clean = json.dumps({"findings": []})
    verdict, provider, _ = _judged([bad_code, invented, clean])
    assert verdict.findings == [] and verdict.component().passed
    repair = provider.requests[2]["messages"][-1]["content"]
    assert "not a quotation of the transcript" in repair
    with pytest.raises(StructuredOutputError):
        _judged(["not json", bad_code, invented])
