"""One summary dict of a trajectory's rewards, for trainer integrations and reports."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from veritask.env import DEFAULT_EPS, proximity
from veritask.reward._dense import (
    DEFAULT_LAMBDA_ERR,
    dense_rewards,
    final_reward,
    rewards_by_turn,
)
from veritask.task import Trajectory


def reward_breakdown(
    traj: Trajectory,
    lambda_err: float = DEFAULT_LAMBDA_ERR,
    *,
    penalize_all_errors: bool = False,
    eps: float = DEFAULT_EPS,
) -> dict[str, Any]:
    """Summarize a trajectory's state rewards as a JSON-ready dict.

    Keys: ``final`` (R_final), ``initial_distance`` (D0), ``final_distance``, ``proximity``
    ([P_0, P_1, ..., P_T], P_0 from s_origin), ``dense`` (r_t per call), ``dense_sum``,
    ``turn_rewards`` (assistant message index -> summed r_t), ``steps`` (every
    :class:`StepReward` as a dict), ``violations`` (calls that violated a policy rule),
    ``violated_rules`` (their rule ids, in order) and ``penalties`` (calls given -lambda_err).

    Args:
        traj: A recorded trajectory whose steps all carry ``distance``.
        lambda_err: Dense-reward penalty for a policy violation.
        penalize_all_errors: Penalize every rejected call, not only policy violations.
        eps: Proximity smoothing term.

    Raises:
        ValueError: If a step has no recorded distance.
    """
    steps = dense_rewards(traj, lambda_err, penalize_all_errors=penalize_all_errors, eps=eps)
    d0 = traj.initial_distance
    rules = [s.violated_rule for s in steps if s.violated_rule is not None]
    return {
        "final": final_reward(traj),
        "initial_distance": d0,
        "final_distance": traj.final_distance,
        "proximity": [proximity(d0, d0, eps)] + [s.proximity for s in steps],
        "dense": [s.reward for s in steps],
        "dense_sum": sum(s.reward for s in steps),
        "turn_rewards": {t: sum(rs) for t, rs in rewards_by_turn(steps).items()},
        "steps": [asdict(s) for s in steps],
        "violations": len(rules),
        "violated_rules": rules,
        "penalties": sum(s.penalized for s in steps),
    }
