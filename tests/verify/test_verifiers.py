"""Verifiers on hand-built trajectories: actions, state subset/exact, communicate, composite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from veritask.env import CompiledDomain, Environment, Snapshot, diff
from veritask.task import (
    DatasetDir,
    SubGoal,
    TaskDescription,
    TaskPackage,
    ToolStep,
    Trajectory,
    UserProfile,
    WitnessCall,
)
from veritask.verify import (
    VerificationError,
    actions,
    communicate,
    gold_diff_for,
    state_exact,
    state_subset,
    values_match,
    verify,
)

NO_CHANGES: dict[str, Any] = {"distance": 0, "tables": {}}


def step(tool: str, args: dict[str, Any], ok: bool = True) -> ToolStep:
    return ToolStep(
        turn=1,
        call_id=f"call_{tool}",
        tool=tool,
        args=args,
        raw_arguments=json.dumps(args),
        ok=ok,
        writes=tool.startswith(("insert_", "update_")),
    )


def make_traj(
    steps: list[ToolStep] | None = None,
    *,
    messages: list[dict[str, Any]] | None = None,
    final_distance: int = 0,
    agent_diff: dict[str, Any] | None = None,
    task_id: str = "mock-0001",
) -> Trajectory:
    return Trajectory(
        task_id=task_id,
        domain="mock",
        agent="test-agent",
        user="test-user",
        messages=messages or [],
        steps=steps or [],
        stop_reason="user_stop",
        initial_distance=3,
        final_distance=final_distance,
        agent_diff=NO_CHANGES if agent_diff is None else agent_diff,
    )


def make_package(
    reward_basis: list[str], witness: list[WitnessCall] | None = None, **extra: Any
) -> TaskPackage:
    fields: dict[str, Any] = {
        "id": "mock-0001",
        "domain": "mock",
        "spec_hash": "0" * 64,
        "policy": "1" * 64,
        "task": TaskDescription(
            who_you_are="A member.",
            total_goal="Borrow a book.",
            sub_goals=[SubGoal(title="Borrow", request="Borrow Dune.")],
        ),
        "task_description": "Borrow Dune.",
        "user_profile": UserProfile(user_id="m_ana", name="Ana Ruiz", archetype="rookie"),
        "origin": "2" * 64,
        "target": "3" * 64,
        "witness": witness or [],
        "reward_basis": reward_basis,
        "difficulty": "L1",
        "tags": ["linear"],
        "rules_exercised": [],
        "boundary_hits": 0,
        "seed": 0,
        "generator": "test",
    }
    return TaskPackage(**(fields | extra))


LEND = WitnessCall(
    tool="insert_loans", args={"member_id": "m_ana", "book_id": "b_dune", "due_step": 7}, ok=True
)
RETURN = WitnessCall(
    tool="update_loans",
    args={"id": 1, "status": "RETURNED", "return_step": 9, "late_fee": 1150},
    ok=True,
)
WITNESS = [
    WitnessCall(tool="query_members", args={"id": "m_ana"}, ok=True),
    LEND,
    WitnessCall(
        tool="insert_loans",
        args={"member_id": "m_lapsed", "book_id": "b_dune", "due_step": 7},
        ok=False,
    ),
    RETURN,
]


def gold_steps() -> list[ToolStep]:
    return [step(LEND.tool, dict(LEND.args)), step(RETURN.tool, dict(RETURN.args))]


# -- actions -----------------------------------------------------------------------------------


def test_actions_in_witness_order_pass() -> None:
    result = actions(make_traj(gold_steps()), WITNESS)
    assert result.passed and result.score == 1.0
    assert "2 gold write(s)" in result.detail


def test_actions_permuted_order_still_matches() -> None:
    result = actions(make_traj(gold_steps()[::-1]), WITNESS)
    assert result.passed, result.detail


def test_actions_tolerate_reads_and_rejected_writes() -> None:
    steps = [
        step("query_members", {"id": "m_ana"}),
        step("query_books", {"title": "Dune"}),
        step(
            "insert_loans", {"member_id": "m_lapsed", "book_id": "b_dune", "due_step": 7}, ok=False
        ),
        *gold_steps(),
        step("query_loans", {"member_id": "m_ana"}),
    ]
    result = actions(make_traj(steps), WITNESS)
    assert result.passed, result.detail


def test_actions_missing_write_fails_and_names_it() -> None:
    result = actions(make_traj(gold_steps()[:1]), WITNESS)
    assert not result.passed and result.score == 0.0
    assert "update_loans(" in result.detail and "no match" in result.detail
    assert "no successful agent call to update_loans" in result.detail


def test_actions_wrong_amount_fails_with_closest_candidate() -> None:
    wrong = step("update_loans", {**RETURN.args, "late_fee": 1151})
    result = actions(make_traj([gold_steps()[0], wrong]), WITNESS)
    assert not result.passed
    assert "closest update_loans(" in result.detail
    assert "late_fee: gold 1150, agent 1151" in result.detail
    # The wrong write is also an extra write.
    assert "extra write update_loans(" in result.detail


@pytest.mark.parametrize("fee", [1150, 1150.0, 1150.00001, 1149.99995])
def test_actions_amounts_within_tolerance_pass(fee: float) -> None:
    close = step("update_loans", {**RETURN.args, "late_fee": fee})
    assert actions(make_traj([gold_steps()[0], close]), WITNESS).passed


def test_actions_strings_compare_case_insensitively_and_trimmed() -> None:
    shouted = step("update_loans", {**RETURN.args, "status": "  returned "})
    lend = step("insert_loans", {**LEND.args, "member_id": "M_ANA"})
    assert actions(make_traj([shouted, lend]), WITNESS).passed


def test_actions_none_equals_missing_key() -> None:
    witness = [WitnessCall(tool="update_loans", args={"id": 1, "late_fee": None}, ok=True)]
    assert actions(make_traj([step("update_loans", {"id": 1})]), witness).passed
    assert not actions(make_traj([step("update_loans", {"id": 1, "late_fee": 3})]), witness).passed


def test_actions_extra_write_fails_and_says_so() -> None:
    extra = step("insert_loans", {"member_id": "m_ben", "book_id": "b_hobbit", "due_step": 2})
    result = actions(make_traj([*gold_steps(), extra]), WITNESS)
    assert not result.passed
    assert "extra write insert_loans(member_id='m_ben'" in result.detail
    assert "no match" not in result.detail


def test_actions_each_gold_call_needs_a_distinct_agent_call() -> None:
    result = actions(make_traj([step(LEND.tool, dict(LEND.args))]), [LEND, LEND])
    assert not result.passed and "no match" in result.detail


def test_actions_matching_is_maximum_not_greedy() -> None:
    # g1 matches both agent calls, g2 only the first: a greedy pass would fail.
    witness = [
        WitnessCall(tool="update_loans", args={"id": 1, "late_fee": 1.00005}, ok=True),
        WitnessCall(tool="update_loans", args={"id": 1, "late_fee": 1.00015}, ok=True),
    ]
    steps = [
        step("update_loans", {"id": 1, "late_fee": 1.0001}),
        step("update_loans", {"id": 1, "late_fee": 1.0}),
    ]
    assert actions(make_traj(steps), witness).passed


def test_actions_refusal_task_passes_only_without_writes() -> None:
    witness = [WitnessCall(tool="query_members", args={"id": "m_lapsed"}, ok=True)]
    assert actions(make_traj([step("query_members", {"id": "m_lapsed"})]), witness).passed
    assert not actions(make_traj(gold_steps()[:1]), witness).passed


def test_values_match_rules() -> None:
    assert values_match(1150, 1150.00001)
    assert not values_match(1150, 1151)
    assert values_match("Dune ", "dune")
    assert not values_match("1150", 1150)
    assert values_match([1, "A"], [1.0, "a"])
    assert values_match(None, None) and not values_match(None, 0)


# -- state ---------------------------------------------------------------------------------------


def row(member: str, book: str = "b_dune", status: str = "OPEN") -> dict[str, Any]:
    return {"member_id": member, "book_id": book, "due_step": 7, "status": status}


def as_diff(tables: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    n = sum(len(t.get("added", [])) + len(t.get("removed", [])) for t in tables.values())
    return {"distance": n, "tables": tables}


GOLD = as_diff(
    {
        "loans": {"added": [row("m_ana")], "removed": []},
        "books": {
            "added": [{"id": "b_dune", "available": 0}],
            "removed": [{"id": "b_dune", "available": 1}],
        },
    }
)


def test_state_exact() -> None:
    assert state_exact(make_traj(final_distance=0)).passed
    failed = state_exact(make_traj(final_distance=2))
    assert not failed.passed and "by 2 row(s)" in failed.detail


def test_state_subset_exact_and_superset_pass() -> None:
    assert state_subset(make_traj(agent_diff=GOLD), GOLD).passed
    more = json.loads(json.dumps(GOLD))
    more["tables"]["loans"]["added"].append(row("m_ben", "b_hobbit"))
    more["tables"]["members"] = {"added": [{"id": "m_ben", "active_loans": 2}], "removed": []}
    result = state_subset(make_traj(agent_diff=more), GOLD)
    assert result.passed and "all 3 gold row change(s)" in result.detail


def test_state_subset_missing_row_fails_and_names_it() -> None:
    partial = as_diff({"loans": {"added": [row("m_ana")], "removed": []}})
    result = state_subset(make_traj(agent_diff=partial), GOLD)
    assert not result.passed
    assert "2 of 3 gold row change(s) missing" in result.detail
    assert "books added {'id': 'b_dune', 'available': 0}" in result.detail
    assert "books removed {'id': 'b_dune', 'available': 1}" in result.detail


def test_state_subset_wrong_value_fails() -> None:
    wrong = json.loads(json.dumps(GOLD))
    wrong["tables"]["loans"]["added"] = [row("m_ben")]
    result = state_subset(make_traj(agent_diff=wrong), GOLD)
    assert not result.passed and "loans added" in result.detail and "m_ana" in result.detail


def test_state_subset_counts_rows_as_a_multiset() -> None:
    gold = as_diff({"loans": {"added": [row("m_ana"), row("m_ana")], "removed": []}})
    once = as_diff({"loans": {"added": [row("m_ana")], "removed": []}})
    assert not state_subset(make_traj(agent_diff=once), gold).passed
    assert state_subset(make_traj(agent_diff=gold), gold).passed


def test_state_subset_integral_floats_equal_ints() -> None:
    gold = as_diff({"loans": {"added": [{"id": 1, "late_fee": 3}], "removed": []}})
    agent = as_diff({"loans": {"added": [{"id": 1, "late_fee": 3.0}], "removed": []}})
    assert state_subset(make_traj(agent_diff=agent), gold).passed


def test_state_subset_empty_gold_passes() -> None:
    assert state_subset(make_traj(agent_diff=GOLD), NO_CHANGES).passed


def test_state_subset_without_recorded_agent_diff_raises() -> None:
    with pytest.raises(VerificationError, match="agent_diff"):
        state_subset(make_traj(agent_diff={}), GOLD)
    with pytest.raises(VerificationError, match="gold_diff"):
        state_subset(make_traj(agent_diff=GOLD), {"distance": 0})


def test_gold_diff_for_reads_stored_states(
    tmp_path: Path, compiled: dict[str, CompiledDomain]
) -> None:
    domain = compiled["mock"]
    env = Environment(domain)
    origin = env.image()
    assert env.call("insert_loans", dict(LEND.args)).ok
    target = env.image()
    dataset = DatasetDir(tmp_path)
    package = make_package(
        ["state_subset"], [LEND], origin=dataset.put_state(origin), target=dataset.put_state(target)
    )
    gold = gold_diff_for(package, dataset, domain.layout)
    assert gold["distance"] == 5
    assert gold["tables"]["loans"]["added"] == [
        {
            "member_id": "m_ana",
            "book_id": "b_dune",
            "due_step": 7,
            "status": "OPEN",
            "return_step": None,
            "late_fee": None,
        }
    ]
    agent_diff = diff(Snapshot(origin, domain.layout), env.snapshot()).to_json()
    traj = make_traj([step(LEND.tool, dict(LEND.args))], agent_diff=agent_diff)
    assert verify(traj, package, gold_diff=gold).reward == 1.0
    assert not state_subset(make_traj(), gold).passed


# -- communicate ---------------------------------------------------------------------------------


def said(*texts: str) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "The fee is 1150, right?"}]
    return msgs + [{"role": "assistant", "content": t} for t in texts]


@pytest.mark.parametrize(
    "text", ["Your late fee is $1,150.", "Late fee: 1150.00 dollars", "the LATE FEE is 1150.0"]
)
def test_communicate_normalizes_numbers_and_case(text: str) -> None:
    traj = make_traj(messages=said("Let me check.", text))
    assert communicate(traj, ["late fee", "1150"]).passed
    assert communicate(traj, ["1,150.00"]).passed


def test_communicate_missing_fact_fails_and_lists_it() -> None:
    traj = make_traj(messages=said("Your late fee is 11500."))
    result = communicate(traj, ["1150", "late fee"])
    assert not result.passed and "['1150']" in result.detail


def test_communicate_ignores_user_messages_and_tool_calls() -> None:
    messages = [*said(), {"role": "assistant", "content": None, "tool_calls": []}]
    assert not communicate(make_traj(messages=messages), ["1150"]).passed


def test_communicate_decimals_and_ids() -> None:
    traj = make_traj(messages=said("Refund of 12.50 issued for loan b_dune."))
    assert communicate(traj, ["12.5", "B_DUNE"]).passed
    assert not communicate(traj, ["12.55"]).passed


# -- composite -----------------------------------------------------------------------------------


def test_verify_reward_is_the_product() -> None:
    package = make_package(["state_exact", "actions"], WITNESS)
    good = verify(make_traj(gold_steps()), package)
    assert good.reward == 1.0 and good.breakdown() == {"state_exact": 1.0, "actions": 1.0}
    bad = verify(make_traj(gold_steps()[:1]), package)
    assert bad.reward == 0.0 and bad.breakdown() == {"state_exact": 1.0, "actions": 0.0}
    payload = bad.to_json()
    assert payload["reward"] == 0.0
    assert [c["name"] for c in payload["components"]] == ["state_exact", "actions"]
    assert "no match" in payload["components"][1]["detail"]
    json.dumps(payload)


def test_verify_evaluates_exactly_the_basis() -> None:
    package = make_package(["actions"], WITNESS)
    verdict = verify(make_traj(gold_steps(), final_distance=4), package)
    assert verdict.breakdown() == {"actions": 1.0}


def test_verify_all_components() -> None:
    package = make_package(["state_exact", "state_subset", "actions", "communicate"], WITNESS)
    traj = make_traj(gold_steps(), messages=said("Done: fee 1,150."), agent_diff=GOLD)
    verdict = verify(traj, package, gold_diff=GOLD, facts=["1150"])
    assert verdict.reward == 1.0 and verdict.passed and len(verdict.components) == 4


@pytest.mark.parametrize(
    ("basis", "kwargs", "message"),
    [
        (["state_subset"], {}, "gold_diff"),
        (["communicate"], {"gold_diff": GOLD}, "facts"),
        (["state_exact", "db"], {}, "unknown reward_basis"),
        ([], {}, "empty reward_basis"),
    ],
)
def test_verify_raises_instead_of_skipping(
    basis: list[str], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(VerificationError, match=message):
        verify(make_traj(gold_steps(), agent_diff=GOLD), make_package(basis, WITNESS), **kwargs)


def test_verify_rejects_a_trajectory_of_another_task() -> None:
    with pytest.raises(VerificationError, match="not 'mock-0001'"):
        verify(make_traj(task_id="other"), make_package(["state_exact"]))
