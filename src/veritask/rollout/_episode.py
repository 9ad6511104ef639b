"""The episode loop: the user talks, the agent calls tools, the environment answers (async)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from veritask.agent import STOP, Agent, User
from veritask.env import CompiledDomain, Environment, Snapshot, ToolResult, diff
from veritask.model import Usage
from veritask.task import StopReason, TaskPackage, ToolStep, Trajectory


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


def execute_call(
    env: Environment, target: Snapshot, call: dict[str, Any], turn: int
) -> tuple[ToolStep, dict[str, Any], ToolResult]:
    """Run one OpenAI-style tool call against ``env``: the recorded step (with its distance to
    ``target``), the tool message to send back, and the environment's result. Malformed arguments are passed through as
    the raw string, so the environment answers with a structured ``INVALID_ARGUMENTS`` error."""
    fn = call.get("function") or {}
    name, raw = str(fn.get("name", "")), fn.get("arguments") or "{}"
    raw_text = raw if isinstance(raw, str) else json.dumps(raw)
    call_id = str(call.get("id", ""))
    result = env.call(name, raw_text)
    try:
        parsed = json.loads(raw_text)
    except json.JSONDecodeError:
        parsed = None
    spec = env.tools.get(name)
    error = result.error.to_json() if result.error else None
    step = ToolStep(
        turn=turn,
        call_id=call_id,
        tool=name,
        args=parsed if isinstance(parsed, dict) else None,
        raw_arguments=raw_text,
        ok=result.ok,
        result=result.result,
        error=error,
        writes=bool(spec and spec.writes),
        distance=env.distance(target),
    )
    payload = result.result if result.ok else {"error": error}
    message = {"role": "tool", "tool_call_id": call_id, "content": json.dumps(payload, default=str)}
    return step, message, result


class _Runner:
    def __init__(self, task: EpisodeTask, agent: Agent, user: User, limits: EpisodeLimits) -> None:
        self.task = task
        self.agent = agent
        self.user = user
        self.limits = limits
        self.env = Environment(task.domain, task.origin)
        self.target = Snapshot(task.target, task.domain.layout)
        self.tools = self.env.openai_tools()
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": task.policy}]
        self.steps: list[ToolStep] = []
        self.agent_usage = Usage()
        self.user_usage = Usage()
        self.errors_in_a_row = 0

    def _tool_result(self, turn: int, call: dict[str, Any]) -> dict[str, Any]:
        step, message, _ = execute_call(self.env, self.target, call, turn)
        self.steps.append(step)
        self.errors_in_a_row = 0 if step.ok else self.errors_in_a_row + 1
        return message

    async def agent_turn(self) -> StopReason | None:
        """Let the agent act until it speaks to the user; a stop reason when the episode must end."""
        for _ in range(self.limits.max_steps_per_turn):
            turn = await self.agent.respond(self.messages, self.tools)
            self.agent_usage.add(turn.usage)
            self.messages.append(turn.message)
            calls = turn.message.get("tool_calls") or []
            if not calls:
                return None
            turn_index = len(self.messages) - 1
            for call in calls:
                self.messages.append(self._tool_result(turn_index, call))
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
) -> Trajectory:
    """Run one episode and record it as a Trajectory (not yet verified: ``reward`` is None).

    The loop stops on the user's ``###STOP###``, after ``max_turns`` user turns, after too many
    consecutive tool errors, or when a role raises (``agent_error``, with the message kept).
    """
    runner = _Runner(task, agent, user, limits or EpisodeLimits())
    origin = Snapshot(task.origin, task.domain.layout)
    error = None
    try:
        stop = await runner.run()
    except Exception as exc:  # a provider or script failure ends the episode, recorded
        stop, error = "agent_error", f"{type(exc).__name__}: {exc}"
    final = runner.env.snapshot()
    trajectory = Trajectory(
        task_id=task.package.id,
        domain=task.package.domain,
        trial=trial,
        seed=seed,
        agent=agent.name,
        user=user.name,
        messages=runner.messages,
        tools=runner.tools,
        steps=runner.steps,
        stop_reason=stop,
        initial_distance=diff(origin, runner.target).distance,
        final_distance=runner.env.distance(runner.target),
        agent_diff=diff(origin, final).to_json(),
        agent_usage=runner.agent_usage,
        user_usage=runner.user_usage,
        error=error,
    )
    runner.env.close()
    return trajectory
