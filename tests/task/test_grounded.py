"""The grounding certificate on hand-built packages of the mock domain: each way a task can
fail to determine its target is named, and a task that states what it needs is grounded."""

from __future__ import annotations

from typing import Any

import pytest
from tests._hand_built import hand_built, witness_of

from veritask.env import CompiledDomain, Environment
from veritask.task import (
    Ask,
    Fallback,
    RowRef,
    SubGoal,
    TaskDescription,
    TaskPackage,
    grounding,
)

DUNE = RowRef(table="books", match={"title": "Dune"})
EMMA = RowRef(table="books", match={"title": "Emma"})
BENS_EMMA_LOAN = RowRef(table="loans", match={"book_id": EMMA, "due_step": 5})


def _package(
    env: Environment,
    user: str,
    text: str,
    asks: list[Ask],
    calls: list[tuple[str, dict[str, Any]]],
    fallbacks: list[Fallback] | None = None,
) -> TaskPackage:
    origin = env.snapshot().data
    witness = witness_of(env, calls)
    env.restore(origin)
    subs = [
        SubGoal(title=a.transaction, request=text, ask=a, fallbacks=fallbacks or []) for a in asks
    ]
    task = TaskDescription(who_you_are="me", total_goal=text, sub_goals=subs)
    return hand_built(task, witness, user)


@pytest.fixture
def env(compiled: dict[str, CompiledDomain]) -> Environment:
    return Environment(compiled["mock"])


def _problems(env: Environment, pkg: TaskPackage) -> list[tuple[int, str | None]]:
    return [(u.call, u.arg) for u in grounding(pkg, env, env.snapshot().data)]


def return_emma(values: dict[str, Any]) -> Ask:
    """Ben's request to return his Emma loan with ``values``."""
    return Ask(transaction="return_book", tool="update_loans", target=BENS_EMMA_LOAN, values=values)


RETURN_EMMA_AT_7 = return_emma({"status": "RETURNED", "return_step": 7})
FIND_BENS_EMMA_LOAN = [("query_books", {"title": "Emma"}), ("query_loans", {"member_id": "m_ben"})]
"""The reads that show the agent Ben's Emma loan."""

LEND_DUNE = Ask(
    transaction="lend_book", tool="insert_loans", refs={"book_id": DUNE}, values={"due_step": 4}
)
LEND_ARGS = {"member_id": "m_ana", "book_id": "b_dune", "due_step": 4}


def test_a_stated_lend_after_a_read_is_grounded(env: Environment) -> None:
    pkg = _package(
        env,
        "m_ana",
        "Borrow Dune, due step 4.",
        [LEND_DUNE],
        [("query_books", {"title": "Dune"}), ("insert_loans", LEND_ARGS)],
    )
    assert _problems(env, pkg) == []


def test_a_named_record_the_agent_never_saw_is_not_grounded(env: Environment) -> None:
    pkg = _package(
        env, "m_ana", "Borrow Dune, due step 4.", [LEND_DUNE], [("insert_loans", LEND_ARGS)]
    )
    assert _problems(env, pkg) == [(0, "book_id")]


def test_a_write_nobody_asked_for_is_named(env: Environment) -> None:
    hobbit = {"member_id": "m_ana", "book_id": "b_hobbit", "due_step": 4}
    pkg = _package(
        env,
        "m_ana",
        "Borrow Dune, due step 4.",
        [LEND_DUNE],
        [("query_books", {}), ("insert_loans", hobbit), ("insert_loans", LEND_ARGS)],
    )
    problems = grounding(pkg, env, env.snapshot().data)
    assert [(u.call, u.arg) for u in problems] == [(1, "book_id")]
    assert "another record" in problems[0].reason


def test_a_second_write_after_the_request_is_answered_is_named(env: Environment) -> None:
    hobbit = {"member_id": "m_ana", "book_id": "b_hobbit", "due_step": 4}
    pkg = _package(
        env,
        "m_ana",
        "Borrow Dune, due step 4.",
        [LEND_DUNE],
        [("query_books", {}), ("insert_loans", LEND_ARGS), ("insert_loans", hobbit)],
    )
    problems = grounding(pkg, env, env.snapshot().data)
    assert [(u.call, u.arg) for u in problems] == [(2, None)]
    assert "already answered" in problems[0].reason


def test_a_value_the_user_never_states_is_named(env: Environment) -> None:
    vague = Ask(transaction="lend_book", tool="insert_loans", refs={"book_id": DUNE})
    pkg = _package(
        env,
        "m_ana",
        "Borrow Dune.",
        [vague],
        [("query_books", {"title": "Dune"}), ("insert_loans", LEND_ARGS)],
    )
    assert _problems(env, pkg) == [(1, "due_step")]


def test_a_stated_value_missing_from_the_text_is_named(env: Environment) -> None:
    pkg = _package(
        env,
        "m_ana",
        "Borrow a book, please.",
        [LEND_DUNE],
        [("query_books", {"title": "Dune"}), ("insert_loans", LEND_ARGS)],
    )
    assert set(_problems(env, pkg)) == {(-1, "due_step"), (-1, "title")}


def test_a_fee_the_policy_fixes_is_grounded_and_a_parent_named_record_resolves(
    env: Environment,
) -> None:
    ret = RETURN_EMMA_AT_7
    calls = [
        *FIND_BENS_EMMA_LOAN,
        ("update_loans", {"id": 1, "status": "RETURNED", "return_step": 7, "late_fee": 4}),
    ]
    text = "Return Emma (due step 5): status RETURNED, return step 7."
    assert _problems(env, _package(env, "m_ben", text, [ret], calls)) == []


