"""Rewards against hand-computed values of LOGIGEN's (4.2, 4.3) and AReaL-SEA's (5) formulas."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pytest

from veritask.reward import (
    StepReward,
    dense_rewards,
    filter_groups,
    final_reward,
    grpo_advantages,
    min_step_reward_per_turn,
    proximity,
    reward_breakdown,
    ta_grpo_advantages,
    turn_rewards,
)
from veritask.task import ToolStep, Trajectory

EPS = 1e-6


@dataclass(frozen=True)
class Call:
    """A tool call to record: the distance after it, and how it was rejected (if it was)."""

    distance: int | None
    rule: str | None = None
    """The policy rule that rejected the call."""
    code: str | None = None
    """An error code without a rule (malformed call, schema error)."""


def _step(turn: int, index: int, call: Call) -> ToolStep:
    rejected = call.rule is not None or call.code is not None
    error = (
        {
            "code": call.code or "POLICY_VIOLATION",
            "message": "rejected",
            "violated_rule": call.rule,
            "hint": "",
        }
        if rejected
        else None
    )
    return ToolStep(
        turn=turn,
        call_id=f"c{index}",
        tool="update_booking",
        args={},
        raw_arguments="{}",
        ok=not rejected,
        error=error,
        writes=True,
        distance=call.distance,
    )


def make_traj(
    d0: int,
    turns: list[list[Call]],
    *,
    reward: float | None,
    final_distance: int | None = None,
    task_id: str = "t1",
    trial: int = 0,
) -> Trajectory:
    """Messages: system, user, then per turn an assistant message (its calls, then one tool
    message per call), and a closing assistant text. Assistant message indices: 2, 2 + (1 +
    calls of turn 0), ... A turn with no calls is an assistant text message."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "please"},
    ]
    steps: list[ToolStep] = []
    for calls in turns:
        turn = len(messages)
        ids = [f"c{len(steps) + k}" for k in range(len(calls))]
        tool_calls = [{"id": i, "type": "function", "function": {"name": "f"}} for i in ids]
        messages.append(
            {
                "role": "assistant",
                "content": None if calls else "ok",
                **({"tool_calls": tool_calls} if calls else {}),
            }
        )
        for call_id, call in zip(ids, calls, strict=True):
            steps.append(_step(turn, len(steps), call))
            messages.append({"role": "tool", "tool_call_id": call_id, "content": "{}"})
    messages.append({"role": "assistant", "content": "done"})
    last = next((c.distance for c in reversed([c for t in turns for c in t])), d0)
    return Trajectory(
        task_id=task_id,
        domain="travel",
        trial=trial,
        agent="test",
        user="scripted",
        messages=messages,
        steps=steps,
        stop_reason="user_stop",
        initial_distance=d0,
        final_distance=final_distance if final_distance is not None else (last or 0),
        reward=reward,
    )


# -- R_final ------------------------------------------------------------------------------


def test_final_reward_is_binary_and_falls_back_to_the_distance() -> None:
    assert final_reward(make_traj(2, [[Call(0)]], reward=1.0)) == 1.0
    assert final_reward(make_traj(2, [[Call(0)]], reward=0.0)) == 0.0
    assert final_reward(make_traj(2, [[Call(0)]], reward=0.5)) == 0.0  # partial verdict
    # unverified: R_final = I[DIFF(s_final, s_target) = 0]
    assert final_reward(make_traj(2, [[Call(0)]], reward=None)) == 1.0
    assert final_reward(make_traj(2, [[Call(1)]], reward=None)) == 0.0


# -- P_t ------------------------------------------------------------------------------------


def test_proximity_matches_the_formula() -> None:
    # P = 1 - min(d, D0) / (D0 + eps), D0 = 4
    assert proximity(4, 4) == 1 - 4 / (4 + EPS)  # ~0: nothing done yet
    assert proximity(4, 4) == pytest.approx(0.0, abs=1e-6)
    assert proximity(2, 4) == 1 - 2 / (4 + EPS)
    assert proximity(2, 4) == pytest.approx(0.5, abs=1e-6)
    assert proximity(0, 4) == 1.0  # at the target
    assert proximity(7, 4) == proximity(4, 4)  # min() clamps: further away is still ~0
    assert proximity(1, 4, eps=0.0) == 0.75  # 1 - 1/4


def test_proximity_of_a_refusal_task() -> None:
    # D0 = 0: P = 1 when the state is untouched, 0 once anything changed
    assert proximity(0, 0) == 1.0
    assert proximity(1, 0) == 0.0
    assert proximity(5, 0) == 0.0


def test_proximity_rejects_negative_inputs() -> None:
    with pytest.raises(ValueError):
        proximity(-1, 4)
    with pytest.raises(ValueError):
        proximity(1, -4)
    with pytest.raises(ValueError):
        proximity(1, 4, eps=-1.0)


