"""The call fast path (generated checks, cached statements) answers exactly as the general path.

``Environment.call`` takes a fast path when the arguments are a ``dict`` whose values have the
exact Python types their parameters expect; any other mapping goes through the general
validation. Twin environments receive the same calls, one as dicts and one as read-only
mappings: every result and every state after it must be the same.
"""

from __future__ import annotations

import itertools
from functools import cache
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment, _environment
from veritask.env._args import MAX_STRING_CHARS, SQLITE_INT_MAX, fast_checks, validate_arguments
from veritask.env._fastpath import compile_checks, compile_row

DOMAINS = ["mock", "travel", "retail", "clinic"]

ODD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    3.0,
    2.5,
    SQLITE_INT_MAX,
    SQLITE_INT_MAX + 1,
    "",
    "x",
    "caf\u00e9",
    "\ud800",
    "y" * (MAX_STRING_CHARS + 1),
    "PENDING",
    "CONFIRMED",
    [1],
]


BOOKING: dict[str, Any] = {
    "travel_request_id": 1,
    "flight_code": "AA012",
    "cost": 300,
    "class": "ECONOMY",
    "departure_step": 12,
    "booking_step": 10,
    "approval_status": "NOT_REQUIRED",
}
"""A well-typed travel flight booking (request 1)."""


@cache
def _compiled(name: str) -> CompiledDomain:
    return CompiledDomain.from_spec(load_domain(name))


@cache
def _examples(name: str) -> tuple[tuple[str, dict[str, Any]], ...]:
    spec = load_domain(name)
    return tuple(
        (c.tool, dict(c.args))
        for owner in [*spec.rules, *spec.effects]
        for ex in owner.examples
        for c in ex.calls
    )


@st.composite
def _call(draw: st.DrawFn, name: str) -> tuple[str, dict[Any, Any]]:
    tool, args = draw(st.sampled_from(_examples(name)))
    args = dict(args)
    params = list(_compiled(name).tools[tool].params)
    for _ in range(draw(st.integers(0, 2))):
        what = draw(st.sampled_from(["value", "drop", "extra", "reorder"]))
        if what == "value":
            args[draw(st.sampled_from(params))] = draw(st.sampled_from(ODD_VALUES))
        elif what == "drop" and args:
            args.pop(draw(st.sampled_from(list(args))))
        elif what == "extra":
            args[draw(st.sampled_from(["rowid", "nope", 7]))] = 1
        else:
            keys = draw(st.permutations(list(args)))
            args = {k: args[k] for k in keys}
    return tool, args