def test_a_fee_the_user_could_not_know_is_not_fixed_when_the_rule_does_not_apply(
    env: Environment,
) -> None:
    """late_fee is agent-decided on a return, but this update is not a return (the LATE_FEE
    guard does not hold): nothing fixes the fee, so it must be stated."""
    upd = return_emma({})
    calls = [
        *FIND_BENS_EMMA_LOAN,
        ("update_loans", {"id": 1, "late_fee": 3}),
    ]
    pkg = _package(env, "m_ben", "Change the fee on Emma (due step 5).", [upd], calls)
    assert _problems(env, pkg) == [(2, "late_fee")]


def test_an_ambiguous_name_is_not_grounded(env: Environment) -> None:
    on_shelf = RowRef(table="books", match={"available": 1})
    ask = Ask(
        transaction="lend_book",
        tool="insert_loans",
        refs={"book_id": on_shelf},
        values={"due_step": 4},
    )
    pkg = _package(
        env,
        "m_ana",
        "Borrow a book that is available 1, due step 4.",
        [ask],
        [("query_books", {}), ("insert_loans", LEND_ARGS)],
    )
    problems = grounding(pkg, env, env.snapshot().data)
    assert [(u.call, u.arg) for u in problems] == [(1, "book_id")]
    assert "ambiguous" in problems[0].reason


def test_a_fallback_request_grounds_the_accepted_retry(env: Environment) -> None:
    emma_first = Ask(
        transaction="lend_book", tool="insert_loans", refs={"book_id": EMMA}, values={"due_step": 4}
    )
    fallback = Fallback(rule="BOOK_AVAILABLE", then=LEND_DUNE)
    calls = [
        ("query_books", {}),
        ("insert_loans", {"member_id": "m_ana", "book_id": "b_emma", "due_step": 4}),
        ("insert_loans", LEND_ARGS),
    ]
    text = "Borrow Emma, due step 4; if it is out, Dune instead."
    assert _problems(env, _package(env, "m_ana", text, [emma_first], calls, [fallback])) == []


def test_the_environment_is_left_replayed_and_nothing_raises_on_a_stale_ask(
    env: Environment,
) -> None:
    ghost = RowRef(table="books", match={"title": "No Such Book"})
    ask = Ask(
        transaction="lend_book",
        tool="insert_loans",
        refs={"book_id": ghost},
        values={"due_step": 4},
    )
    pkg = _package(
        env,
        "m_ana",
        "Borrow No Such Book, due step 4.",
        [ask],
        [("query_books", {}), ("insert_loans", LEND_ARGS)],
    )
    origin = env.snapshot().data
    problems = grounding(pkg, env, origin)
    assert [(u.call, u.arg) for u in problems] == [(1, "book_id")]
    assert "0 records" in problems[0].reason
    assert env.rows("loans")[-1]["book_id"] == "b_dune"


def test_a_give_up_the_agent_could_repair_is_not_grounded(env: Environment) -> None:
    """The user accepts a LATE_FEE refusal, but the fee is the agent's to work out: an agent
    that computes it is right, and a target that keeps the refusal is not."""
    ret = RETURN_EMMA_AT_7
    calls = [
        *FIND_BENS_EMMA_LOAN,
        ("update_loans", {"id": 1, "status": "RETURNED", "return_step": 7, "late_fee": 0}),
    ]
    text = "Return Emma (due step 5): status RETURNED, return step 7."
    pkg = _package(env, "m_ben", text, [ret], calls, [Fallback(rule="LATE_FEE")])
    problems = grounding(pkg, env, env.snapshot().data)
    assert [(u.call, u.arg) for u in problems] == [(2, "late_fee")]
    assert "gives up after LATE_FEE" in problems[0].reason and "= 4" in problems[0].reason


def test_a_give_up_nothing_unstated_can_repair_is_grounded(env: Environment) -> None:
    """Emma is out: no value the agent may choose lends it, so accepting the refusal is right."""
    lend_emma = Ask(
        transaction="lend_book", tool="insert_loans", refs={"book_id": EMMA}, values={"due_step": 4}
    )
    calls = [
        ("query_books", {"title": "Emma"}),
        ("insert_loans", {"member_id": "m_ana", "book_id": "b_emma", "due_step": 4}),
    ]
    text = "Borrow Emma, due step 4."
    pkg = _package(env, "m_ana", text, [lend_emma], calls, [Fallback(rule="BOOK_AVAILABLE")])
    assert pkg.witness[1].ok is False
    assert _problems(env, pkg) == []


def test_a_refusal_the_witness_works_around_later_is_not_a_give_up(env: Environment) -> None:
    """The first return is given up on; the second is refused, then made with the fee the agent
    works out. Only a refusal no later accepted call repeats is checked for finality."""
    first = return_emma({"status": "RETURNED"})
    second = RETURN_EMMA_AT_7
    calls = [
        *FIND_BENS_EMMA_LOAN,
        ("update_loans", {"id": 1, "status": "RETURNED"}),
        ("update_loans", {"id": 1, "status": "RETURNED", "return_step": 7}),
        ("update_loans", {"id": 1, "status": "RETURNED", "return_step": 7, "late_fee": 4}),
    ]
    text = "Return Emma (due step 5): status RETURNED; later status RETURNED, return step 7."
    give_up = [Fallback(rule="RETURN_STEP_REQUIRED")]
    pkg = _package(env, "m_ben", text, [first, second], calls, give_up)
    assert [c.ok for c in pkg.witness[2:]] == [False, False, True]
    assert _problems(env, pkg) == []
