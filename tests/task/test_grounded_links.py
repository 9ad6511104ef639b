"""Grounding on the HR leave fixture (tests/fixtures/unseen_domains/hr_leave.yaml): a foreign
key the policy fixes (a request's approver is the employee's manager) is grounded by probing
every other key and NULL; a refusal that NULL would lift is not final; and a write that leaves
out a value the user states is named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests._hand_built import hand_built, witness_of

from veritask.env import CompiledDomain, Environment
from veritask.policy import load_spec
from veritask.task import Ask, Fallback, RowRef, SubGoal, TaskDescription, TaskPackage, grounding

SPEC = Path(__file__).parent.parent / "fixtures" / "unseen_domains" / "hr_leave.yaml"
ANNUAL = RowRef(table="leave_types", match={"name": "Annual leave"})
FILE = {"note": "Family wedding", "start_step": 10, "end_step": 12}
ALI_FILES = {
    "employee_id": "e_ali",
    "leave_type": "ANNUAL",
    "approver_id": "e_lead",
    **FILE,
    "days": 3,
    "hr_review": 0,
}
FILE_ASK = Ask(
    transaction="file_leave", tool="insert_leave_requests", refs={"leave_type": ANNUAL}, values=FILE
)
FILE_TEXT = "File annual leave 'Annual leave', note Family wedding, start step 10, end step 12."


@pytest.fixture(scope="module")
def domain() -> CompiledDomain:
    return CompiledDomain.from_spec(load_spec(SPEC))


@pytest.fixture
def env(domain: CompiledDomain) -> Environment:
    return Environment(domain)


def _package(
    env: Environment,
    user: str,
    text: str,
    ask: Ask,
    calls: list[tuple[str, dict[str, Any]]],
    fallbacks: list[Fallback] | None = None,
) -> TaskPackage:
    origin = env.snapshot().data
    witness = witness_of(env, calls)
    env.restore(origin)
    sub = SubGoal(title=ask.transaction, request=text, ask=ask, fallbacks=fallbacks or [])
    task = TaskDescription(who_you_are="me", total_goal=text, sub_goals=[sub])
    return hand_built(task, witness, user, domain="hr_leave")


def _problems(env: Environment, pkg: TaskPackage) -> list[tuple[int, str | None]]:
    return [(u.call, u.arg) for u in grounding(pkg, env, env.snapshot().data)]


def test_an_approver_the_policy_fixes_is_grounded(env: Environment) -> None:
    """Ali never names his approver: every other employee, and none, is refused by
    APPROVER_IS_MANAGER, so his manager is the only value an agent can write."""
    ask, text = FILE_ASK, FILE_TEXT
    calls = [("query_leave_types", {"name": "Annual leave"}), ("insert_leave_requests", ALI_FILES)]
    pkg = _package(env, "e_ali", text, ask, calls)
    assert pkg.witness[1].ok
    assert _problems(env, pkg) == []


def test_a_value_no_rule_fixes_is_still_named(env: Environment) -> None:
    """The probes decide by execution: the approver is fixed, but DRAFT (neither stated nor
    the default) is one of two states a new request may take, so it is named."""
    ask, text = FILE_ASK, FILE_TEXT
    draft = {**ALI_FILES, "state": "DRAFT"}  # DRAFT is neither stated nor the default
    calls = [("query_leave_types", {"name": "Annual leave"}), ("insert_leave_requests", draft)]
    pkg = _package(env, "e_ali", text, ask, calls)
    assert _problems(env, pkg) == [(1, "state")]


def test_a_give_up_no_approver_would_lift_is_not_grounded(env: Environment) -> None:
    """The managing director has no manager: the write passes with no approver, so a user who
    gives up after APPROVER_IS_MANAGER keeps a target an agent that leaves it empty misses."""
    ask = Ask(
        transaction="file_leave",
        tool="insert_leave_requests",
        refs={"leave_type": ANNUAL},
        values={"note": "Sailing", "start_step": 10, "end_step": 12},
    )
    args = {**ALI_FILES, "employee_id": "e_md", "note": "Sailing"}
    text = "File annual leave 'Annual leave', note Sailing, start step 10, end step 12."
    calls = [("query_leave_types", {"name": "Annual leave"}), ("insert_leave_requests", args)]
    pkg = _package(env, "e_md", text, ask, calls, [Fallback(rule="APPROVER_IS_MANAGER")])
    assert pkg.witness[1].ok is False
    problems = grounding(pkg, env, env.snapshot().data)
    assert [(u.call, u.arg) for u in problems] == [(1, "approver_id")]
    assert "approver_id = None" in problems[0].reason


def _draft_moved_to(env: Environment, end_step: int) -> TaskPackage:
    """Ali asks to move his draft 'Dentist and rest' to steps 7-``end_step``; the witness
    writes only the new start step."""
    draft = RowRef(table="leave_requests", match={"note": "Dentist and rest"})
    ask = Ask(
        transaction="edit_draft",
        tool="update_leave_requests",
        target=draft,
        values={"start_step": 7, "end_step": end_step},
    )
    text = f"Move my draft 'Dentist and rest' to start step 7, end step {end_step}."
    calls: list[tuple[str, dict[str, Any]]] = [
        ("query_leave_requests", {"note": "Dentist and rest"}),
        ("update_leave_requests", {"id": 2, "start_step": 7, "days": 2}),
    ]
    return _package(env, "e_ali", text, ask, calls)


def test_a_write_that_leaves_out_a_stated_value_is_named(env: Environment) -> None:
    """Ali asks to move his draft to steps 7-9; the write moves only its start. An agent doing
    what he asks writes end step 9 too, so the witness's target is not his."""
    pkg = _draft_moved_to(env, 9)
    assert pkg.witness[1].ok
    problems = grounding(pkg, env, env.snapshot().data)
    assert [(u.call, u.arg) for u in problems] == [(1, "end_step")]
    assert "leaves it out" in problems[0].reason


def test_a_stated_value_the_record_already_has_may_be_left_out(env: Environment) -> None:
    pkg = _draft_moved_to(env, 8)
    assert _problems(env, pkg) == []


def test_a_give_up_only_all_formulas_together_lift_is_not_grounded(env: Environment) -> None:
    """The director miscounts the days; no single formula (days, approver, HR route) makes the
    write pass, but an agent works them all out, so giving up after DAYS_COUNT is wrong."""
    ask = Ask(
        transaction="file_leave",
        tool="insert_leave_requests",
        refs={"leave_type": ANNUAL},
        values={"note": "Sailing", "start_step": 10, "end_step": 12},
    )
    args = {**ALI_FILES, "employee_id": "e_md", "note": "Sailing", "days": 12, "hr_review": 1}
    text = "File annual leave 'Annual leave', note Sailing, start step 10, end step 12."
    calls = [("query_leave_types", {"name": "Annual leave"}), ("insert_leave_requests", args)]
    pkg = _package(env, "e_md", text, ask, calls, [Fallback(rule="DAYS_COUNT")])
    assert pkg.witness[1].error is not None
    assert pkg.witness[1].error["violated_rule"] == "DAYS_COUNT"
    problems = grounding(pkg, env, env.snapshot().data)
    assert [(u.call, u.arg) for u in problems] == [(1, "approver_id")]
    assert "approver_id = None, days = 3, hr_review = 0" in problems[0].reason
