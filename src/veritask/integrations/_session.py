"""The episode API trainers build on: reset a task, call tools or step with messages, get rewards.

``VeritaskEnv`` is one rollout's environment: its own in-memory SQLite state (isolated from every
other rollout), the task's target, the tool schemas, a scripted user for the conversation side,
and a recorded Trajectory from which rewards are computed. ``EnvFactory`` is picklable, so a
trainer can ship it to worker processes and build environments there.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from veritask._util import loads_untrusted
from veritask.agent import STOP, ScriptedUser, Turn
from veritask.env import Environment, ToolResult
from veritask.integrations._compact import compact_policy, task_transactions
from veritask.rollout import EpisodeTask, TaskSource, score
from veritask.task import EnvSession, EpisodeEnd, TaskPackage, ToolStep, Trajectory


@dataclass(frozen=True)
class EnvFactory:
    """A picklable recipe for environments over one dataset directory."""

    dataset: str
    lambda_err: float = 0.1

    def __call__(self) -> VeritaskEnv:
        """A fresh, isolated environment."""
        return VeritaskEnv(self.dataset, lambda_err=self.lambda_err)


@functools.lru_cache(maxsize=16)
def dataset_source(dataset: str) -> TaskSource:
    """A dataset directory's tasks, loaded once per process and shared (read-only; the last
    16 directories are kept)."""
    return TaskSource.load(dataset)


def task_package(dataset: str | Path, task_id: str) -> TaskPackage:
    """The package of a task of a dataset directory.

    Raises:
        KeyError: No such task.
    """
    found = next((p for p in dataset_source(str(dataset)).packages if p.id == task_id), None)
    if found is None:
        raise KeyError(f"no task {task_id!r} in {dataset}")
    return found


@dataclass
class Observation:
    """What a policy sees after ``reset``: system prompt, first user message and tools."""

    task_id: str
    system: str
    user: str
    tools: list[dict[str, Any]]

    def messages(self) -> list[dict[str, Any]]:
        """The opening chat messages."""
        return [{"role": "system", "content": self.system}, {"role": "user", "content": self.user}]


@dataclass
class StepResult:
    """What ``step`` returns: new messages for the policy, the reward so far and whether it ended."""

    messages: list[dict[str, Any]]
    done: bool
    proximity: float


class VeritaskEnv:
    """One rollout's environment over a dataset of certified tasks."""

    def __init__(self, dataset: str | Path, *, lambda_err: float = 0.1) -> None:
        self.dataset = str(dataset)
        self.source = dataset_source(self.dataset)
        self.lambda_err = lambda_err
        self._task: EpisodeTask | None = None
        self._session: EnvSession | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def _package(self, task: str | int | TaskPackage | None, seed: int | None) -> TaskPackage:
        packages = self.source.packages
        if isinstance(task, TaskPackage):
            return task
        if isinstance(task, str):
            return task_package(self.dataset, task)
        index = task if isinstance(task, int) else (seed or 0)
        return packages[index % len(packages)]

    def reset(
        self, task: str | int | TaskPackage | None = None, seed: int | None = None
    ) -> Observation:
        """Start an episode on a task (by id, index, package, or ``seed`` modulo the dataset)."""
        package = self._package(task, seed)
        self._task = self.source.episode_task(package)
        self.close()
        self._session = EnvSession.for_task(
            package, self._task.domain, self._task.origin, self._task.target
        )
        self._user = ScriptedUser(package)
        opening = drive_user(self._user.open())
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": self._task.policy},
            opening.message,
        ]
        self.done = False
        return Observation(package.id, self._task.policy, opening.message["content"], self.tools)

    async def areset(
        self, task: str | int | TaskPackage | None = None, seed: int | None = None
    ) -> Observation:
        """``reset`` for async callers."""
        return self.reset(task, seed)

    @property
    def session(self) -> EnvSession:
        """The session over the current task (after ``reset``)."""
        if self._session is None:
            raise RuntimeError("call reset() first")
        return self._session

    @property
    def env(self) -> Environment:
        """The live environment (after ``reset``)."""
        return self.session.env

    @property
    def steps(self) -> list[ToolStep]:
        """The tool calls of the episode so far."""
        return self.session.steps

    @property
    def task(self) -> EpisodeTask:
        """The current task (after ``reset``)."""
        if self._task is None:
            raise RuntimeError("call reset() first")
        return self._task

    @property
    def tools(self) -> list[dict[str, Any]]:
        """OpenAI tool schemas of the current task's domain."""
        return self.session.tools

    # -- acting ----------------------------------------------------------------------------

    def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | str | None = None,
        call_id: str = "",
        turn: int | None = None,
    ) -> dict[str, Any]:
        """Run one tool call; returns ``ToolResult.to_json()`` and records the step."""
        return self._execute(name, arguments, call_id, turn)[1].to_json()

    def _execute(
        self, name: str, arguments: Any, call_id: str, turn: int | None
    ) -> tuple[dict[str, Any], ToolResult]:
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
        call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}
        at = len(self.messages) - 1 if turn is None else turn
        return self.session.step(call, at)

    def record_call(self, tool: str, arguments: Any, call_id: str) -> dict[str, Any]:
        """Run one call as an assistant turn of its own (for trainers that do not say how calls
        were grouped into messages): appends the assistant and tool messages, returns the
        ``ToolResult.to_json()`` payload. ``None``-valued arguments count as left out."""
        if isinstance(arguments, Mapping):
            arguments = {k: v for k, v in arguments.items() if v is not None}
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments or {}, default=str)
        call = {"id": call_id, "type": "function", "function": {"name": tool, "arguments": raw}}
        self.messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        message, result = self._execute(tool, raw, call_id, len(self.messages) - 1)
        self.messages.append(message)
        return result.to_json()

    async def acall_tool(
        self, name: str, arguments: dict[str, Any] | str | None = None, call_id: str = ""
    ) -> dict[str, Any]:
        """``call_tool`` for async callers."""
        return self.call_tool(name, arguments, call_id)

    def _run_calls(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """Append an assistant message and run its tool calls; their tool messages."""
        self.messages.append(message)
        turn = len(self.messages) - 1
        out: list[dict[str, Any]] = []
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or {}
            name, raw = str(fn.get("name", "")), fn.get("arguments") or "{}"
            out.append(self._execute(name, raw, str(call.get("id", "")), turn)[0])
        return out

    def replay(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """Record one assistant message of a conversation held elsewhere: its tool calls run
        (their tool messages are recorded and returned), and the user is not asked."""
        out = self._run_calls(message)
        self.messages.extend(out)
        return out

    def step(self, message: dict[str, Any]) -> StepResult:
        """Feed one assistant message: tool calls are executed (their results returned as tool
        messages); a text message gets the scripted user's answer, and ``###STOP###`` ends it."""
        out = self._run_calls(message)
        if not message.get("tool_calls"):
            reply = drive_user(self._user.respond(self.messages))
            if STOP in (reply.message.get("content") or ""):
                self.done = True
            else:
                out.append(reply.message)
        self.messages.extend(out)
        return StepResult(out, self.done, self.proximity())

    async def astep(self, message: dict[str, Any]) -> StepResult:
        """``step`` for async callers."""
        return self.step(message)

    # -- rewards ---------------------------------------------------------------------------

    def proximity(self) -> float:
        """LOGIGEN's state proximity P_t = 1 - min(DIFF(s_t, target), D0) / (D0 + eps)."""
        value = self.session.proximity
        if value is None:  # pragma: no cover - a session over a task always has a target
            raise RuntimeError("the session has no target")
        return value

    def trajectory(self) -> Trajectory:
        """The episode so far as a verified Trajectory (reward and breakdown filled in)."""
        end = EpisodeEnd(
            messages=self.messages,
            agent="trainer",
            user="scripted",
            stop_reason="user_stop" if self.done else "agent_done",
        )
        traj = self.session.trajectory(end)
        return score(traj, self.source, self.task.package)

    def reward(self) -> dict[str, Any]:
        """``{"reward", "breakdown", "proximity", "violations"}`` for the episode so far."""
        traj = self.trajectory()
        violations = sum(1 for s in self.steps if s.error and s.error.get("violated_rule"))
        return {
            "reward": traj.reward or 0.0,
            "breakdown": traj.reward_breakdown,
            "proximity": self.proximity(),
            "violations": violations,
        }

    def close(self) -> None:
        """Release the database."""
        if self._session is not None:
            self._session.close()
            self._session = None


def opening_prompts(
    dataset: str | Path, domain: str | None = None, *, compact: bool = False
) -> list[tuple[TaskPackage, list[dict[str, Any]]]]:
    """Each task of a dataset (optionally of one domain) with its opening chat: the wiki policy
    as system message and the scripted user's first message. Trainer dataset builders use it.

    With ``compact``, the policy keeps only the procedures (and their tables) that the task's
    requests name (:func:`~veritask.integrations._compact.compact_policy`)."""
    source = dataset_source(str(dataset))
    policies: dict[str, str] = {}
    out = []
    for pkg in source.packages:
        if domain is not None and pkg.domain != domain:
            continue
        if pkg.policy not in policies:
            policies[pkg.policy] = source.dataset.verified_policy(pkg.policy, pkg.domain)
        policy = policies[pkg.policy]
        if compact:
            spec = source.dataset.domain_spec(pkg.domain)
            policy = compact_policy(policy, spec, task_transactions(pkg))
        opening = drive_user(ScriptedUser(pkg).open()).message
        prompt = [
            {"role": "system", "content": policy},
            {"role": "user", "content": opening["content"]},
        ]
        out.append((pkg, prompt))
    return out


def _arguments(arguments: Any) -> dict[str, Any]:
    """A call's arguments as a mapping (unparsable JSON is kept so the call fails visibly)."""
    if isinstance(arguments, str):
        try:
            arguments = loads_untrusted(arguments)
        except ValueError:
            return {"__unparsable__": arguments}
    return dict(arguments) if isinstance(arguments, Mapping) else {}


def replay_reward(
    dataset: str | Path, task_id: str, calls: list[tuple[str, Any]]
) -> dict[str, Any]:
    """Replay ``(tool, arguments)`` calls, in order, on a fresh episode of a task and verify
    it: ``VeritaskEnv.reward()``'s ``{"reward", "breakdown", "proximity", "violations"}``.

    This is how adapters whose tools ran somewhere else (another process, a trainer's own
    tool loop) compute the verified reward on the host: the state is rebuilt from the calls.
    """
    env = VeritaskEnv(str(dataset))
    env.reset(task_id)
    try:
        for i, (name, arguments) in enumerate(calls, 1):
            env.record_call(name, _arguments(arguments), f"call_{i}")
        return env.reward()
    finally:
        env.close()


def drive_user(coro: Coroutine[Any, Any, Turn]) -> Turn:
    """Run a coroutine that never suspends (the scripted user's), in or outside an event loop.

    Raises:
        RuntimeError: The coroutine suspended.
    """
    try:
        coro.send(None)
    except StopIteration as done:
        result: Turn = done.value
        return result
    coro.close()
    raise RuntimeError("the user simulator suspended; it must not await anything")
