"""The faithful agent solves hand-built grounded tasks from what the user reveals, the policy and
tool results, never the witness; and it cannot solve what the text leaves open."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests._hand_built import hand_built, witness_of

from veritask.agent import PAYLOAD, FaithfulAgent, ScriptedUser, wire_messages
from veritask.env import CompiledDomain, Environment
from veritask.rollout import EpisodeTask, run_episode
from veritask.task import (
    Ask,
    Fallback,
    RowRef,
    SubGoal,
    TaskDescription,
    TaskPackage,
    Trajectory,
)

DUNE = RowRef(table="books", match={"title": "Dune"})
EMMA = RowRef(table="books", match={"title": "Emma"})
LEND_DUNE = Ask(
    transaction="lend_book", tool="insert_loans", refs={"book_id": DUNE}, values={"due_step": 4}
)


def _package(
    env: Environment, user: str, subs: list[SubGoal], calls: list[tuple[str, dict[str, Any]]]
) -> tuple[TaskPackage, bytes, bytes]:
    origin = env.snapshot().data
    witness = witness_of(env, calls)
    target = env.snapshot().data
    env.restore(origin)
    task = TaskDescription(who_you_are="me", total_goal="goal", sub_goals=subs)
    pkg = hand_built(task, witness, user)
    return pkg, origin, target


def _run(compiled: CompiledDomain, pkg: TaskPackage, origin: bytes, target: bytes) -> Trajectory:
    task = EpisodeTask(pkg, compiled, "policy", origin, target)
    return asyncio.run(run_episode(task, FaithfulAgent(compiled.spec), ScriptedUser(pkg)))


@pytest.fixture
def mock(compiled: dict[str, CompiledDomain]) -> CompiledDomain:
    return compiled["mock"]


def test_a_stated_lend_reaches_the_target(mock: CompiledDomain) -> None:
    env = Environment(mock)
    sub = SubGoal(title="Lend", request="Borrow Dune, due step 4.", ask=LEND_DUNE)
    lend = {"member_id": "m_ana", "book_id": "b_dune", "due_step": 4}
    pkg, origin, target = _package(env, "m_ana", [sub], [("insert_loans", lend)])
    traj = _run(mock, pkg, origin, target)
    assert traj.final_distance == 0
    tools = [s.tool for s in traj.steps]
    # it looks the user up, finds the book by its title, then lends it
    assert tools[0] == "query_members" and tools[-1] == "insert_loans"
    assert tools.index("query_books") < tools.index("insert_loans")


def test_a_fee_the_policy_fixes_is_computed_from_what_was_read(mock: CompiledDomain) -> None:
    env = Environment(mock)
    ask = Ask(
        transaction="return_book",
        tool="update_loans",
        target=RowRef(table="loans", match={"book_id": EMMA, "due_step": 5}),
        values={"status": "RETURNED", "return_step": 7},
    )
    sub = SubGoal(title="Return", request="Return Emma, due step 5, at step 7.", ask=ask)
    calls = [("update_loans", {"id": 1, "status": "RETURNED", "return_step": 7, "late_fee": 4})]
    pkg, origin, target = _package(env, "m_ben", [sub], calls)
    traj = _run(mock, pkg, origin, target)
    assert traj.final_distance == 0
    fees = [s.args.get("late_fee") for s in traj.steps if s.tool == "update_loans" and s.args]
    assert fees[-1] == 4  # (7 - 5) x daily fee 2, worked out from the rows the agent read


def test_a_refusal_is_explained_and_the_users_fallback_is_done(mock: CompiledDomain) -> None:
    env = Environment(mock)
    emma = Ask(
        transaction="lend_book", tool="insert_loans", refs={"book_id": EMMA}, values={"due_step": 4}
    )
    trigger = (
        "IF the agent explains that this is not possible (the book is already on loan), "
        "THEN accept Dune instead."
    )
    sub = SubGoal(
        title="Lend",
        request="Borrow Emma, due step 4.",
        reactive_triggers=[trigger],
        ask=emma,
        fallbacks=[Fallback(rule="BOOK_AVAILABLE", then=LEND_DUNE)],
    )
    lend = {"member_id": "m_ana", "book_id": "b_dune", "due_step": 4}
    pkg, origin, target = _package(env, "m_ana", [sub], [("insert_loans", lend)])
    traj = _run(mock, pkg, origin, target)
    assert traj.final_distance == 0
    named = [m for m in traj.messages if (m.get(PAYLOAD) or {}).get("refused") == "BOOK_AVAILABLE"]
    assert named, "the agent names the rule that refused the request"


def test_what_the_text_leaves_open_is_not_guessed(mock: CompiledDomain) -> None:
    """The witness lends for 9 steps but the user never says so: the agent cannot get there."""
    env = Environment(mock)
    vague = Ask(transaction="lend_book", tool="insert_loans", refs={"book_id": DUNE})
    sub = SubGoal(title="Lend", request="Borrow Dune.", ask=vague)
    lend = {"member_id": "m_ana", "book_id": "b_dune", "due_step": 9}
    pkg, origin, target = _package(env, "m_ana", [sub], [("insert_loans", lend)])
    assert _run(mock, pkg, origin, target).final_distance > 0


def test_the_structured_part_never_reaches_a_model() -> None:
    messages = [
        {"role": "user", "content": "hi", PAYLOAD: {"ask": {}}},
        {"role": "assistant", "content": "ok"},
    ]
    assert wire_messages(messages) == [{"role": "user", "content": "hi"}, messages[1]]


def _bobs_return(order_step: int) -> RowRef:
    """A return of Bob's named only through its order item and that item's order."""
    order = RowRef(table="orders", match={"customer_id": "c_bob", "order_step": order_step})
    several = {"quantity": 2} if order_step == 28 else {}  # that order has three items
    item = RowRef(table="order_items", match={"order_id": order, **several})
    return RowRef(table="returns", match={"order_item_id": item})


def _receive(order_step: int, **values: Any) -> Ask:
    return Ask(
        transaction="receive_return",
        tool="update_returns",
        target=_bobs_return(order_step),
        values={"status": "RECEIVED", "received_step": 41, **values},
    )


def test_a_record_named_through_its_parents_is_the_one_they_lead_to(
    compiled: dict[str, CompiledDomain],
) -> None:
    """Having seen one return, the agent does not take it for another return named only by
    an order item of another order: each parent in the chain is resolved."""
    retail = compiled["retail"]
    env = Environment(retail)
    first = SubGoal(title="a", request="a", ask=_receive(28, item_condition="DAMAGED"))
    second = SubGoal(title="b", request="b", ask=_receive(31, item_condition="DAMAGED"))
    calls = [("update_returns", {"id": 1, **_receive(28, item_condition="DAMAGED").values})]
    pkg, origin, target = _package(env, "c_bob", [first, second], calls)
    traj = _run(retail, pkg, origin, target)
    ids = [s.args.get("id") for s in traj.steps if s.tool == "update_returns" and s.args]
    assert ids[0] == 1 and ids[-1] == 2


def test_a_value_a_rule_only_asks_for_is_left_to_the_user(
    compiled: dict[str, CompiledDomain],
) -> None:
    """A rule that refuses a missing item condition does not say which one: the agent explains
    the refusal and the user's fallback names it, rather than the agent guessing."""
    retail = compiled["retail"]
    env = Environment(retail)
    sub = SubGoal(
        title="Receive",
        request="Receive my return.",
        ask=_receive(28),
        fallbacks=[
            Fallback(rule="RETURN_RECEIPT_DETAILS", then=_receive(28, item_condition="DAMAGED"))
        ],
    )
    calls = [("update_returns", {"id": 1, **_receive(28, item_condition="DAMAGED").values})]
    pkg, origin, target = _package(env, "c_bob", [sub], calls)
    assert _run(retail, pkg, origin, target).final_distance == 0


