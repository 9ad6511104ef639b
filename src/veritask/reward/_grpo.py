"""Group-relative advantages: GRPO, LOGIGEN's Turn-aware GRPO (4.3) and AReaL-SEA's filtering."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from veritask.env import DEFAULT_EPS
from veritask.reward._dense import (
    DEFAULT_LAMBDA_ERR,
    StepReward,
    assistant_turns,
    dense_rewards,
    final_reward,
    rewards_by_turn,
)
from veritask.task import Trajectory

TurnReduce = Literal["per_call", "turn_sum", "turn_min"]
"""How the calls of one assistant message make that turn's penalty (see ta_grpo_advantages)."""


def _all_equal(values: Sequence[float]) -> bool:
    return max(values) == min(values)


def _std(values: Sequence[float], mean: float, ddof: int) -> float:
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - ddof))


def grpo_advantages(rewards: Sequence[float], eps: float = 1e-6, *, ddof: int = 1) -> list[float]:
    """GRPO's group-relative advantage ``A_i = (R_i - mean(R)) / (std(R) + eps)``.

    The papers write ``std({R_i})`` without saying which; the default ``ddof=1`` is the sample
    (Bessel-corrected) standard deviation that ``torch.std`` gives, as in verl's
    ``compute_grpo_outcome_advantage`` (LOGIGEN trains on verl) and TRL. ``ddof=0`` is the
    population standard deviation. A group whose rewards are all equal, including a group of
    one, carries no relative signal: every advantage is 0.0 (not 0/eps noise).

    Args:
        rewards: The rewards of one group (one task's G rollouts).
        eps: Added to the standard deviation.
        ddof: Delta degrees of freedom of the standard deviation (1: sample, 0: population).

    Returns:
        One advantage per reward, in order.

    Raises:
        ValueError: On an empty group or a ddof outside {0, 1}.
    """
    if not rewards:
        raise ValueError("grpo_advantages needs a non-empty group")
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 or 1, got {ddof}")
    if _all_equal(rewards):
        return [0.0] * len(rewards)
    mean = sum(rewards) / len(rewards)
    std = _std(rewards, mean, ddof)
    return [(r - mean) / (std + eps) for r in rewards]


def _turn_penalty(rewards: Sequence[float], reduce: TurnReduce) -> float:
    """Delta A for one assistant turn whose calls earned ``rewards``."""
    if reduce == "per_call":
        return sum(min(r, 0.0) for r in rewards)
    if reduce == "turn_sum":
        return min(sum(rewards), 0.0)
    if reduce == "turn_min":
        return min(min(rewards), 0.0)
    raise ValueError(f"unknown turn reduce {reduce!r}")


def turn_advantages(
    traj: Trajectory, advantage: float, steps: Sequence[StepReward], reduce: TurnReduce
) -> dict[int, float]:
    """``A_it = A_i + Delta A_it`` for every assistant turn of one trajectory.

    Turns with no tool call get ``A_i``; the others get ``A_i`` plus their negative dense reward.
    """
    per_turn = rewards_by_turn(steps)
    turns = sorted(set(assistant_turns(traj)) | set(per_turn))
    return {
        t: advantage + (_turn_penalty(per_turn[t], reduce) if t in per_turn else 0.0) for t in turns
    }


def _check_group(group: Sequence[Trajectory]) -> None:
    if not group:
        raise ValueError("ta_grpo_advantages needs a non-empty group")
    tasks = sorted({t.task_id for t in group})
    if len(tasks) > 1:
        raise ValueError(f"a GRPO group holds rollouts of one task, got tasks {tasks}")


def ta_grpo_advantages(
    group: Sequence[Trajectory],
    lambda_err: float = DEFAULT_LAMBDA_ERR,
    *,
    penalize_all_errors: bool = False,
    reduce: TurnReduce = "per_call",
    eps: float = DEFAULT_EPS,
    ddof: int = 1,
) -> list[dict[int, float]]:
    """LOGIGEN's Turn-aware GRPO: ``A_it = A_i + Delta A_it``, ``Delta A_it = min(r_t, 0)``.

    ``A_i`` is the GRPO advantage of trajectory i over the group's R_final
    (:func:`grpo_advantages`). The paper's ``Delta A_it`` is ``r_t`` if ``r_t < 0`` else 0
    ("we do not provide additional positive bonuses"), with r_t the dense reward of eq. 4.
    In the paper one agent turn is one action, so r_t is a per-call value. Here an assistant
    message may make several calls; ``reduce`` says how they combine:

    * ``"per_call"`` (default, the paper's per-action rule): ``Delta A = sum_k min(r_k, 0)``,
      each harmful call's penalty lands on the message that made it; progress made by another
      call of the same message never cancels a violation.
    * ``"turn_sum"``: ``Delta A = min(sum_k r_k, 0)`` (the per-turn sum of :func:`turn_rewards`).
    * ``"turn_min"``: ``Delta A = min(min_k r_k, 0)`` (the worst call only).

    With one call per message all three equal the paper's ``min(r_t, 0)``.

    Args:
        group: One task's G rollouts.
        lambda_err: Dense-reward penalty for a policy violation.
        penalize_all_errors: Penalize every rejected call, not only policy violations.
        reduce: Per-message aggregation of the calls' dense rewards (see above).
        eps: Added to the group's standard deviation, and proximity smoothing.
        ddof: Standard deviation's delta degrees of freedom (see :func:`grpo_advantages`).

    Returns:
        Per trajectory, in group order: assistant message index -> advantage, for every
        assistant message in ``messages`` and every turn that made a recorded call.

    Raises:
        ValueError: On an empty group, mixed tasks, or a step without a recorded distance.
    """
    _check_group(group)
    advantages = grpo_advantages([final_reward(t) for t in group], eps, ddof=ddof)
    out: list[dict[int, float]] = []
    for traj, advantage in zip(group, advantages, strict=True):
        steps = dense_rewards(traj, lambda_err, penalize_all_errors=penalize_all_errors, eps=eps)
        out.append(turn_advantages(traj, advantage, steps, reduce))
    return out


@dataclass(frozen=True)
class FilterResult:
    """Which groups dynamic filtering kept (in input order) and why the others were dropped."""

    kept: list[str] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)


def _drop_reason(rewards: Sequence[float], max_mean: float | None) -> str | None:
    if not rewards:
        return "empty group"
    if _all_equal(rewards):
        return f"all {len(rewards)} rewards equal {rewards[0]!r}: zero advantage"
    mean = sum(rewards) / len(rewards)
    if max_mean is not None and mean > max_mean:
        return f"mean reward {mean:.4g} > max_mean {max_mean:.4g}"
    return None


def filter_groups(
    groups: Mapping[str, Sequence[float]], *, max_mean: float | None = None
) -> FilterResult:
    """AReaL-SEA's dynamic filtering of GRPO groups (section 5).

    "Tasks where all G sampled trajectories have identical rewards (all succeed or all fail)
    provide no learning signal, as A = 0 for all trajectories in such groups. We exclude such
    tasks from each training batch." Those groups (and empty ones) are dropped. Optionally,
    groups whose mean reward exceeds ``max_mean`` (too easy to teach much) are dropped too.

    Args:
        groups: Group key (e.g. task id) -> the group's rewards.
        max_mean: Drop groups with ``mean(rewards) > max_mean``; None keeps them.

    Returns:
        The kept keys in input order, and dropped key -> reason.
    """
    result = FilterResult()
    for key, rewards in groups.items():
        reason = _drop_reason(rewards, max_mean)
        if reason is None:
            result.kept.append(key)
        else:
            result.dropped[key] = reason
    return result
