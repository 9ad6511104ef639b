"""Uncovered rules and tools are classified from the spec: unreachable by construction (with the
reason) or merely not reached."""

from __future__ import annotations

import pytest

from veritask.domains import builtin_domains, load_domain
from veritask.policy import Call, DomainSpec, Example, Rule
from veritask.task._reach import (
    NO_PROCEDURE,
    NOT_REACHED,
    NOT_SAMPLED,
    UNREACHABLE,
    uncovered,
    unreachable,
)
from veritask.task._report import _write_tools


def _reserved_mock() -> DomainSpec:
    """The mock library where a system-control rule, checked first, refuses every new loan and
    every example of ``insert_loans`` is refused; plus a rule on the read-only catalogue."""
    spec = load_domain("mock")
    refused = Example(
        calls=[Call(tool="insert_loans", args={"member_id": "m_ana"}, expect="LOAN_BY_SYSTEM")]
    )
    reserve = Rule(
        id="LOAN_BY_SYSTEM",
        table="loans",
        on=["insert"],
        category="system_control",
        condition="1 = 1",
        code="SYSTEM_CONTROL",
        message="Loans are opened by the system.",
        hint="Do not insert loans.",
        examples=[refused],
    )
    shelf = Rule(
        id="SHELF_FROZEN",
        table="books",
        on=["update"],
        condition="1 = 1",
        code="IMMUTABLE",
        message="The catalogue is fixed.",
        hint="-",
    )
    rules = [reserve, *(r.model_copy(update={"examples": []}) for r in spec.rules), shelf]
    effects = [e.model_copy(update={"examples": []}) for e in spec.effects]
    return spec.model_copy(update={"rules": rules, "effects": effects})


def test_a_reserved_tool_its_shadowed_rules_and_a_rule_without_a_tool() -> None:
    spec = _reserved_mock()
    rules, tools = unreachable(spec)
    assert set(tools) == {"insert_loans"}
    assert "reserved for the system by LOAN_BY_SYSTEM" in tools["insert_loans"]
    insert_rules = {r.id for r in spec.rules if r.table == "loans" and r.on == ["insert"]}
    assert set(rules) == (insert_rules - {"LOAN_BY_SYSTEM"}) | {"SHELF_FROZEN"}
    assert "LOAN_BY_SYSTEM is checked first" in rules["MEMBER_ACTIVE"]
    assert "no tool writes books on update" in rules["SHELF_FROZEN"]
    assert all(reason.startswith(UNREACHABLE) for reason in [*rules.values(), *tools.values()])


def test_uncovered_says_why_for_each_rule_and_tool() -> None:
    spec = _reserved_mock()
    missing = uncovered(spec, exercised={"LOAN_BY_SYSTEM"}, called=set())
    assert missing["rules"]["RETURN_FINAL"] == NOT_SAMPLED
    assert missing["rules"]["MEMBER_ACTIVE"].startswith(UNREACHABLE)
    assert "LOAN_BY_SYSTEM" not in missing["rules"]
    assert missing["tools"] == {
        "insert_loans": unreachable(spec)[1]["insert_loans"],
        "update_loans": NOT_SAMPLED,
    }


def test_not_reached_says_whether_a_procedure_could_reach_it() -> None:
    # the library lends but has no procedure that returns: nothing the generator makes updates
    # a loan, so the rules on returns and the update tool are not reached for that reason
    spec = load_domain("mock")
    spec = spec.model_copy(
        update={"transactions": [t for t in spec.transactions if t.tool == "insert_loans"]}
    )
    missing = uncovered(spec, exercised=set(), called=set())
    assert missing["tools"] == {"insert_loans": NOT_SAMPLED, "update_loans": NO_PROCEDURE}
    on_update = {r.id for r in spec.rules if r.on == ["update"]}
    assert on_update and all(missing["rules"][r] == NO_PROCEDURE for r in on_update)
    assert missing["rules"]["MEMBER_ACTIVE"] == NOT_SAMPLED
    assert all(why.startswith(NOT_REACHED) for why in missing["rules"].values())


def test_a_system_control_rule_some_example_passes_reserves_nothing() -> None:
    # travel's FLIGHT_APPROVAL_STATUS_INITIAL checks every new flight booking, but the spec's
    # examples book flights: the tool is open to requests
    assert unreachable(load_domain("travel")) == ({}, {})


@pytest.mark.parametrize("domain", builtin_domains())
def test_built_in_domains_rule_out_only_what_they_reserve(domain: str) -> None:
    rules, tools = unreachable(load_domain(domain))
    assert rules == {}
    assert set(tools) == ({"insert_approvals"} if domain == "retail" else set())


def test_tool_coverage_counts_only_the_tools_a_task_can_call() -> None:
    # a tool the spec reserves for the system is no actor's: it leaves the denominator
    assert _write_tools(_reserved_mock()) == {"update_loans"}
    retail = _write_tools(load_domain("retail"))
    assert "insert_approvals" not in retail and "update_approvals" in retail
    assert "insert_devices" in _write_tools(load_domain("telecom"))  # the customer's own tool