# -- r_t ------------------------------------------------------------------------------------


def _four_steps(**kw: Any) -> Trajectory:
    # D0 = 4; distances after each call: 4 (a read), 2, 2 (rejected by R1), 0
    return make_traj(4, [[Call(4)], [Call(2)], [Call(2, rule="R1")], [Call(0)]], reward=1.0, **kw)


def test_dense_rewards_by_hand() -> None:
    traj = _four_steps()
    steps = dense_rewards(traj, lambda_err=0.1)
    # P_0 = 1 - 4/(4+eps) ~ 0;  P = [~0, ~.5, ~.5, 1]
    p0 = 1 - 4 / (4 + EPS)
    p_half = 1 - 2 / (4 + EPS)
    assert [s.proximity for s in steps] == [p0, p_half, p_half, 1.0]
    # r = [P1 - P0, P2 - P1, -lambda_err (policy violation), P4 - P3] = [0, .5, -.1, .5]
    assert [s.reward for s in steps] == [0.0, p_half - p0, -0.1, 1.0 - p_half]
    assert [s.reward for s in steps] == pytest.approx([0.0, 0.5, -0.1, 0.5], abs=1e-6)
    assert [s.violated_rule for s in steps] == [None, None, "R1", None]
    assert [s.penalized for s in steps] == [False, False, True, False]
    # assistant messages at 2, 4, 6, 8 (each followed by its tool message)
    assert [s.turn for s in steps] == [2, 4, 6, 8]
    assert [s.step_index for s in steps] == [0, 1, 2, 3]
    assert steps[2] == StepReward(2, 6, p_half, -0.1, "R1", True)


def test_lambda_err_scales_the_penalty() -> None:
    steps = dense_rewards(_four_steps(), lambda_err=0.5)
    assert steps[2].reward == -0.5
    with pytest.raises(ValueError, match="lambda_err"):
        dense_rewards(_four_steps(), lambda_err=-0.1)


def test_errors_without_a_rule_are_not_policy_violations_by_default() -> None:
    # D0 = 2: a malformed call (no rule, state unchanged at 2), then one reaching the target
    traj = make_traj(2, [[Call(2, code="INVALID_ARGUMENTS")], [Call(0)]], reward=1.0)
    plain = dense_rewards(traj)
    assert [s.reward for s in plain] == [0.0, 1.0 - (1 - 2 / (2 + EPS))]  # [0, ~1]
    assert plain[0].violated_rule is None and not plain[0].penalized
    strict = dense_rewards(traj, lambda_err=0.1, penalize_all_errors=True)
    assert strict[0].reward == -0.1 and strict[0].penalized
    assert strict[0].violated_rule is None
    assert strict[1].reward == plain[1].reward


def test_moving_away_from_the_target_is_negative() -> None:
    # D0 = 4, eps = 0 for exact arithmetic: distances [1, 3] -> P = [.75, .25], r = [.75, -.5]
    steps = dense_rewards(make_traj(4, [[Call(1)], [Call(3)]], reward=0.0), eps=0.0)
    assert [s.reward for s in steps] == [0.75, -0.5]


def test_dense_rewards_of_a_refusal_task() -> None:
    # D0 = 0: a read (distance 0), a rejected write (R9), a write that went through (distance 2)
    traj = make_traj(0, [[Call(0)], [Call(0, rule="R9")], [Call(2)]], reward=None)
    steps = dense_rewards(traj)
    assert [s.proximity for s in steps] == [1.0, 1.0, 0.0]  # P_0 = 1
    assert [s.reward for s in steps] == [0.0, -0.1, -1.0]
    assert final_reward(traj) == 0.0


def test_missing_distance_is_an_error() -> None:
    traj = make_traj(4, [[Call(2)], [Call(None)]], reward=1.0, final_distance=0)
    with pytest.raises(ValueError, match=r"step 1 .*no recorded distance"):
        dense_rewards(traj)
    with pytest.raises(ValueError, match="no recorded distance"):
        ta_grpo_advantages([traj, make_traj(4, [[Call(0)]], reward=0.0)])


def test_no_steps_no_rewards() -> None:
    traj = make_traj(3, [], reward=0.0, final_distance=3)
    assert dense_rewards(traj) == []
    assert turn_rewards(traj) == {}


# -- per-turn -----------------------------------------------------------------------------


def _multi_call_turn() -> Trajectory:
    # D0 = 4, eps = 0. Turn 2: a violation (R1), progress to 2, a violation (R2): r = -.1, .5, -.1
    # Turn 6 (after 3 tool messages): reaches 0: r = .5
    return make_traj(
        4,
        [[Call(4, rule="R1"), Call(2), Call(2, rule="R2")], [Call(0)]],
        reward=1.0,
    )


