"""User-simulator SFT data: the user's side of verified trajectories.

A user simulator is trained on what the user said in trajectories that reached their target.
The row is the conversation as the user model sees it (:func:`veritask.agent.flip_roles`): the
system prompt is the user-simulator prompt built from the task's hidden profile and instruction
(:func:`veritask.agent.user_system_prompt`), the assistant's greeting and replies are the
inputs, and the user's turns are the targets (the ``assistant`` role of the row). Tool traffic
and the policy prompt are not shown, as they are not shown to the user simulator.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from veritask.agent import USER_OPENING, flip_roles, user_system_prompt
from veritask.task import TaskPackage, Trajectory


def user_view(traj: Trajectory, package: TaskPackage) -> Trajectory:
    """The trajectory as the user simulator sees it: the hidden profile as system prompt, the
    assistant's words as inputs and the user's turns as targets (no tools).

    Args:
        traj: A trajectory of ``package``.
        package: Its task (the user profile and instruction).

    Raises:
        ValueError: The trajectory is of another task.
    """
    if traj.task_id != package.id:
        raise ValueError(f"trajectory of {traj.task_id!r} paired with package {package.id!r}")
    messages = [
        {"role": "system", "content": user_system_prompt(package)},
        {"role": "user", "content": USER_OPENING},
        *flip_roles(traj.messages),
    ]
    return traj.model_copy(update={"messages": messages, "tools": [], "steps": []})


def user_views(
    trajs: Iterable[Trajectory], packages: Mapping[str, TaskPackage]
) -> list[Trajectory]:
    """:func:`user_view` of every trajectory that has at least one user turn.

    Raises:
        ValueError: A trajectory's task is not among ``packages``.
    """
    out: list[Trajectory] = []
    for traj in trajs:
        package = packages.get(traj.task_id)
        if package is None:
            raise ValueError(f"the task {traj.task_id!r} of a trajectory is not in the dataset")
        view = user_view(traj, package)
        if any(m["role"] == "assistant" for m in view.messages):
            out.append(view)
    return out


def packages_by_id(dataset: str | Path) -> dict[str, TaskPackage]:
    """The packages of a dataset directory, by id."""
    from veritask.task import load_dataset

    return {p.id: p for p in load_dataset(dataset, check_files=False)}
