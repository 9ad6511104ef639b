"""LOGIGEN's state rewards (section 4.2): R_final, state proximity P_t and dense rewards r_t.

Everything here reads a recorded :class:`~veritask.task.Trajectory`; nothing re-runs. The
proximity function itself lives in ``veritask.env`` (next to DIFF) and is re-exported here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from veritask.env import DEFAULT_EPS, proximity
from veritask.task import ToolStep, Trajectory

DEFAULT_LAMBDA_ERR = 0.1
"""Default penalty coefficient lambda_err (> 0) for a call that violated policy."""


@dataclass(frozen=True)
class StepReward:
    """The dense reward of one tool call.

    Attributes:
        step_index: Index of the call in ``Trajectory.steps``.
        turn: Index of the assistant message (in ``Trajectory.messages``) that made the call.
        proximity: P_t, the state proximity after the call.
        reward: r_t, ``P_t - P_{t-1}``, or ``-lambda_err`` for a penalized call.
        violated_rule: The policy rule the call violated (from its structured error), else None.
        penalized: True when ``reward`` is the ``-lambda_err`` penalty.
    """

    step_index: int
    turn: int
    proximity: float
    reward: float
    violated_rule: str | None
    penalized: bool = False


def final_reward(traj: Trajectory) -> float:
    """R_final = I[DIFF(s_final, s_target) = 0], LOGIGEN's binary success.

    The verifier's verdict wins: 1.0 when ``traj.reward == 1.0`` and 0.0 for any other verdict.
    An unverified trajectory (``traj.reward is None``) falls back to ``final_distance == 0``.

    Args:
        traj: A recorded trajectory.

    Returns:
        1.0 or 0.0.
    """
    if traj.reward is not None:
        return 1.0 if traj.reward == 1.0 else 0.0
    return 1.0 if traj.final_distance == 0 else 0.0


def violated_rule(step: ToolStep) -> str | None:
    """The policy rule a rejected call violated (its structured error's ``violated_rule``)."""
    if step.ok or not step.error:
        return None
    rule = step.error.get("violated_rule")
    return str(rule) if rule else None


def _is_penalized(step: ToolStep, penalize_all_errors: bool) -> bool:
    if step.ok:
        return False
    return penalize_all_errors or violated_rule(step) is not None


def assistant_turn(traj: Trajectory, step: ToolStep) -> int:
    """The index of the assistant message that made ``step``.

    ``step.turn`` is that index by contract. When it points at a non-assistant message (a tool
    result recorded after an earlier call of the same message), the nearest assistant message
    before it is used instead; with no messages recorded, ``step.turn`` is returned as is.
    """
    turn = step.turn
    if not 0 <= turn < len(traj.messages):
        return turn
    for index in range(turn, -1, -1):
        if traj.messages[index].get("role") == "assistant":
            return index
    return turn


def _require_distance(traj: Trajectory, index: int, step: ToolStep) -> int:
    if step.distance is None:
        raise ValueError(
            f"trajectory {traj.task_id!r} (trial {traj.trial}, seed {traj.seed}): step {index} "
            f"({step.tool!r}) has no recorded distance; dense rewards need ToolStep.distance "
            "for every call"
        )
    return step.distance


def _check_lambda(lambda_err: float) -> None:
    if lambda_err < 0:
        raise ValueError(f"lambda_err must be >= 0, got {lambda_err}")


def dense_rewards(
    traj: Trajectory,
    lambda_err: float = DEFAULT_LAMBDA_ERR,
    *,
    penalize_all_errors: bool = False,
    eps: float = DEFAULT_EPS,
) -> list[StepReward]:
    """LOGIGEN's dense incremental reward (eq. 4), one per tool call.

    ``r_t = P_t - P_{t-1}`` if execution succeeds, ``-lambda_err`` if a policy violation occurs.
    P_0 is the proximity of s_origin (``traj.initial_distance``) and P_t that of the recorded
    ``distance`` after call t. A *policy violation* is a rejected call whose structured error
    names a ``violated_rule`` (a compiled policy rule rolled the write back). Other rejected
    calls (malformed arguments, unknown tools, schema errors) leave the state unchanged and so
    get ``P_t - P_{t-1}`` (normally 0), unless ``penalize_all_errors`` is set, which penalizes
    every rejected call. The proximity chain always follows the recorded distances, so a
    penalized call does not shift the baseline of the next one.

    Args:
        traj: A recorded trajectory whose steps all carry ``distance``.
        lambda_err: Penalty coefficient (the paper takes lambda_err > 0; 0 disables it).
        penalize_all_errors: Penalize every rejected call, not only policy violations.
        eps: Proximity smoothing term.

    Returns:
        One :class:`StepReward` per ``traj.steps`` entry, in order.

    Raises:
        ValueError: If a step has no recorded distance, or ``lambda_err < 0``.
    """
    _check_lambda(lambda_err)
    d0 = traj.initial_distance
    previous = proximity(d0, d0, eps)
    out: list[StepReward] = []
    for index, step in enumerate(traj.steps):
        current = proximity(_require_distance(traj, index, step), d0, eps)
        penalized = _is_penalized(step, penalize_all_errors)
        reward = -lambda_err if penalized else current - previous
        out.append(
            StepReward(
                step_index=index,
                turn=assistant_turn(traj, step),
                proximity=current,
                reward=reward,
                violated_rule=violated_rule(step),
                penalized=penalized,
            )
        )
        previous = current
    return out


def rewards_by_turn(steps: Iterable[StepReward]) -> dict[int, list[float]]:
    """Group step rewards by the assistant turn that made the calls (turns in first-seen order)."""
    out: dict[int, list[float]] = {}
    for step in steps:
        out.setdefault(step.turn, []).append(step.reward)
    return out


def turn_rewards(
    traj: Trajectory,
    lambda_err: float = DEFAULT_LAMBDA_ERR,
    *,
    penalize_all_errors: bool = False,
    eps: float = DEFAULT_EPS,
) -> dict[int, float]:
    """Dense rewards summed per assistant turn: ``R_turn = sum of r_t over the turn's calls``.

    Only turns that made tool calls appear. Arguments as in :func:`dense_rewards`.
    """
    steps = dense_rewards(traj, lambda_err, penalize_all_errors=penalize_all_errors, eps=eps)
    return {turn: sum(rs) for turn, rs in rewards_by_turn(steps).items()}


def min_step_reward_per_turn(
    traj: Trajectory,
    lambda_err: float = DEFAULT_LAMBDA_ERR,
    *,
    penalize_all_errors: bool = False,
    eps: float = DEFAULT_EPS,
) -> dict[int, float]:
    """The worst dense reward among each assistant turn's calls: ``min of r_t over the turn``.

    Only turns that made tool calls appear. Arguments as in :func:`dense_rewards`.
    """
    steps = dense_rewards(traj, lambda_err, penalize_all_errors=penalize_all_errors, eps=eps)
    return {turn: min(rs) for turn, rs in rewards_by_turn(steps).items()}


def assistant_turns(traj: Trajectory) -> list[int]:
    """Indices of the assistant messages in ``traj.messages``."""
    return [i for i, m in enumerate(traj.messages) if m.get("role") == "assistant"]
