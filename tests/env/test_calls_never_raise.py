"""``Environment.call`` never raises, never leaves its savepoint open and never loses a write.

A call that raised (an integer beyond 64 bits, a lone surrogate, deeply nested JSON) used to leave
``SAVEPOINT vt_call`` open; the next accepted write then nested inside it, and a later rejected
call's rollback undid that accepted write while reporting ``state_changed: false``.
"""

from __future__ import annotations

import json
import math
import sqlite3
from decimal import Decimal
from typing import Any

import pytest

from veritask.domains import load_domain
from veritask.env import (
    DEFAULT_CALL_TIME_LIMIT,
    CompiledDomain,
    Environment,
    ToolResult,
    _environment,
)

GOOD = {"member_id": "m_ana", "book_id": "b_dune", "due_step": 10}
LAPSED = {"member_id": "m_lapsed", "book_id": "b_dune", "due_step": 10}
DEEP_JSON = '{"due_step": ' + "[" * 100_000 + "]" * 100_000 + "}"


def loan(**change: Any) -> dict[str, Any]:
    """The good loan with some arguments replaced."""
    return {**GOOD, **change}


HOSTILE: list[tuple[Any, Any, str]] = [
    ("insert_loans", loan(due_step=2**70), "INTEGER_OUT_OF_RANGE"),
    ("insert_loans", loan(due_step=-(2**70)), "INTEGER_OUT_OF_RANGE"),
    ("insert_loans", loan(due_step=2**63), "INTEGER_OUT_OF_RANGE"),
    ("insert_loans", loan(due_step=1e300), "INTEGER_OUT_OF_RANGE"),
    ("insert_loans", loan(due_step=math.nan), "NON_FINITE_NUMBER"),
    ("insert_loans", loan(due_step=-math.inf), "NON_FINITE_NUMBER"),
    ("query_books", {"daily_fee_min": math.inf}, "NON_FINITE_NUMBER"),
    ("query_books", {"daily_fee_max": 2**70}, "INTEGER_OUT_OF_RANGE"),
    ("insert_loans", loan(member_id="\ud800"), "INVALID_STRING"),
    ("query_loans", {"member_id": "m_\udfffana"}, "INVALID_STRING"),
    ("insert_loans", loan(member_id="x" * 70_000), "ARGUMENTS_TOO_LARGE"),
    ("query_loans", DEEP_JSON, "ARGUMENTS_TOO_DEEP"),
    ("query_loans", '{"member_id": "' + "x" * 1_000_001 + '"}', "ARGUMENTS_TOO_LARGE"),
    ("insert_loans", json.dumps(loan()).replace("10", "1e400"), "NON_FINITE_NUMBER"),
    ("insert_loans", json.dumps(loan()).replace("10", "9" * 30), "INTEGER_OUT_OF_RANGE"),
    ("insert_loans", json.dumps(loan()).replace("10", "9" * 5000), "INVALID_ARGUMENTS"),
    ("insert_loans", json.dumps(loan()).replace('"m_ana"', '"\\ud800"'), "INVALID_STRING"),
    ("insert_loans", loan(due_step=Decimal(3)), "INVALID_TYPE"),
    ("insert_loans", loan(due_step=[[[[3]]]]), "INVALID_TYPE"),
    ("insert_loans", loan(member_id=b"m_ana"), "INVALID_TYPE"),
    ("insert_loans", loan(member_id=object()), "INVALID_TYPE"),
    ("insert_loans", loan(due_step=complex(3, 0)), "INVALID_TYPE"),
    ("query_loans", {1: 2}, "UNKNOWN_ARGUMENT"),
    ("query_loans", {("a",): 2}, "UNKNOWN_ARGUMENT"),
    ("query_loans", {"\ud800": 2}, "UNKNOWN_ARGUMENT"),
    ("query_loans", 42, "INVALID_ARGUMENTS"),
    ("query_loans", "null", "INVALID_ARGUMENTS"),
    (None, {}, "UNKNOWN_TOOL"),
    (["insert_loans"], GOOD, "UNKNOWN_TOOL"),
    ({"a": 1}, GOOD, "UNKNOWN_TOOL"),
    ("\ud800", GOOD, "UNKNOWN_TOOL"),
    ("insert_loans\x00", GOOD, "UNKNOWN_TOOL"),
]


def assert_clean_rejection(env: Environment, before: bytes, result: ToolResult) -> None:
    """A structured, JSON-encodable error; no state change and no transaction left open."""
    assert isinstance(result, ToolResult) and not result.ok and not result.state_changed
    assert result.error is not None and result.error.message
    json.dumps(result.to_json(), ensure_ascii=False).encode("utf-8")
    assert not env._conn.in_transaction
    assert env.image() == before


@pytest.mark.parametrize(("tool", "args", "code"), HOSTILE)
def test_hostile_input_is_a_structured_error(
    mock_env: Environment, tool: Any, args: Any, code: str
) -> None:
    before = mock_env.image()
    result = mock_env.call(tool, args)
    assert_clean_rejection(mock_env, before, result)
    assert result.error is not None and result.error.code == code, result.error