def test_turn_rewards_sum_and_min_per_assistant_turn() -> None:
    traj = _multi_call_turn()
    assert [s.turn for s in dense_rewards(traj)] == [2, 2, 2, 6]
    assert turn_rewards(traj, eps=0.0) == {2: pytest.approx(-0.1 + 0.5 - 0.1), 6: 0.5}
    assert min_step_reward_per_turn(traj, eps=0.0) == {2: -0.1, 6: 0.5}


def test_steps_recorded_against_a_tool_message_belong_to_the_assistant_turn() -> None:
    # The episode loop may record a message's second call against the first call's tool message.
    traj = _multi_call_turn()
    steps = [s.model_copy(update={"turn": 2 + i}) for i, s in enumerate(traj.steps[:3])]
    shifted = traj.model_copy(update={"steps": [*steps, traj.steps[3]]})
    assert [s.turn for s in dense_rewards(shifted)] == [2, 2, 2, 6]


# -- GRPO -----------------------------------------------------------------------------------


def test_grpo_advantages_by_hand() -> None:
    # R = [1, 1, 1, 0]: mean = .75; deviations .25, .25, .25, -.75; sum of squares = .75
    # sample std (ddof=1) = sqrt(.75 / 3) = .5  ->  A = [.5, .5, .5, -1.5]
    adv = grpo_advantages([1.0, 1.0, 1.0, 0.0])
    assert adv == [0.25 / (0.5 + EPS)] * 3 + [-0.75 / (0.5 + EPS)]
    assert adv == pytest.approx([0.5, 0.5, 0.5, -1.5], abs=1e-5)
    # population std (ddof=0) = sqrt(.75 / 4) = sqrt(3)/4  ->  A = [1/sqrt(3)] * 3 + [-sqrt(3)]
    pop = grpo_advantages([1.0, 1.0, 1.0, 0.0], ddof=0)
    assert pop == pytest.approx([1 / math.sqrt(3)] * 3 + [-math.sqrt(3)], abs=1e-5)
    assert sum(adv) == pytest.approx(0.0, abs=1e-12)


def test_grpo_advantages_of_an_all_equal_group_are_zero() -> None:
    assert grpo_advantages([1.0, 1.0, 1.0]) == [0.0, 0.0, 0.0]
    assert grpo_advantages([0.0, 0.0]) == [0.0, 0.0]
    assert grpo_advantages([0.1, 0.1, 0.1]) == [0.0, 0.0, 0.0]  # no 0/eps float noise
    assert grpo_advantages([1.0]) == [0.0]
    with pytest.raises(ValueError):
        grpo_advantages([])
    with pytest.raises(ValueError):
        grpo_advantages([1.0, 0.0], ddof=2)


# -- TA-GRPO --------------------------------------------------------------------------------


def _group() -> list[Trajectory]:
    # D0 = 4 for all. R_final = [1, 1, 1, 0] -> A = [.5, .5, .5, -1.5] (see above)
    violating = make_traj(  # succeeds, but its turn 4 call violates R1: r = [.5, -.1, .5]
        4, [[Call(2)], [Call(2, rule="R1")], [Call(0)]], reward=1.0, trial=0
    )
    clean = make_traj(4, [[Call(2)], [Call(0)]], reward=1.0, trial=1)  # r = [.5, .5]
    chatty = make_traj(4, [[], [Call(0)]], reward=1.0, trial=2)  # turn 2 speaks, no call
    failed = make_traj(4, [[Call(2)], [Call(3)]], reward=0.0, trial=3)  # r = [.5, -.25]
    return [violating, clean, chatty, failed]


def test_ta_grpo_penalizes_only_the_violating_turn_of_a_successful_trajectory() -> None:
    group = _group()
    a = grpo_advantages([1.0, 1.0, 1.0, 0.0])
    adv = ta_grpo_advantages(group, lambda_err=0.1)
    # violating: assistant messages 2, 4, 6 (calls) and 8 (closing text)
    assert adv[0] == {2: a[0], 4: a[0] - 0.1, 6: a[0], 8: a[0]}
    assert adv[0][4] < a[0]
    assert adv[0][4] == pytest.approx(0.5 - 0.1, abs=1e-5)
    # the others' turns are exactly their group advantage A_i (r_t >= 0: no bonus)
    assert adv[1] == {2: a[1], 4: a[1], 6: a[1]}
    assert adv[2] == {2: a[2], 3: a[2], 5: a[2]}  # a text turn at 2, its call at 3, text at 5
    # failed: turn 4 moved the state away (d 2 -> 3): r = (1 - 3/(4+eps)) - (1 - 2/(4+eps))
    r_away = (1 - 3 / (4 + EPS)) - (1 - 2 / (4 + EPS))
    assert adv[3] == {2: a[3], 4: a[3] + r_away, 6: a[3]}
    assert adv[3][4] == pytest.approx(-1.5 - 0.25, abs=1e-5)