@pytest.mark.parametrize("name", DOMAINS)
@settings(
    max_examples=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_the_fast_path_answers_as_the_general_path(name: str, data: st.DataObject) -> None:
    fast, general = Environment(_compiled(name)), Environment(_compiled(name))
    for tool, args in data.draw(st.lists(_call(name), min_size=1, max_size=12), label="calls"):
        got = fast.call(tool, args)
        want = general.call(tool, MappingProxyType(args))
        assert got.to_json() == want.to_json(), (tool, args)
        assert got.tool == want.tool
        assert fast.image() == general.image(), (tool, args)


@pytest.mark.parametrize("name", DOMAINS)
@settings(max_examples=80, derandomize=True, deadline=None)
@given(data=st.data())
def test_generated_checks_accept_only_what_validation_accepts_unchanged(
    name: str, data: st.DataObject
) -> None:
    """Sound: a value the generated checks accept is accepted by ``validate_arguments`` as is."""
    compiled = _compiled(name)
    tool, args = data.draw(_call(name), label="call")
    spec = compiled.tools[tool]
    checks = fast_checks(spec, tuple(args))
    if checks is None or not compile_checks(checks)(args):
        return
    clean, err = validate_arguments(spec, MappingProxyType(args), compiled.spec)
    assert err is None and clean == args
    assert [type(v) for v in clean.values()] == [type(v) for v in args.values()]


def test_well_typed_calls_take_the_fast_path_and_odd_ones_do_not() -> None:
    env = Environment(_compiled("travel"))
    args = dict(BOOKING)
    plan = env._plan("insert_flight_bookings", args)
    assert plan is not None and plan.insert is not None and plan.accepts(args)
    assert not plan.accepts({**args, "cost": 300.0})  # a float: the general path converts it
    assert not plan.accepts({**args, "approval_status": "LATER"})  # outside the enum
    assert not plan.accepts({**args, "flight_code": "caf\u00e9"})  # non-ASCII: fully checked
    assert env._plan("insert_flight_bookings", {**args, "nope": 1}) is None


def test_an_effect_rewriting_the_new_row_and_one_writing_another_table() -> None:
    """The fast path's result is the row as stored after every effect ran: travel's
    FLIGHT_POLICY_FLAG rewrites the inserted booking, FLIGHT_COUNT_ON_INSERT its request."""
    env = Environment(_compiled("travel"))
    (request,) = [r for r in env.rows("travel_requests") if r["id"] == 1]
    emergency = dict(BOOKING)
    result = env.call("insert_flight_bookings", emergency)
    assert result.ok and result.state_changed, result.error
    assert result.result["policy_violation_flag"] == 1
    assert result.result in env.rows("flight_bookings")
    (after,) = [r for r in env.rows("travel_requests") if r["id"] == 1]
    assert after["flight_booking_count"] == request["flight_booking_count"] + 1


def test_argument_shapes_kept_per_environment_are_bounded() -> None:
    env = Environment(_compiled("mock"))
    for i in range(5000):
        assert not env.call("query_loans", {f"k{i}": 1}).ok
    assert len(env._plans) <= 4096
    assert env.call("query_loans", {}).ok


def test_query_statements_are_kept_per_set_of_names_not_per_ordering() -> None:
    """A caller permuting the same filters gets the same answer and adds no cache entry."""
    env = Environment(_compiled("travel"))
    filters = {"status": "DRAFT", "user_id": "u_bob", "limit": 5, "offset": 0, "order_by": "id"}
    first = env.call("query_travel_requests", filters)
    assert first.ok, first.error
    kept = len(env._query_cache)
    for order in itertools.permutations(filters):
        again = env.call("query_travel_requests", {k: filters[k] for k in order})
        assert again == first
    assert len(env._query_cache) == kept


def test_query_statements_kept_per_environment_are_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_environment, "_MAX_PLANS", 3)
    env = Environment(_compiled("travel"))
    columns = list(env.rows("travel_requests")[0])
    answers = [
        env.call("query_travel_requests", {"order_by": c, "descending": d})
        for c in columns
        for d in (False, True)
    ]
    assert all(a.ok for a in answers), [a.error for a in answers if not a.ok][:1]
    assert len(env._query_cache) == 3
    assert env.call("query_travel_requests", {"order_by": columns[-1]}) == answers[-2]


def test_row_dicts_keep_column_names_of_any_spelling() -> None:
    columns = ("id", "it's", 'say "hi"', "a\\b", "\u00e9t\u00e9", "class")
    assert compile_row(columns)(tuple(range(6))) == dict(zip(columns, range(6), strict=True))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    domain=st.sampled_from(DOMAINS),
    pick=st.integers(min_value=0),
    limit=st.integers(min_value=1, max_value=60),
    offset=st.integers(min_value=0, max_value=40),
    filtered=st.booleans(),
)
def test_a_query_s_total_is_the_count_of_every_matching_row(
    domain: str, pick: int, limit: int, offset: int, filtered: bool
) -> None:
    """The total comes from the rows fetched when they end the result, else from count(*)."""
    compiled = _compiled(domain)
    table = compiled.spec.tables[pick % len(compiled.spec.tables)]
    env = Environment(compiled)
    try:
        args: dict[str, Any] = {"limit": limit, "offset": offset}
        every = env.rows(table.name)
        column = table.columns[pick % len(table.columns)].name
        tool = compiled.tools[f"query_{table.name}"]
        if filtered and every and column in tool.params:
            args[column] = every[pick % len(every)][column]
        if args.get(column, 0) is None:
            del args[column]
        result = env.call(f"query_{table.name}", args)
        assert result.ok, result.error
        matching = [r for r in every if column not in args or r[column] == args[column]]
        assert result.result["total"] == len(matching)
        assert len(result.result["rows"]) == max(0, min(limit, len(matching) - offset))
    finally:
        env.close()
