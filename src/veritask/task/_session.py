"""EnvSession: one session over a start state on an Environment, measured against a target.

The episode loop, the trainers' episode API, the HTTP service and the MCP server all run tool
calls the same way: on a fresh :class:`~veritask.env.Environment` at the task's s_origin, each call
recorded as a :class:`ToolStep` carrying its DIFF distance to s_target. This is that one session.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from veritask._util import loads_untrusted
from veritask.env import (
    CompiledDomain,
    ConfirmationGate,
    Environment,
    Snapshot,
    ToolError,
    ToolResult,
    diff,
    proximity,
)
from veritask.model import Usage
from veritask.policy import USER_TOOL_CODE, user_tool_names
from veritask.task._package import TaskPackage
from veritask.task._trajectory import EpisodeEnd, ToolStep, Trajectory


class EnvSession:
    """A session over one start state (a task's s_origin, or a domain's seed state).

    Args:
        domain: The compiled domain the environment runs.
        origin: The database image every :meth:`reset` starts from.
        target: s_target, when there is one: calls then record their distance to it and the
            session has a :attr:`proximity`.
        package: The task package, when the session is over one (needed by :meth:`trajectory`).
        initial_distance: DIFF(origin, target) when the caller already knows it.
        record: Keep a :class:`ToolStep` per call in :attr:`steps` (servers that never build a
            trajectory turn this off and keep only the count :attr:`calls`).
    """

    def __init__(
        self,
        domain: CompiledDomain,
        origin: bytes,
        target: Snapshot | bytes | None = None,
        *,
        package: TaskPackage | None = None,
        initial_distance: int | None = None,
        record: bool = True,
    ) -> None:
        self.domain = domain
        self.origin = origin
        self.target = Snapshot(target, domain.layout) if isinstance(target, bytes) else target
        self.package = package
        if initial_distance is None and self.target is not None:
            initial_distance = diff(Snapshot(origin, domain.layout), self.target).distance
        self.initial_distance = initial_distance
        self.record = record
        self.steps: list[ToolStep] = []
        self.calls = 0
        self._tools: list[dict[str, Any]] | None = None
        self._user_tools: frozenset[str] | None = None
        self._env: Environment | None = Environment(domain, origin)
        self._gate: ConfirmationGate | None = None

    @classmethod
    def for_task(
        cls, package: TaskPackage, domain: CompiledDomain, origin: bytes, target: bytes
    ) -> EnvSession:
        """A session over a task package, from its two state images."""
        return cls(domain, origin, target, package=package)

    # -- lifecycle ---------------------------------------------------------------------------

    def reset(self) -> None:
        """Start over: a fresh environment at the origin, no steps recorded."""
        if self._env is not None:
            self._env.close()
        self._env = Environment(self.domain, self.origin)
        self.steps = []
        self.calls = 0

    def close(self) -> None:
        """Release the database (idempotent)."""
        if self._env is not None:
            self._env.close()
            self._env = None

    def __enter__(self) -> EnvSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def env(self) -> Environment:
        """The live environment.

        Raises:
            RuntimeError: The session was closed.
        """
        if self._env is None:
            raise RuntimeError("the session is closed")
        return self._env

    @property
    def tools(self) -> list[dict[str, Any]]:
        """OpenAI tool schemas the agent may call (built once): the domain's tools but the
        user's own (dual control), which only :meth:`user_step` runs."""
        if self._tools is None:
            mine = self.user_tools
            gate = self._confirmation()
            tools = gate.openai_tools() if gate else self.env.openai_tools()
            self._tools = [t for t in tools if t["function"]["name"] not in mine]
        return self._tools

    def _confirmation(self) -> ConfirmationGate | None:
        """The preview-then-commit gate of the live environment (None: the spec asks none)."""
        if not self.env.spec.confirm_writes:
            return None
        if self._gate is None or self._gate.env is not self.env:
            self._gate = ConfirmationGate(self.env)
        return self._gate

    @property
    def user_tools(self) -> frozenset[str]:
        """Names of the tools the user holds (empty for most domains)."""
        if self._user_tools is None:
            self._user_tools = user_tool_names(self.domain.spec)
        return self._user_tools

    # -- acting ------------------------------------------------------------------------------

    def call(
        self,
        tool: str,
        args: Mapping[str, Any] | str | None = None,
        *,
        call_id: str = "",
        turn: int = 0,
        by_user: bool = False,
    ) -> ToolResult:
        """Run one tool call; with ``record``, append its :class:`ToolStep` to :attr:`steps`.

        A user tool called by the agent is refused with ``USER_TOOL`` without touching the
        state; with ``by_user`` the user makes the call (dual control).

        Args:
            tool: The tool's name.
            args: Its arguments, as an object or the raw JSON text a model produced (malformed
                text gets a structured ``INVALID_ARGUMENTS`` error from the environment).
            call_id: The tool call's id, kept on the step.
            turn: Index of the assistant message that made the call, kept on the step.

        Returns:
            The environment's result (a success payload or a structured error).
        """
        if tool in self.user_tools and not by_user:
            error = ToolError(
                USER_TOOL_CODE,
                f"{tool} is one of the user's own tools; you cannot call it",
                hint="Ask the user to do it on their side and to tell you what they see.",
            )
            result = ToolResult(tool=tool, ok=False, error=error)
        else:
            gate = self._confirmation()
            result = gate.call(tool, args) if gate else self.env.call(tool, args)
        self.calls += 1
        if self.record:
            step = self._step(tool, args, result, call_id, turn)
            self.steps.append(step.model_copy(update={"by": "user"}) if by_user else step)
        return result

    def _step(
        self,
        tool: str,
        args: Mapping[str, Any] | str | None,
        result: ToolResult,
        call_id: str,
        turn: int,
    ) -> ToolStep:
        raw = args if isinstance(args, str) else json.dumps(args or {}, default=str)
        try:
            parsed = loads_untrusted(raw)
        except ValueError:
            parsed = None
        spec = self.env.tools.get(tool)
        return ToolStep(
            turn=turn,
            call_id=call_id,
            tool=tool,
            args=parsed if isinstance(parsed, dict) else None,
            raw_arguments=raw,
            ok=result.ok,
            result=result.result,
            error=result.error.to_json() if result.error else None,
            writes=bool(spec and spec.writes),
            distance=self.distance,
        )

    def step(
        self, call: Mapping[str, Any], turn: int, *, by_user: bool = False
    ) -> tuple[dict[str, Any], ToolResult]:
        """Run one OpenAI-style tool call (``{"id", "function": {"name", "arguments"}}``).

        Arguments are passed on as JSON text, so malformed ones reach the environment as they
        are and come back as a structured error.

        Returns:
            The ``tool`` message to send back to the model, and the environment's result.
        """
        fn = call.get("function") or {}
        name, raw = str(fn.get("name", "")), fn.get("arguments") or "{}"
        raw_text = raw if isinstance(raw, str) else json.dumps(raw)
        call_id = str(call.get("id", ""))
        result = self.call(name, raw_text, call_id=call_id, turn=turn, by_user=by_user)
        payload = (
            result.result
            if result.ok
            else {"error": result.error.to_json() if result.error else None}
        )
        message = {
            "role": "tool",
            "tool_call_id": call_id,
            "content": json.dumps(payload, default=str),
        }
        return message, result

    async def astep(self, call: Mapping[str, Any], turn: int) -> tuple[dict[str, Any], ToolResult]:
        """:meth:`step` for the session protocol (the environment answers synchronously)."""
        return self.step(call, turn)

    async def astep_user(
        self, call: Mapping[str, Any], turn: int
    ) -> tuple[dict[str, Any], ToolResult]:
        """:meth:`step` for a call the user makes with one of their own tools."""
        return self.step(call, turn, by_user=True)

    # -- measuring ---------------------------------------------------------------------------

    @property
    def distance(self) -> int | None:
        """DIFF(current state, s_target); None without a target."""
        return None if self.target is None else self.env.distance(self.target)

    @property
    def proximity(self) -> float | None:
        """LOGIGEN's state proximity of the current state; None without a target."""
        distance = self.distance
        if distance is None or self.initial_distance is None:
            return None
        return proximity(distance, self.initial_distance)

    async def atrajectory(self, end: EpisodeEnd) -> Trajectory:
        """:meth:`trajectory` for the session protocol."""
        return self.trajectory(end)

    def trajectory(self, end: EpisodeEnd) -> Trajectory:
        """The session so far as an (unverified) :class:`Trajectory`.

        The state fields (steps, distances, the agent's DIFF from the origin) come from the
        session; the conversation and who took part come from the caller.

        Raises:
            ValueError: The session is not over a task package with a target.
        """
        if self.package is None or self.target is None or self.initial_distance is None:
            raise ValueError("a trajectory needs a session over a task package with a target")
        origin = Snapshot(self.origin, self.domain.layout)
        return Trajectory(
            task_id=self.package.id,
            domain=self.package.domain,
            trial=end.trial,
            seed=end.seed,
            agent=end.agent,
            user=end.user,
            messages=end.messages,
            tools=self.tools,
            steps=self.steps,
            stop_reason=end.stop_reason,
            initial_distance=self.initial_distance,
            final_distance=self.env.distance(self.target),
            agent_diff=diff(origin, self.env.snapshot()).to_json(),
            agent_usage=end.agent_usage or Usage(),
            user_usage=end.user_usage or Usage(),
            error=end.error,
        )
