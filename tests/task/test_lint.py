"""The semantic lint finds each class of task a careful reader would not accept.

Each test crafts one package of the travel domain that shows exactly one class, on the domain's
seed state, and asserts the lint names it; a clean package yields nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from veritask.domains import spec_path
from veritask.env import CompiledDomain, Environment
from veritask.policy import SpecError, load_spec
from veritask.task import (
    Ask,
    Fallback,
    RowRef,
    SubGoal,
    TaskDescription,
    TaskPackage,
    UserProfile,
    WitnessCall,
    check_dataset,
    clock_column,
    intent_columns,
    key_names,
    kind_table,
    lint_dataset,
    lint_package,
    load_dataset,
    named_column,
    repeated_texts,
    standing_cast,
    status_of_procedure,
)
from veritask.task import (
    tested_words as words_tested,
)

H = "0" * 64
BOOKING_UA100 = RowRef(table="flight_bookings", match={"flight_code": "UA100"})
BOOKING_UA205 = RowRef(table="flight_bookings", match={"flight_code": "UA205"})


def _package(
    subs: list[SubGoal], witness: list[WitnessCall] | None = None, **kw: Any
) -> TaskPackage:
    task = TaskDescription(who_you_are="You are Diane.", total_goal="goal", sub_goals=subs)
    fields: dict[str, Any] = {
        "id": "travel-t-000000",
        "domain": "travel",
        "spec_hash": "x",
        "policy": H,
        "task": task,
        "task_description": task.render(),
        "user_profile": UserProfile(user_id="u_history_01", name="Diane", archetype="rookie"),
        "origin": H,
        "target": H,
        "witness": witness or [],
        "difficulty": "L2",
        "tags": [],
        "rules_exercised": [],
        "boundary_hits": 0,
        "seed": 0,
        "generator": "test",
    }
    fields.update(kw)
    return TaskPackage(**fields)


def _cancel(target: RowRef, **values: Any) -> Ask:
    return Ask(
        transaction="cancel_flight",
        tool="update_flight_bookings",
        target=target,
        values={"status": "CANCELLED", **values},
    )


def _sub(ask: Ask, *fallbacks: Fallback, title: str = "Cancel Flight Booking") -> SubGoal:
    return SubGoal(title=title, request="r", ask=ask, fallbacks=list(fallbacks))


@pytest.fixture
def travel(compiled: dict[str, CompiledDomain]) -> tuple[CompiledDomain, Environment, bytes]:
    env = Environment(compiled["travel"])
    return compiled["travel"], env, env.image()


def _kinds(travel: tuple[CompiledDomain, Environment, bytes], pkg: TaskPackage) -> list[str]:
    domain, env, origin = travel
    return [f.kind for f in lint_package(domain.spec, domain.tools, pkg, env, origin)]


def test_a_restated_time_after_a_refusal_is_found(travel: Any) -> None:
    ask = _cancel(BOOKING_UA205, cancellation_step=20)
    then = _cancel(BOOKING_UA205, cancellation_step=4)
    pkg = _package([_sub(ask, Fallback(rule="FLIGHT_CANCEL_TICKETED", then=then))])
    assert _kinds(travel, pkg) == ["restated_time"]


def test_a_time_the_user_left_out_may_be_given_later(travel: Any) -> None:
    ask = _cancel(BOOKING_UA205)
    then = _cancel(BOOKING_UA205, cancellation_step=4)
    pkg = _package([_sub(ask, Fallback(rule="FLIGHT_CANCEL_STEP_REQUIRED", then=then))])
    assert _kinds(travel, pkg) == []


def test_another_record_to_act_on_is_found(travel: Any) -> None:
    ask = _cancel(BOOKING_UA100, cancellation_step=6)
    then = _cancel(BOOKING_UA205, cancellation_step=6)
    pkg = _package([_sub(ask, Fallback(rule="FLIGHT_CANCEL_TICKETED", then=then))])
    assert _kinds(travel, pkg) == ["replaced_record"]


def test_the_same_record_named_another_way_is_not_a_replacement(travel: Any) -> None:
    ask = _cancel(BOOKING_UA205, cancellation_step=6)
    by_cost = RowRef(table="flight_bookings", match={"cost": 450, "departure_step": 16})
    then = _cancel(by_cost, cancellation_step=6)
    pkg = _package([_sub(ask, Fallback(rule="FLIGHT_CANCEL_TICKETED", then=then))])
    assert _kinds(travel, pkg) == []


def test_a_trigger_on_the_agents_own_calculation_is_found(travel: Any) -> None:
    ask = _cancel(BOOKING_UA205, cancellation_step=6)
    pkg = _package([_sub(ask, Fallback(rule="FLIGHT_REFUND_FULL"))])
    assert _kinds(travel, pkg) == ["calculation_trigger"]


def test_a_trigger_on_the_users_own_figure_is_not(travel: Any) -> None:
    ask = _cancel(BOOKING_UA205, cancellation_step=6, refund_amount=10)
    then = _cancel(BOOKING_UA205, cancellation_step=6, refund_amount=450)
    pkg = _package([_sub(ask, Fallback(rule="FLIGHT_REFUND_FULL", then=then))])
    assert _kinds(travel, pkg) == []


def test_a_cancel_procedure_that_does_not_cancel_is_found(travel: Any) -> None:
    ask = Ask(
        transaction="cancel_flight",
        tool="update_flight_bookings",
        target=BOOKING_UA205,
        values={"cancellation_step": 6},
    )
    pkg = _package([_sub(ask)])
    assert _kinds(travel, pkg) == ["terminal_without_status"]


def test_an_approver_from_another_company_changes_intent(travel: Any) -> None:
    approval = RowRef(
        table="approvals",
        match={
            "flight_booking_id": RowRef(table="flight_bookings", match={"flight_code": "UA077"})
        },
    )

    def ask(approver: str) -> Ask:
        return Ask(
            transaction="process_approval",
            tool="update_approvals",
            target=approval,
            values={"status": "APPROVED"},
            refs={"approver_id": RowRef(table="users", match={"name": approver})},
        )

    sub = _sub(
        ask("Victor Osei"),
        Fallback(rule="APPROVER_CONFLICT", then=ask("Laura Smith")),
        title="Process Manager Approval",
    )
    assert _kinds(travel, _package([sub])) == ["changed_intent"]
    same_company = _sub(
        ask("Olivia Grant"),
        Fallback(rule="APPROVER_CONFLICT", then=ask("Maria Gonzalez")),
        title="Process Manager Approval",
    )
    assert _kinds(travel, _package([same_company])) == []


def test_an_alternative_the_record_already_has_is_a_noop(travel: Any) -> None:
    ask = Ask(
        transaction="update_travel_request",
        tool="update_travel_requests",
        target=RowRef(
            table="travel_requests", match={"trip_purpose": "Vendor negotiation in Austin"}
        ),
        values={"status": "SUBMITTED"},
    )
    env = travel[1]
    row = env.call("query_travel_requests", {"trip_purpose": "Vendor negotiation in Austin"})
    current = row.result["rows"][0]
    then = ask.model_copy(update={"values": {"status": current["status"]}})
    call = WitnessCall(
        tool="update_travel_requests",
        args={"id": current["id"], "status": current["status"]},
        ok=True,
    )
    sub = _sub(ask, Fallback(rule="TR_CANCELLED_FINAL", then=then), title="Update Travel Request")
    assert "noop_alternative" in _kinds(travel, _package([sub], [call]))


def test_status_of_procedure_reads_the_verb(compiled: dict[str, CompiledDomain]) -> None:
    spec = compiled["travel"].spec
    bookings = spec.table("flight_bookings")
    assert status_of_procedure(bookings, "Cancel Flight Booking") == ("status", "CANCELLED")
    assert status_of_procedure(bookings, "Ship or Cancel Booking") is None
    assert status_of_procedure(spec.table("approvals"), "Process Manager Approval") is None


def test_repeated_texts_and_a_skewed_cast_are_dataset_findings() -> None:
    ask = _cancel(BOOKING_UA205, cancellation_step=6)
    same = [_package([_sub(ask)], id=f"travel-t-{i:06d}") for i in range(60)]
    found = lint_dataset(same)
    assert sum(f.kind == "repeated_text" for f in found) == 59
    elsewhere = [p.model_copy(update={"origin": f"{i:064x}"}) for i, p in enumerate(same)]
    assert not [f for f in lint_dataset(elsewhere) if f.kind == "repeated_text"]
    assert repeated_texts(elsewhere) == 59 and repeated_texts(same) == 0
    users = ["u_a"] * 50 + ["u_b", "u_c", "u_d", "u_e", "u_f"] * 2
    cast = [
        _package(
            [_sub(_cancel(BOOKING_UA205, cancellation_step=i))],
            id=f"travel-t-{i:06d}",
            user_profile=UserProfile(user_id=u, name=u, archetype="rookie"),
        )
        for i, u in enumerate(users)
    ]
    skew = [f for f in lint_dataset(cast) if f.kind == "skewed_cast"]
    assert len(skew) == 1 and "'u_a'" in skew[0].detail


@pytest.mark.parametrize("domain", ["travel", "retail", "clinic", "registrar", "gym"])
def test_generated_packages_have_no_per_package_findings(
    domain: str, generated: Callable[[str, int, int], Path]
) -> None:
    """Generation discards what the lint finds, so ``check`` lists no per-package finding."""
    out = generated(domain, 60, 0)
    report = check_dataset(out)
    per_package = {
        k: v for k, v in report.lint_counts.items() if k not in ("repeated_text", "skewed_cast")
    }
    assert report.certified == report.tasks and per_package == {}
    assert len(load_dataset(out)) == report.tasks


def test_a_declared_intent_replaces_the_default(compiled: dict[str, CompiledDomain]) -> None:
    users = compiled["travel"].spec.table("users")
    assert intent_columns(users) == ["company_id", "user_level"]
    assert intent_columns(users.model_copy(update={"intent": ["company_id"]})) == ["company_id"]


def test_an_unknown_intent_column_is_a_located_spec_error(tmp_path: Path) -> None:
    text = spec_path("mock").read_text()
    broken = text.replace("  - name: books\n", "  - name: books\n    intent: [colour]\n", 1)
    assert broken != text
    path = tmp_path / "spec.yaml"
    path.write_text(broken)
    with pytest.raises(SpecError, match=r"intent\[0\].*unknown column 'colour'"):
        load_spec(path)


def test_a_join_on_a_key_is_not_what_a_rule_tests(compiled: dict[str, CompiledDomain]) -> None:
    """The return window reads the item's delivery step through its key: it tests the step
    (and the tier and window it adds), not which order or product the item belongs to."""
    spec = compiled["retail"].spec
    tested = words_tested(spec.rule("RETURN_WINDOW"), key_names(spec))
    assert {"request_step", "delivered_step", "return_window_steps"} <= tested
    assert not tested & {"order_item_id", "order_id", "product_id", "category"}


def _return(order_id: int, product: str) -> Ask:
    item = RowRef(table="order_items", match={"order_id": order_id, "product_id": product})
    return Ask(
        transaction="open_return",
        tool="insert_returns",
        values={"quantity": 1, "request_step": 40},
        refs={"order_item_id": item},
    )


def test_another_purchase_after_a_return_window_changes_intent(
    compiled: dict[str, CompiledDomain],
) -> None:
    """After "the return window for this item has expired" the user may not switch to an item
    of another order: a return is about the item the user bought."""
    domain = compiled["retail"]
    env = Environment(domain)
    origin = env.image()
    sub = SubGoal(
        title="Open Return Request",
        request="r",
        ask=_return(1002, "p_headphones"),
        fallbacks=[Fallback(rule="RETURN_WINDOW", then=_return(1001, "p_headphones"))],
    )
    pkg = _package([sub], domain="retail")
    found = lint_package(domain.spec, domain.tools, pkg, env, origin)
    assert [f.kind for f in found] == ["changed_intent"]
    assert "order_id 1002 -> 1001" in found[0].detail


def test_users_made_for_one_scene_are_not_the_standing_cast() -> None:
    """A user drawn on a single origin cannot be compared with users present in every scene:
    balance is measured over the users with tasks on several origins."""
    ask = _cancel(BOOKING_UA205, cancellation_step=6)

    def pkg(i: int, user: str, origin: int) -> TaskPackage:
        return _package(
            [_sub(ask)],
            id=f"travel-t-{i:06d}",
            origin=f"{origin:064x}",
            user_profile=UserProfile(user_id=user, name=user, archetype="rookie"),
        )

    standing = [pkg(i, ("u_a", "u_b")[i % 2], i % 5) for i in range(60)]
    one_off = [pkg(100 + i, f"u_scene_{i}", i % 5) for i in range(40)]
    cast = standing_cast(standing + one_off)
    assert cast == {"u_a": 30, "u_b": 30}
    assert not [f for f in lint_dataset(standing + one_off) if f.kind == "skewed_cast"]


def test_a_later_request_dated_before_a_refused_time_is_found(travel: Any) -> None:
    """Told at step 20 that the cancellation costs a penalty, the user gives up; a later
    sub-goal may not cancel another booking "at step 4" (the clock is not the user's)."""
    refused = _sub(
        _cancel(BOOKING_UA205, cancellation_step=20),
        Fallback(rule="FLIGHT_REFUND_PENALTY", then=None),
    )
    earlier = _package([refused, _sub(_cancel(BOOKING_UA100, cancellation_step=4))])
    kinds = _kinds(travel, earlier)
    assert "clock_backwards" in kinds
    later = _package([refused, _sub(_cancel(BOOKING_UA100, cancellation_step=21))])
    assert "clock_backwards" not in _kinds(travel, later)


def _book(cabin: str) -> Ask:
    return Ask(
        transaction="book_flight",
        tool="insert_flight_bookings",
        values={"flight_code": "UA310", "cost": 1150, "departure_step": 20, "booking_step": 5},
        refs={"class": RowRef(table="flight_classes", match={"id": cabin})},
    )


def test_another_row_of_a_table_that_says_what_a_thing_is_is_a_category_swap(
    travel: Any,
) -> None:
    """A cabin class table has no intent columns of its own: its rows say what the booking
    is, so "accept BUSINESS instead" after a refusal refiles it rather than keeping it."""
    sub = _sub(
        _book("ECONOMY"),
        Fallback(rule="FLIGHT_CABIN_CLASS", then=_book("BUSINESS")),
        title="Book Flight",
    )
    assert _kinds(travel, _package([sub])) == ["category_swap"]
    domain = travel[0]
    assert kind_table(domain.spec.table("flight_classes"))
    declared = domain.spec.table("flight_classes").model_copy(update={"intent": []})
    assert not kind_table(declared)  # `intent: []`: any row serves the same request


def test_a_later_request_made_before_an_earlier_one_is_found(travel: Any) -> None:
    """One "now" per task: a request at step 4 after one at step 20, on any record, with or
    without a refusal between them."""
    back = _package(
        [
            _sub(_cancel(BOOKING_UA205, cancellation_step=20)),
            _sub(_cancel(BOOKING_UA100, cancellation_step=4)),
        ]
    )
    assert _kinds(travel, back) == ["clock_not_monotone"]
    forward = _package(
        [
            _sub(_cancel(BOOKING_UA100, cancellation_step=4)),
            _sub(_cancel(BOOKING_UA205, cancellation_step=20)),
        ]
    )
    assert _kinds(travel, forward) == []
    bookings = travel[0].spec.table("flight_bookings")
    assert clock_column(bookings.column("booking_step"))
    assert not clock_column(bookings.column("departure_step"))  # a time the request is about


def test_a_request_with_a_column_its_procedure_does_not_take_is_found(travel: Any) -> None:
    """A cancellation that also asks for another cost is not what "Cancel" does."""
    pkg = _package([_sub(_cancel(BOOKING_UA205, cancellation_step=6, cost=10))])
    found = _kinds(travel, pkg)
    assert found == ["unnamed_change"]


def test_a_procedure_named_for_a_column_must_state_it() -> None:
    """ "Change Sailing" on bookings is about the sailing: a request that names no sailing
    leaves an agent nothing to change."""
    spec = load_spec(Path("tests/fixtures/unseen_domains/ferry_desk.yaml"))
    bookings = spec.table("bookings")
    tx = next(t for t in spec.transactions if t.id == "change_sailing")
    assert named_column(bookings, tx.name, tx.parameters) == "sailing_code"
    cancel = next(t for t in spec.transactions if t.id == "cancel_booking")
    assert named_column(bookings, cancel.name, cancel.parameters) is None


def test_a_record_made_and_retired_in_one_task_is_found(travel: Any) -> None:
    """Booking a flight and cancelling the same booking in one task is no customer's day."""
    calls = [
        WitnessCall(tool="insert_flight_bookings", args={}, ok=True, result={"id": 99}),
        WitnessCall(tool="update_flight_bookings", args={"id": 99, "status": "CANCELLED"}, ok=True),
    ]
    pkg = _package([_sub(_cancel(BOOKING_UA205, cancellation_step=6))], calls)
    assert _kinds(travel, pkg) == ["undone_in_task"]
    other = [calls[0], calls[1].model_copy(update={"args": {"id": 5, "status": "CANCELLED"}})]
    assert (
        _kinds(travel, _package([_sub(_cancel(BOOKING_UA205, cancellation_step=6))], other)) == []
    )


def test_the_same_record_created_twice_in_a_task_is_found(travel: Any) -> None:
    """Two travel requests for the same trip purpose in one task: one trip asked for twice."""

    def request(purpose: str) -> SubGoal:
        ask = Ask(
            transaction="create_travel_request",
            tool="insert_travel_requests",
            values={"trip_purpose": purpose, "current_step": 3},
        )
        return _sub(ask, title="Create Travel Request")

    twice = _package([request("Client visit in Boston"), request("Client visit in Boston")])
    assert _kinds(travel, twice) == ["repeated_request"]
    two = _package([request("Client visit in Boston"), request("Board meeting in Chicago")])
    assert _kinds(travel, two) == []