def test_a_required_choice_the_policy_fixes_is_worked_out(
    compiled: dict[str, CompiledDomain],
) -> None:
    """The user never says whether a freeze needs approval: a rule fixes it from the days."""
    gym = compiled["gym"]
    env = Environment(gym)
    ask = Ask(
        transaction="request_freeze",
        tool="insert_freezes",
        values={"reason": "Knee surgery recovery", "days": 45},
    )
    sub = SubGoal(title="Freeze", request="Freeze for 45 days.", ask=ask)
    freeze = {**ask.values, "member_id": "m_ana", "approval_status": "PENDING"}
    pkg, origin, target = _package(env, "m_ana", [sub], [("insert_freezes", freeze)])
    assert _run(gym, pkg, origin, target).final_distance == 0


def test_a_refusal_no_choice_can_lift_is_explained_at_once(
    compiled: dict[str, CompiledDomain],
) -> None:
    """A dropped enrollment is final whatever status or grade the agent picks: worked out on the
    rows read, no other choice passes the rule, so the agent explains instead of trying them."""
    registrar = compiled["registrar"]
    env = Environment(registrar)
    ask = Ask(
        transaction="drop_course",
        tool="update_enrollments",
        target=RowRef(table="enrollments", match={"student_id": "s_alice", "status": "DROPPED"}),
        values={"drop_step": 9},
    )
    sub = SubGoal(
        title="Drop",
        request="Drop it.",
        ask=ask,
        fallbacks=[Fallback(rule="ENR_EXIT_FINAL", then=None)],
    )
    pkg, origin, target = _package(env, "s_alice", [sub], [])
    traj = _run(registrar, pkg, origin, target)
    writes = [s for s in traj.steps if s.tool == "update_enrollments"]
    assert traj.final_distance == 0 and len(writes) <= 2