def test_ta_grpo_multi_call_turn_reductions() -> None:
    # one trajectory with the multi-call turn (r = -.1, +.5, -.1 at message 2), one failure
    group = [_multi_call_turn(), make_traj(4, [[Call(4)]], reward=0.0, trial=1)]
    a = grpo_advantages([1.0, 0.0])  # mean .5, sample std sqrt(.5) -> +-.5/sqrt(.5)
    assert a == pytest.approx([math.sqrt(0.5), -math.sqrt(0.5)], abs=1e-5)
    per_call = ta_grpo_advantages(group, reduce="per_call", eps=0.0)[0]
    turn_sum = ta_grpo_advantages(group, reduce="turn_sum", eps=0.0)[0]
    turn_min = ta_grpo_advantages(group, reduce="turn_min", eps=0.0)[0]
    base = grpo_advantages([1.0, 0.0], eps=0.0)[0]
    assert per_call[2] == pytest.approx(base - 0.2)  # sum of the negative r: -.1 + -.1
    assert turn_sum[2] == base  # min(-.1 + .5 - .1, 0) = 0: progress offsets the violations
    assert turn_min[2] == pytest.approx(base - 0.1)  # the worst call only
    assert per_call[6] == turn_sum[6] == turn_min[6] == base


def test_ta_grpo_with_an_all_equal_group_keeps_only_the_penalties() -> None:
    group = [
        make_traj(4, [[Call(2, rule="R1")], [Call(0)]], reward=1.0),
        make_traj(4, [[Call(0)]], reward=1.0, trial=1),
    ]
    adv = ta_grpo_advantages(group, lambda_err=0.2)
    assert adv == [{2: -0.2, 4: 0.0, 6: 0.0}, {2: 0.0, 4: 0.0}]


def test_ta_grpo_refuses_mixed_or_empty_groups() -> None:
    with pytest.raises(ValueError, match="one task"):
        ta_grpo_advantages(
            [make_traj(4, [], reward=1.0), make_traj(4, [], reward=0.0, task_id="t2")]
        )
    with pytest.raises(ValueError):
        ta_grpo_advantages([])


# -- dynamic filtering ----------------------------------------------------------------------


def test_filter_groups_drops_groups_without_signal_and_keeps_order() -> None:
    groups = {
        "d": [1.0, 1.0, 1.0, 0.0],  # mean .75
        "a": [1.0, 1.0, 1.0],  # all succeed
        "b": [0.0, 1.0, 0.0, 1.0],  # mean .5
        "c": [0.0, 0.0],  # all fail
        "e": [],
    }
    result = filter_groups(groups)
    assert result.kept == ["d", "b"]
    assert set(result.dropped) == {"a", "c", "e"}
    assert "equal" in result.dropped["a"] and "equal" in result.dropped["c"]
    assert result.dropped["e"] == "empty group"


def test_filter_groups_max_mean() -> None:
    groups = {"d": [1.0, 1.0, 1.0, 0.0], "a": [1.0, 1.0], "b": [0.0, 1.0, 0.0, 1.0]}
    result = filter_groups(groups, max_mean=0.7)  # .75 > .7 drops d; .5 stays
    assert result.kept == ["b"]
    assert "max_mean" in result.dropped["d"]
    assert "equal" in result.dropped["a"]  # the all-equal reason comes first
    assert filter_groups(groups, max_mean=0.75).kept == ["d", "b"]  # mean == max_mean stays


# -- breakdown ------------------------------------------------------------------------------


def test_reward_breakdown() -> None:
    b = reward_breakdown(_four_steps())
    p0 = 1 - 4 / (4 + EPS)
    p_half = 1 - 2 / (4 + EPS)
    assert b["final"] == 1.0
    assert b["initial_distance"] == 4 and b["final_distance"] == 0
    assert b["proximity"] == [p0, p0, p_half, p_half, 1.0]
    assert b["dense"] == pytest.approx([0.0, 0.5, -0.1, 0.5], abs=1e-6)
    # sum r = (P_T - P_0) - lambda_err - (the progress the rejected call did not make: 0)
    assert b["dense_sum"] == pytest.approx((1.0 - p0) - 0.1)
    assert b["turn_rewards"] == {2: 0.0, 4: b["dense"][1], 6: -0.1, 8: b["dense"][3]}
    assert b["violations"] == 1 and b["violated_rules"] == ["R1"] and b["penalties"] == 1
    assert b["steps"][2] == {
        "step_index": 2,
        "turn": 6,
        "proximity": p_half,
        "reward": -0.1,
        "violated_rule": "R1",
        "penalized": True,
    }
