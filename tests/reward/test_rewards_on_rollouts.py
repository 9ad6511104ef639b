"""Rewards of real recorded episodes: oracle and random agents on generated travel tasks."""

from __future__ import annotations

import asyncio

import pytest

from veritask.pipeline import run_batch
from veritask.reward import (
    assistant_turns,
    dense_rewards,
    filter_groups,
    final_reward,
    grpo_advantages,
    proximity,
    reward_breakdown,
    ta_grpo_advantages,
)
from veritask.rollout import RoleFactory, TaskSource
from veritask.synth import generate
from veritask.task import Trajectory


@pytest.fixture(scope="module")
def rollouts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Trajectory]]:
    root = tmp_path_factory.mktemp("reward-rollouts")
    generate("travel", 8, 0, root)
    source = TaskSource.load(root)
    return {
        agent: asyncio.run(run_batch(source, RoleFactory(agent=agent), concurrency=4))
        for agent in ("oracle", "random")
    }


def test_dense_rewards_telescope_to_the_final_proximity(
    rollouts: dict[str, list[Trajectory]],
) -> None:
    for traj in rollouts["oracle"] + rollouts["random"]:
        steps = dense_rewards(traj)
        d0 = traj.initial_distance
        # sum r_t = P_T - P_0 - sum over penalized calls of (lambda_err + P_t - P_{t-1})
        # and a policy violation rolls back, so its P_t - P_{t-1} is 0
        penalties = [s for s in steps if s.penalized]
        end = steps[-1].proximity if steps else proximity(d0, d0)
        expected = end - proximity(d0, d0) - 0.1 * len(penalties)
        assert sum(s.reward for s in steps) == pytest.approx(expected, abs=1e-9), traj.task_id
        for s in steps:
            assert traj.messages[s.turn]["role"] == "assistant"


def test_oracle_trajectories_end_at_the_target(rollouts: dict[str, list[Trajectory]]) -> None:
    for traj in rollouts["oracle"]:
        assert final_reward(traj) == 1.0
        breakdown = reward_breakdown(traj)
        assert breakdown["proximity"][-1] == 1.0
        assert breakdown["violations"] == sum(
            1 for s in traj.steps if not s.ok and (s.error or {}).get("violated_rule")
        )


def test_ta_grpo_over_oracle_and_random_groups(rollouts: dict[str, list[Trajectory]]) -> None:
    by_task = {t.task_id: [t] for t in rollouts["oracle"]}
    for t in rollouts["random"]:
        by_task[t.task_id].append(t)
    kept = filter_groups(
        {task: [final_reward(t) for t in group] for task, group in by_task.items()}
    ).kept
    assert kept  # the random agent fails some task the oracle solves
    a_pass, a_fail = grpo_advantages([1.0, 0.0])
    penalized = 0
    for task in kept:
        oracle, random = by_task[task]
        assert [final_reward(oracle), final_reward(random)] == [1.0, 0.0]
        adv_oracle, adv_random = ta_grpo_advantages([oracle, random])
        for traj, adv, a in ((oracle, adv_oracle, a_pass), (random, adv_random, a_fail)):
            penalty = {turn: 0.0 for turn in assistant_turns(traj)}
            for s in dense_rewards(traj):
                penalty[s.turn] += min(s.reward, 0.0)
            assert adv == {turn: a + p for turn, p in penalty.items()}
        assert a_pass in adv_oracle.values()  # its clean turns keep the group advantage
        penalized += sum(v < a_pass for v in adv_oracle.values())
    assert penalized  # successful oracle runs that probed a violation are penalized there
