"""User-simulator SFT data: the user's side of verified trajectories.

A user simulator is trained on what the user said in trajectories that reached their target.
The row is the conversation as the user model sees it (:func:`veritask.agent.flip_roles`): the
system prompt is the user-simulator prompt built from the task's hidden profile and instruction
(:func:`veritask.agent.user_system_prompt`), the assistant's greeting and replies are the
inputs, and the user's turns are the targets (the ``assistant`` role of the row). The agent's
tool traffic and the policy prompt are not shown, as they are not shown to the user simulator;
the user's own tool calls (dual control) are, as the user's tool calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from veritask.agent import USER_OPENING, flip_roles, user_system_prompt
from veritask.domains import load_domain
from veritask.policy import DomainSpec, build_tools, user_tool_names
from veritask.task import TaskPackage, Trajectory


def user_view(traj: Trajectory, package: TaskPackage, spec: DomainSpec | None = None) -> Trajectory:
    """The trajectory as the user simulator sees it: the hidden profile as system prompt, the
    assistant's words as inputs and the user's turns as targets. The agent's tools are not
    shown; in a domain that gives the user tools of their own (dual control) the user's calls
    are targets too, and the row offers the user's tool schemas.

    Args:
        traj: A trajectory of ``package``.
        package: Its task (the user profile and instruction).
        spec: The domain (for the user's tool schemas); by default the built-in domain the
            package names, if there is one.

    Raises:
        ValueError: The trajectory is of another task.
    """
    if traj.task_id != package.id:
        raise ValueError(f"trajectory of {traj.task_id!r} paired with package {package.id!r}")
    turns = flip_roles(traj.messages)
    tools = _user_tool_schemas(package, spec) if _has_user_calls(turns) else []
    messages = [
        {"role": "system", "content": user_system_prompt(package, tools)},
        {"role": "user", "content": USER_OPENING},
        *turns,
    ]
    steps = [s for s in traj.steps if s.by == "user"]
    return traj.model_copy(update={"messages": messages, "tools": tools, "steps": steps})


def _has_user_calls(messages: list[dict[str, Any]]) -> bool:
    return any(m["role"] == "assistant" and m.get("tool_calls") for m in messages)


def _user_tool_schemas(package: TaskPackage, spec: DomainSpec | None) -> list[dict[str, Any]]:
    """OpenAI schemas of the user's own tools ([] when the domain cannot be found)."""
    if spec is None:
        try:
            spec = load_domain(package.domain)
        except ValueError:
            return []
    mine = user_tool_names(spec)
    return [t.openai_schema() for name, t in build_tools(spec).items() if name in mine]


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
