"""The episode loop: the user talks, the agent calls tools, the environment answers (async).

The environment side is an :class:`~veritask.task.EnvSession` over the task.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from veritask.agent import STOP, Agent, User
from veritask.env import CompiledDomain
from veritask.model import Usage
from veritask.task import EnvSession, EpisodeEnd, Session, StopReason, TaskPackage, Trajectory


@dataclass
class EpisodeLimits:
    """When an episode ends even if the user has not said stop."""

    max_turns: int = 30
    """User turns."""
    max_steps_per_turn: int = 50
    """Assistant messages (tool calls) between two user turns."""
    max_consecutive_tool_errors: int = 8


@dataclass
class EpisodeTask:
    """Everything an episode needs about one task: the package, its policy and its two states."""

    package: TaskPackage
    domain: CompiledDomain
    policy: str
    origin: bytes
    target: bytes


SessionFactory = Callable[[EpisodeTask, int, int], Session]
"""Builds the environment side of an episode from its task, trial and episode seed (the default
is an :class:`~veritask.task.EnvSession` over the task's SQLite states)."""


def real_session(task: EpisodeTask, _trial: int = 0, _seed: int = 0) -> Session:
    """The SQLite environment over the task's s_origin, measured against its s_target."""
    return EnvSession.for_task(task.package, task.domain, task.origin, task.target)


class _Runner:
    def __init__(
        self, task: EpisodeTask, agent: Agent, user: User, limits: EpisodeLimits, session: Session
    ) -> None:
        self.agent = agent
        self.user = user
        self.limits = limits
        self.session = session
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": task.policy}]
        self.agent_usage = Usage()
        self.user_usage = Usage()
        self.errors_in_a_row = 0

    async def _tool_result(self, turn: int, call: dict[str, Any]) -> dict[str, Any]:
        message, result = await self.session.astep(call, turn)
        self.errors_in_a_row = 0 if result.ok else self.errors_in_a_row + 1
        return message

    async def agent_turn(self) -> StopReason | None:
        """Let the agent act until it speaks to the user; a stop reason when the episode must end."""
        for _ in range(self.limits.max_steps_per_turn):
            turn = await self.agent.respond(self.messages, self.session.tools)
            self.agent_usage.add(turn.usage)
            self.messages.append(turn.message)
            calls = turn.message.get("tool_calls") or []
            if not calls:
                return None
            turn_index = len(self.messages) - 1
            for call in calls:
                self.messages.append(await self._tool_result(turn_index, call))
            if self.errors_in_a_row >= self.limits.max_consecutive_tool_errors:
                return "tool_errors"
        return "max_turns"

    async def run(self) -> StopReason:
        opening = await self.user.open()
        self.user_usage.add(opening.usage)
        self.messages.append(opening.message)
        for _ in range(self.limits.max_turns):
            stop = await self.agent_turn()
            if stop is not None:
                return stop
            reply = await self.user.respond(self.messages)
            self.user_usage.add(reply.usage)
            if STOP in (reply.message.get("content") or ""):
                return "user_stop"
            self.messages.append(reply.message)
        return "max_turns"


async def run_episode(
    task: EpisodeTask,
    agent: Agent,
    user: User,
    *,
    trial: int = 0,
    seed: int = 0,
    limits: EpisodeLimits | None = None,
    session: Session | None = None,
) -> Trajectory:
    """Run one episode and record it as a Trajectory (the SQLite environment leaves ``reward``
    None for the verifier; a simulated environment's judge fills it in).

    The loop stops on the user's ``###STOP###``, after ``max_turns`` user turns, after too many
    consecutive tool errors, or when a role raises (``agent_error``, with the message kept).
    ``session`` is the environment side (default: :func:`real_session`).
    """
    runner = _Runner(task, agent, user, limits or EpisodeLimits(), session or real_session(task))
    error = None
    try:
        stop = await runner.run()
    except Exception as exc:  # a provider or script failure ends the episode, recorded
        stop, error = "agent_error", f"{type(exc).__name__}: {exc}"
    try:
        end = EpisodeEnd(
            messages=runner.messages,
            agent=agent.name,
            user=user.name,
            stop_reason=stop,
            trial=trial,
            seed=seed,
            agent_usage=runner.agent_usage,
            user_usage=runner.user_usage,
            error=error,
        )
        return await runner.session.atrajectory(end)
    finally:
        runner.session.close()
