"""Rewards and advantages computed from recorded trajectories (nothing re-runs).

LOGIGEN's state rewards: binary R_final, state proximity P_t and the dense incremental reward
r_t (section 4.2); GRPO and Turn-aware GRPO advantages (4.3); AReaL-SEA's dynamic filtering of
groups with no relative signal (section 5).
"""

from veritask.env import DEFAULT_EPS, proximity
from veritask.reward._breakdown import reward_breakdown
from veritask.reward._dense import (
    DEFAULT_LAMBDA_ERR,
    StepReward,
    assistant_turn,
    assistant_turns,
    dense_rewards,
    final_reward,
    min_step_reward_per_turn,
    rewards_by_turn,
    turn_rewards,
    violated_rule,
)
from veritask.reward._export import per_turn_advantages, per_turn_rewards
from veritask.reward._grpo import (
    FilterResult,
    TurnReduce,
    filter_groups,
    grpo_advantages,
    ta_grpo_advantages,
    turn_advantages,
)

__all__ = [
    "DEFAULT_EPS",
    "DEFAULT_LAMBDA_ERR",
    "FilterResult",
    "StepReward",
    "TurnReduce",
    "assistant_turn",
    "assistant_turns",
    "dense_rewards",
    "filter_groups",
    "final_reward",
    "grpo_advantages",
    "min_step_reward_per_turn",
    "per_turn_advantages",
    "per_turn_rewards",
    "proximity",
    "reward_breakdown",
    "rewards_by_turn",
    "ta_grpo_advantages",
    "turn_advantages",
    "turn_rewards",
    "violated_rule",
]
