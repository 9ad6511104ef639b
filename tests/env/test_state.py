"""Snapshots, restore and LOGIGEN's DIFF, including property tests."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from veritask.env import CompiledDomain, Environment, Snapshot, diff, diff_full

MEMBERS = ["m_ana", "m_ben", "m_lapsed", "m_nobody"]
BOOKS = ["b_dune", "b_emma", "b_hobbit"]

calls = st.one_of(
    st.builds(
        lambda m, b, d: ("insert_loans", {"member_id": m, "book_id": b, "due_step": d}),
        st.sampled_from(MEMBERS),
        st.sampled_from(BOOKS),
        st.integers(0, 10),
    ),
    st.builds(
        lambda i, r, f: (
            "update_loans",
            {"id": i, "status": "RETURNED", "return_step": r, "late_fee": f},
        ),
        st.integers(1, 4),
        st.integers(0, 12),
        st.integers(0, 8),
    ),
)
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _run(env: Environment, seq: list[tuple[str, dict[str, Any]]]) -> Snapshot:
    for tool, args in seq:
        env.call(tool, args)
    return env.snapshot()


@SETTINGS
@given(st.lists(calls, max_size=8))
def test_diff_with_itself_is_empty(compiled: dict[str, CompiledDomain], seq: list[Any]) -> None:
    snap = _run(Environment(compiled["mock"]), seq)
    assert diff(snap, snap).distance == 0


@SETTINGS
@given(st.lists(calls, max_size=8), st.lists(calls, max_size=8))
def test_diff_is_symmetric_and_matches_full_scan(
    compiled: dict[str, CompiledDomain], s1: list[Any], s2: list[Any]
) -> None:
    a = _run(Environment(compiled["mock"]), s1)
    b = _run(Environment(compiled["mock"]), s2)
    ab, ba = diff(a, b), diff(b, a)
    assert ab.distance == ba.distance
    for name, td in ab.tables.items():
        assert td.added == ba.tables[name].removed and td.removed == ba.tables[name].added
    assert ab == diff_full(a.data, b.data, a.layout)


@SETTINGS
@given(st.lists(calls, max_size=8), st.lists(calls, max_size=8))
def test_restore_round_trips(
    compiled: dict[str, CompiledDomain], s1: list[Any], s2: list[Any]
) -> None:
    env = Environment(compiled["mock"])
    snap = _run(env, s1)
    rows = {t: env.rows(t) for t in ("members", "books", "loans")}
    _run(env, s2)
    env.restore(snap)
    assert env.snapshot().data == snap.data
    assert {t: env.rows(t) for t in rows} == rows
    assert env.distance(snap) == 0
    # the restored session keeps working and tracking: the same calls lead to the same state
    assert diff(_run(env, s2), _run(Environment(compiled["mock"], snap), s2)).distance == 0


def test_diff_ignores_technical_keys(compiled: dict[str, CompiledDomain]) -> None:
    """Same loans created in a different order get different ids, yet the states are equal."""
    a, b = Environment(compiled["mock"]), Environment(compiled["mock"])
    first = {"member_id": "m_ana", "book_id": "b_dune", "due_step": 3}
    second = {"member_id": "m_ana", "book_id": "b_hobbit", "due_step": 3}
    a.call("insert_loans", first), a.call("insert_loans", second)
    b.call("insert_loans", second), b.call("insert_loans", first)
    assert a.rows("loans") != b.rows("loans")
    assert diff(a.snapshot(), b.snapshot()).distance == 0
    assert diff_full(a.snapshot().data, b.snapshot().data, a.domain.layout).distance == 0


def test_diff_sees_one_column_change(compiled: dict[str, CompiledDomain]) -> None:
    env = Environment(compiled["mock"])
    origin = env.snapshot()
    env.call("update_loans", {"id": 1, "status": "RETURNED", "return_step": 5, "late_fee": 0})
    d = diff(origin, env.snapshot())
    loans = d.tables["loans"]
    assert len(loans.added) == len(loans.removed) == 1
    changed = {k for k in loans.added[0] if loans.added[0][k] != loans.removed[0][k]}
    assert changed == {"status", "return_step", "late_fee"}
    assert "id" not in loans.added[0]
    assert d.tables["books"].added == [
        {"id": "b_emma", "title": "Emma", "daily_fee": 2, "available": 1}
    ]
    assert d.distance == 6


def test_snapshot_from_bytes_knows_its_root(compiled: dict[str, CompiledDomain]) -> None:
    """A state written to disk and read back still diffs against its origin by tracked rows."""
    env = Environment(compiled["mock"])
    origin = env.snapshot()
    env.call("insert_loans", {"member_id": "m_ana", "book_id": "b_dune", "due_step": 3})
    target = Snapshot(env.snapshot().data, env.domain.layout)
    assert target.tracked.root == origin.tracked.root != ""
    assert target.tracked.count() == 3
    assert diff(origin, target) == diff_full(origin.data, target.data, origin.layout)
    assert diff(origin, target).distance == 5  # loan added; book and member changed


def test_rebase_makes_a_new_root(compiled: dict[str, CompiledDomain]) -> None:
    env = Environment(compiled["mock"])
    seed_root = env.snapshot().tracked.root
    env.call("insert_loans", {"member_id": "m_ana", "book_id": "b_dune", "due_step": 3})
    root = env.rebase()
    snap = env.snapshot()
    assert root != seed_root and snap.tracked.root == root and snap.tracked.count() == 0
    again = Environment(compiled["mock"])
    again.call("insert_loans", {"member_id": "m_ana", "book_id": "b_dune", "due_step": 3})
    assert again.rebase() == root, "rebase ids are deterministic"


def test_rejected_write_is_byte_identical(mock_env: Environment) -> None:
    before = mock_env.snapshot().data
    for _ in range(3):
        result = mock_env.call(
            "insert_loans", {"member_id": "m_lapsed", "book_id": "b_dune", "due_step": 3}
        )
        assert result.error is not None and result.error.violated_rule == "MEMBER_ACTIVE"
    assert mock_env.snapshot().data == before
