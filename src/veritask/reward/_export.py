"""Turn-level rewards as lists aligned with the assistant turns, the shape trainers that credit
turns read (``trace.info["turn_rewards"]``: one float per assistant message, in order)."""

from __future__ import annotations

from collections.abc import Sequence

from veritask.reward._dense import (
    DEFAULT_LAMBDA_ERR,
    assistant_turns,
    dense_rewards,
    rewards_by_turn,
)
from veritask.reward._grpo import TurnReduce, ta_grpo_advantages
from veritask.task import Trajectory


def per_turn_rewards(traj: Trajectory, lambda_err: float = DEFAULT_LAMBDA_ERR) -> list[float]:
    """The dense reward of each assistant turn: the sum of r_t (P_t - P_{t-1}, or -lambda_err
    for a policy violation) over the calls it made; 0.0 for a turn without calls.

    Returns:
        One float per assistant message of ``traj.messages``, in order.
    """
    by_turn = rewards_by_turn(dense_rewards(traj, lambda_err))
    return [float(sum(by_turn.get(t, []))) for t in assistant_turns(traj)]


def per_turn_advantages(
    group: Sequence[Trajectory],
    lambda_err: float = DEFAULT_LAMBDA_ERR,
    *,
    reduce: TurnReduce = "per_call",
) -> list[list[float]]:
    """TA-GRPO advantages of a group of one task's rollouts, as lists aligned with each
    rollout's assistant messages (see :func:`ta_grpo_advantages`)."""
    out = []
    for traj, advantages in zip(
        group, ta_grpo_advantages(group, lambda_err, reduce=reduce), strict=True
    ):
        out.append([advantages[t] for t in assistant_turns(traj)])
    return out
