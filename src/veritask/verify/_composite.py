"""The composite verifier: the product over a task's reward basis."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from veritask.task import TaskPackage
from veritask.verify._actions import actions
from veritask.verify._communicate import communicate
from veritask.verify._confirm import confirmation
from veritask.verify._state import state_exact, state_subset
from veritask.verify._verdict import ComponentResult, Verdict, VerificationError

if TYPE_CHECKING:
    from veritask.task import Trajectory

COMPONENTS = ("state_exact", "state_subset", "actions", "communicate", "confirmation")
"""Reward-basis names ``verify`` can evaluate."""


def _require(value: Any, component: str, argument: str) -> Any:
    if value is None:
        raise VerificationError(f"reward basis lists {component!r} but no {argument} was given")
    return value


def _evaluators(
    traj: Trajectory,
    package: TaskPackage,
    gold_diff: Mapping[str, Any] | None,
    facts: Sequence[str] | None,
) -> dict[str, Callable[[], ComponentResult]]:
    return {
        "state_exact": lambda: state_exact(traj),
        "state_subset": lambda: state_subset(
            traj, _require(gold_diff, "state_subset", "gold_diff")
        ),
        "actions": lambda: actions(traj, package.witness),
        "communicate": lambda: communicate(traj, _require(facts, "communicate", "facts")),
        "confirmation": lambda: confirmation(traj),
    }


def verify(
    traj: Trajectory,
    package: TaskPackage,
    *,
    gold_diff: Mapping[str, Any] | None = None,
    facts: Sequence[str] | None = None,
) -> Verdict:
    """Evaluate exactly the components of ``package.reward_basis``; reward = product of scores.

    Args:
        traj: The recorded episode of ``package``.
        package: The task; its ``reward_basis`` names the components.
        gold_diff: DIFF(s_origin, s_target) (``gold_diff_for``); needed by ``state_subset``.
        facts: Facts the agent must state; needed by ``communicate``.

    Returns:
        The verdict, one component result per basis name (duplicates evaluated once).

    Raises:
        VerificationError: For an empty basis, an unknown component name, a component whose
            inputs are missing, or a trajectory of another task. Nothing listed is skipped.
    """
    if traj.task_id != package.id:
        raise VerificationError(f"trajectory is of task {traj.task_id!r}, not {package.id!r}")
    basis = list(dict.fromkeys(package.reward_basis))
    if not basis:
        raise VerificationError(f"{package.id}: empty reward_basis, nothing to verify")
    unknown = [name for name in basis if name not in COMPONENTS]
    if unknown:
        raise VerificationError(
            f"{package.id}: unknown reward_basis component(s) {unknown}; known: {list(COMPONENTS)}"
        )
    evaluate = _evaluators(traj, package, gold_diff, facts)
    return Verdict.of([evaluate[name]() for name in basis])