@pytest.mark.parametrize(("tool", "args", "code"), HOSTILE)
def test_no_hostile_call_can_undo_an_accepted_write(
    mock_env: Environment, tool: Any, args: Any, code: str
) -> None:
    """The reported scenario: hostile call, accepted write, rejected call; the write stays."""
    assert not mock_env.call(tool, args).ok
    accepted = mock_env.call("insert_loans", GOOD)
    assert accepted.ok and accepted.state_changed
    after_write = mock_env.image()
    rejected = mock_env.call("insert_loans", LAPSED)
    assert rejected.error is not None and rejected.error.violated_rule is not None
    assert_clean_rejection(mock_env, after_write, rejected)
    assert accepted.result in mock_env.rows("loans")


def test_an_unforeseen_exception_is_rolled_back_and_reported(
    mock_env: Environment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last resort: an exception inside the savepoint becomes INTERNAL_ERROR after rollback."""
    before = mock_env.image()
    cursor = mock_env._cur

    class Broken:
        """The write path's cursor, failing right after the write statement ran."""

        lastrowid = None

        def execute(self, sql: str, params: Any = ()) -> Any:
            out = cursor.execute(sql, params)
            if sql.startswith("INSERT"):
                raise ZeroDivisionError("simulated bug after the write ran")
            return out

    monkeypatch.setattr(mock_env, "_cur", Broken())
    result = mock_env.call("insert_loans", GOOD)
    assert_clean_rejection(mock_env, before, result)
    assert result.error is not None and result.error.code == "INTERNAL_ERROR"
    assert "ZeroDivisionError" in result.error.message
    monkeypatch.undo()
    assert mock_env.call("insert_loans", GOOD).ok


def test_a_transaction_left_open_from_outside_is_refused_not_nested(
    mock_env: Environment,
) -> None:
    """If the invariant is broken, writes are refused rather than nested into someone's txn."""
    mock_env._execute("BEGIN", mode="write")
    result = mock_env.call("insert_loans", GOOD)
    assert result.error is not None and result.error.code == "INTERNAL_ERROR"
    mock_env._execute("ROLLBACK", mode="write")
    assert mock_env.call("insert_loans", GOOD).ok


def runaway_env(**kwargs: Any) -> tuple[Environment, dict[str, Any]]:
    """A mock environment whose loan rule runs a never-ending recursive query."""
    spec = load_domain("mock")
    rule = spec.rules[0].model_copy(
        update={
            "table": "loans",
            "on": ["insert"],
            # a cross product of 3**24 rows: spec SQL may not recurse, but this still runs away
            "condition": "(SELECT count(*) FROM "
            + ", ".join(f"books b{i}" for i in range(24))
            + ") > 0",
            "examples": [],
        }
    )
    env = Environment(CompiledDomain.from_spec(spec.model_copy(update={"rules": [rule]})), **kwargs)
    return env, GOOD


def test_default_time_limit_applies_to_every_call() -> None:
    env, args = runaway_env()
    assert env.call_time_limit == DEFAULT_CALL_TIME_LIMIT
    env.call_time_limit = 0.2  # the default, shortened so the test is quick
    before = env.image()
    result = env.call("insert_loans", args)
    assert result.error is not None and result.error.code == "TIME_LIMIT_EXCEEDED"
    assert "interrupted" in result.error.message
    assert_clean_rejection(env, before, result)
    assert env.call("query_loans", {}).ok  # the deadline does not outlive the call


def test_time_limit_is_set_per_environment() -> None:
    env, args = runaway_env(call_time_limit=0.1)
    result = env.call("insert_loans", args)
    assert result.error is not None and result.error.code == "TIME_LIMIT_EXCEEDED"
    with env.time_limit(0.1):  # a block deadline applies even when calls have no limit
        env.call_time_limit = None
        result = env.call("insert_loans", args)
    assert result.error is not None and result.error.code == "TIME_LIMIT_EXCEEDED"


def test_an_expired_deadline_does_not_interrupt_later_work(mock_env: Environment) -> None:
    mock_env.call_time_limit = 1e-9
    mock_env.call("query_loans", {})
    assert mock_env.rows("loans") and mock_env.snapshot().tracked.root
    mock_env.call_time_limit = DEFAULT_CALL_TIME_LIMIT
    assert mock_env.call("insert_loans", GOOD).ok


class _FailingRelease:
    """A cursor whose next ``RELEASE vt_call`` fails (as a deferred constraint would)."""

    def __init__(self, cursor: Any) -> None:
        self.cursor = cursor

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cursor, name)

    def execute(self, sql: str, *params: Any) -> Any:
        if sql == "RELEASE vt_call":
            raise sqlite3.IntegrityError("FOREIGN KEY constraint failed")
        return self.cursor.execute(sql, *params)


def test_a_failing_release_is_rolled_back(mock_env: Environment) -> None:
    before = mock_env.image()
    real = mock_env._cur
    mock_env._cur = _FailingRelease(real)  # type: ignore[assignment]
    result = mock_env.call("insert_loans", GOOD)
    mock_env._cur = real
    assert result.error is not None and result.error.code == "FOREIGN_KEY_VIOLATION"
    assert_clean_rejection(mock_env, before, result)
    assert mock_env.call("insert_loans", GOOD).ok


def test_an_ordinary_call_never_reads_the_clock(
    mock_env: Environment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The call's deadline is armed by the progress handler's first firing, which a call of a
    few hundred virtual-machine steps never reaches; a runaway one still is (tests above)."""
    reads: list[float] = []
    monkeypatch.setattr(_environment, "_monotonic", lambda: reads.append(0.0) or 0.0)
    assert mock_env.call("insert_loans", GOOD).ok
    assert mock_env.call("query_loans", {}).ok
    assert reads == []
