"""Bad input gets a structured error and changes nothing."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from veritask.domains import builtin_domains
from veritask.env import CompiledDomain, Environment

INJECTIONS = ["'; DROP TABLE loans; --", 'x" OR 1=1 --', "Robert'); DELETE FROM members; --"]

BAD_CALLS: list[tuple[str, Any, str]] = [
    ("delete_loans", {"id": 1}, "UNKNOWN_TOOL"),
    ("drop_table", {}, "UNKNOWN_TOOL"),
    ("insert_members", {"id": "m_new", "name": "X"}, "UNKNOWN_TOOL"),
    ("update_books", {"id": "b_dune", "available": 1}, "UNKNOWN_TOOL"),
    ("insert_loans", {"member_id": "m_ana", "book_id": "b_dune"}, "MISSING_ARGUMENT"),
    (
        "insert_loans",
        {"member_id": "m_ana", "book_id": "b_dune", "due_step": None},
        "MISSING_ARGUMENT",
    ),
    (
        "insert_loans",
        {"member_id": "m_ana", "book_id": "b_dune", "due_step": 3, "color": "red"},
        "UNKNOWN_ARGUMENT",
    ),
    ("insert_loans", {"member_id": "m_ana", "book_id": "b_dune", "due_step": "3"}, "INVALID_TYPE"),
    ("insert_loans", {"member_id": "m_ana", "book_id": "b_dune", "due_step": True}, "INVALID_TYPE"),
    ("insert_loans", {"member_id": 7, "book_id": "b_dune", "due_step": 3}, "INVALID_TYPE"),
    ("insert_loans", {"member_id": "m_ana", "book_id": "b_dune", "due_step": 3.5}, "INVALID_TYPE"),
    (
        "insert_loans",
        {"member_id": "m_ana", "book_id": "b_dune", "due_step": 3, "status": "RETURNED"},
        "NOT_WRITABLE",
    ),
    (
        "insert_loans",
        {"member_id": "m_ana", "book_id": "b_dune", "due_step": 3, "id": 99},
        "NOT_WRITABLE",
    ),
    ("update_loans", {"id": 1, "member_id": "m_ana"}, "NOT_WRITABLE"),
    ("update_loans", {"id": 1, "status": "LOST"}, "INVALID_VALUE"),
    ("update_loans", {"id": 999, "status": "RETURNED"}, "NOT_FOUND"),
    ("update_loans", {"id": 1}, "NO_CHANGES"),
    ("update_loans", {"status": "RETURNED"}, "MISSING_ARGUMENT"),
    ("query_loans", {"limit": 0}, "INVALID_VALUE"),
    ("query_loans", {"limit": 10_000}, "INVALID_VALUE"),
    ("query_loans", {"order_by": "id; DROP TABLE loans"}, "INVALID_VALUE"),
    ("query_loans", {"rowid": 1}, "UNKNOWN_ARGUMENT"),
    ("query_loans", "{not json", "INVALID_ARGUMENTS"),
    ("query_loans", [1, 2], "INVALID_ARGUMENTS"),
] + [
    ("insert_loans", {"member_id": s, "book_id": "b_dune", "due_step": 3}, "PREREQ_FAIL")
    for s in INJECTIONS
]


@pytest.mark.parametrize(("tool", "args", "code"), BAD_CALLS)
def test_bad_call_is_structured_and_changes_nothing(
    mock_env: Environment, tool: str, args: Any, code: str
) -> None:
    before = mock_env.snapshot().data
    result = mock_env.call(tool, args)
    assert not result.ok
    assert result.error is not None
    assert result.error.code == code, result.error
    assert result.error.message
    assert not result.state_changed
    assert mock_env.snapshot().data == before
    payload = result.to_json()
    assert set(payload["error"]) == {"code", "message", "violated_rule", "hint"}


@pytest.mark.parametrize("text", INJECTIONS)
def test_sql_in_strings_is_data(mock_env: Environment, text: str) -> None:
    """Injection attempts in filters find nothing and leave every table intact."""
    result = mock_env.call("query_members", {"name": text})
    assert result.ok and result.result["rows"] == []
    assert len(mock_env.rows("loans")) == 1 and len(mock_env.rows("members")) == 3


@pytest.mark.parametrize("domain", builtin_domains())
def test_read_only_tables_have_no_write_tools(
    compiled: dict[str, CompiledDomain], domain: str
) -> None:
    env = Environment(compiled[domain])
    read_only = {t.name for t in env.spec.tables if not t.writable}
    for tool in env.tools.values():
        assert not tool.name.startswith("delete_")
        if tool.writes:
            assert tool.table not in read_only
    for table in read_only:
        for kind in ("insert", "update"):
            result = env.call(f"{kind}_{table}", {})
            assert result.error is not None and result.error.code == "UNKNOWN_TOOL"


@pytest.mark.parametrize(
    ("sql", "mode"),
    [
        ("UPDATE members SET active = 0", "write"),
        ("INSERT INTO books (id, title, daily_fee) VALUES ('b_x', 'X', 1)", "write"),
        ("DELETE FROM loans", "write"),
        ("DELETE FROM members", "admin-free"),
        ("UPDATE loans SET due_step = 1", "read"),
        ("INSERT INTO loans (member_id, book_id, due_step) VALUES ('m_ana', 'b_dune', 1)", "read"),
        ("DROP TABLE loans", "write"),
        ("CREATE TABLE evil (x)", "write"),
        ("DROP TRIGGER vt_rules_loans_insert", "write"),
        ("PRAGMA foreign_keys = OFF", "write"),
        ("ATTACH DATABASE ':memory:' AS other", "write"),
    ],
)
def test_authorizer_enforces_access(mock_env: Environment, sql: str, mode: str) -> None:
    """The engine, not the tool layer, refuses: reads never write, nothing deletes, read-only
    tables change only through triggers, and no DDL or pragmas run in a session."""
    before = mock_env.snapshot().data
    with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
        mock_env._execute(sql, mode="read" if mode == "read" else "write")
    assert mock_env.snapshot().data == before


def test_effects_may_write_read_only_tables(mock_env: Environment) -> None:
    """Triggers (the system) update read-only tables even though tools cannot."""
    result = mock_env.call(
        "insert_loans", {"member_id": "m_ana", "book_id": "b_dune", "due_step": 3}
    )
    assert result.ok and result.state_changed
    assert {r["id"]: r["available"] for r in mock_env.rows("books")}["b_dune"] == 0


def test_arguments_as_json_string(mock_env: Environment) -> None:
    result = mock_env.call(
        "query_books", '{"available": 1, "order_by": "title", "descending": true}'
    )
    assert result.ok
    assert [r["title"] for r in result.result["rows"]] == ["The Hobbit", "Dune"]


def test_query_ranges_and_pagination(mock_env: Environment) -> None:
    page1 = mock_env.call("query_books", {"daily_fee_min": 1, "daily_fee_max": 1, "limit": 1})
    page2 = mock_env.call(
        "query_books", {"daily_fee_min": 1, "daily_fee_max": 1, "limit": 1, "offset": 1}
    )
    assert page1.result["total"] == page2.result["total"] == 2
    assert page1.result["rows"][0]["id"] != page2.result["rows"][0]["id"]
    assert not page1.state_changed


def test_rule_error_carries_detail(mock_env: Environment) -> None:
    result = mock_env.call(
        "update_loans", {"id": 1, "status": "RETURNED", "return_step": 8, "late_fee": 1}
    )
    assert result.error is not None
    assert result.error.code == "CALCULATION_ERROR" and result.error.violated_rule == "LATE_FEE"
    assert "expected late_fee 6" in result.error.message


def test_time_limit_interrupts_a_runaway_rule_and_keeps_the_state() -> None:
    from veritask.domains import load_domain
    from veritask.env import CompiledDomain, Environment

    spec = load_domain("mock")
    tool = "insert_loans"
    rule = spec.rules[0].model_copy(
        update={
            "table": "loans",
            "on": ["insert"],
            # A cross product of 3**24 rows: no recursion (spec SQL may not recurse), still runaway.
            "condition": "(SELECT count(*) FROM "
            + ", ".join(f"books b{i}" for i in range(24))
            + ") > 0",
            "examples": [],
        }
    )
    runaway = spec.model_copy(update={"rules": [rule]})
    env = Environment(CompiledDomain.from_spec(runaway))
    before = env.image()
    args = next(c.args for r in spec.rules for ex in r.examples for c in ex.calls if c.tool == tool)
    with env.time_limit(0.2):
        result = env.call(tool, args)
    assert not result.ok and result.error is not None
    assert "interrupted" in result.error.message
    assert env.image() == before
