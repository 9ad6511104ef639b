"""A value the user states, replaced in the witness without a reactive trigger that offers the
replacement, is not grounded: the user never agreed to it (the record to act on, the record a
request names, a stated number), also when the replacement follows a refusal."""

from __future__ import annotations

from typing import Any

import pytest
from tests._hand_built import hand_built, witness_of

from veritask.domains import load_domain
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


@pytest.fixture(scope="module")
def mock() -> CompiledDomain:
    return CompiledDomain.from_spec(load_domain("mock"))


@pytest.fixture
def env(mock: CompiledDomain) -> Environment:
    return Environment(mock)


def _package(
    env: Environment,
    ask: Ask,
    calls: list[tuple[str, dict[str, Any]]],
    fallbacks: list[Fallback] | None = None,
    extra: str = "",
) -> TaskPackage:
    origin = env.image()
    witness = witness_of(env, calls)
    env.restore(origin)
    text = "Borrow " + ", ".join(f"{k} {v}" for k, v in ask.values.items())
    text += "".join(f" {r.match['title']}" for r in ask.refs.values()) + "." + extra
    sub = SubGoal(title="lend", request=text, ask=ask, fallbacks=fallbacks or [])
    task = TaskDescription(who_you_are="Ana", total_goal=text, sub_goals=[sub])
    return hand_built(task, witness, "m_ana")


def _problems(env: Environment, pkg: TaskPackage) -> list[tuple[int, str | None, str]]:
    return [(u.call, u.arg, u.reason) for u in grounding(pkg, env, env.image())]


def lend(book: RowRef, due: int) -> Ask:
    return Ask(
        transaction="lend_book",
        tool="insert_loans",
        refs={"book_id": book},
        values={"due_step": due},
    )


def test_a_stated_number_replaced_without_a_trigger_is_not_grounded(env: Environment) -> None:
    calls = [
        ("query_books", {"title": "Dune"}),
        ("insert_loans", {"member_id": "m_ana", "book_id": "b_dune", "due_step": 6}),
    ]
    problems = _problems(env, _package(env, lend(DUNE, 4), calls))
    assert [(c, a) for c, a, _ in problems] == [(1, "due_step")]
    assert "differs from the stated value" in problems[0][2]


def test_the_named_record_replaced_after_a_refusal_without_a_trigger_is_not_grounded(
    env: Environment,
) -> None:
    """Emma is out; the witness lends Dune instead, but no trigger offers Dune."""
    calls = [
        ("query_books", {"title": "Emma"}),
        ("insert_loans", {"member_id": "m_ana", "book_id": "b_emma", "due_step": 4}),
        ("query_books", {"title": "Dune"}),
        ("insert_loans", {"member_id": "m_ana", "book_id": "b_dune", "due_step": 4}),
    ]
    pkg = _package(env, lend(EMMA, 4), calls)
    assert [c.ok for c in pkg.witness] == [True, False, True, True]
    problems = _problems(env, pkg)
    assert [(c, a) for c, a, _ in problems] == [(3, "book_id")]
    assert "another record" in problems[0][2]


def test_the_same_replacement_offered_by_a_trigger_is_grounded(env: Environment) -> None:
    calls = [
        ("query_books", {"title": "Emma"}),
        ("insert_loans", {"member_id": "m_ana", "book_id": "b_emma", "due_step": 4}),
        ("query_books", {"title": "Dune"}),
        ("insert_loans", {"member_id": "m_ana", "book_id": "b_dune", "due_step": 4}),
    ]
    offer = [Fallback(rule="BOOK_AVAILABLE", then=lend(DUNE, 4))]
    pkg = _package(env, lend(EMMA, 4), calls, offer, " If it is out, Dune will do.")
    assert _problems(env, pkg) == []


def test_the_user_replaced_by_another_member_is_not_grounded(env: Environment) -> None:
    """The loan is for the user; the witness makes it for Ben."""
    calls = [
        ("query_books", {"title": "Dune"}),
        ("insert_loans", {"member_id": "m_ben", "book_id": "b_dune", "due_step": 4}),
    ]
    problems = _problems(env, _package(env, lend(DUNE, 4), calls))
    assert [(c, a) for c, a, _ in problems] == [(1, "member_id")]
