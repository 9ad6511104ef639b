"""Trajectory: one recorded episode, enough to verify and reward it without re-running anything."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from veritask.model import Usage

StopReason = Literal["user_stop", "max_turns", "tool_errors", "agent_error", "agent_done"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolStep(_Model):
    """One tool call the agent made, what the environment answered, and where it left the state.

    ``args`` is None when the call's arguments were not a JSON object (a malformed tool call);
    ``raw_arguments`` keeps what the model produced.
    """

    turn: int
    """Index of the assistant message (in ``Trajectory.messages``) that made the call."""
    call_id: str
    tool: str
    args: dict[str, Any] | None
    raw_arguments: str
    ok: bool
    result: Any = None
    error: dict[str, Any] | None = None
    writes: bool = False
    """True for insert/update tools (whether or not the call succeeded)."""
    distance: int | None = None
    """DIFF distance from the state after this call to s_target (None when not computed)."""
    by: Literal["agent", "user"] = "agent"
    """Who made the call: the agent, or the user with one of their own tools (dual control)."""

    @model_serializer(mode="wrap")
    def _omit_agent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Leave ``by`` out for the agent's calls, so trajectories without user tools
        serialize exactly as before it existed."""
        data: dict[str, Any] = handler(self)
        if self.by == "agent":
            data.pop("by", None)
        return data


class Trajectory(_Model):
    """A whole episode between an assistant agent, a user simulator and an environment."""

    task_id: str
    domain: str
    trial: int = 0
    seed: int = 0
    agent: str
    user: str
    messages: list[dict[str, Any]]
    """OpenAI chat messages: system, user, assistant (with ``tool_calls``), tool."""
    tools: list[dict[str, Any]] = Field(default_factory=list)
    """OpenAI tool schemas offered to the agent."""
    steps: list[ToolStep] = Field(default_factory=list)
    stop_reason: StopReason
    initial_distance: int
    """DIFF distance from s_origin to s_target."""
    final_distance: int
    """DIFF distance from the final state to s_target (0: the task's state goal was reached)."""
    agent_diff: dict[str, Any] = Field(default_factory=dict)
    """DIFF(s_origin, final state) as ``StateDiff.to_json()``: the rows the agent changed."""
    agent_usage: Usage = Field(default_factory=Usage)
    user_usage: Usage = Field(default_factory=Usage)
    reward: float | None = None
    reward_breakdown: dict[str, float] = Field(default_factory=dict)
    error: str | None = None
    """What went wrong when ``stop_reason`` is ``agent_error``."""

    @property
    def key(self) -> tuple[str, int, int]:
        """The (task id, trial, seed) a batch runner resumes by."""
        return (self.task_id, self.trial, self.seed)

    def assistant_texts(self) -> list[str]:
        """The text the assistant said to the user, message by message."""
        return [
            m["content"]
            for m in self.messages
            if m.get("role") == "assistant" and isinstance(m.get("content"), str) and m["content"]
        ]


@dataclass(frozen=True)
class EpisodeEnd:
    """How an episode ended and who played it: what a session needs, besides its own record
    of the calls, to write the episode as a :class:`Trajectory`.

    Attributes:
        messages: The conversation (the agent's view).
        agent: The assistant's name.
        user: The user simulator's name.
        stop_reason: Why the episode ended.
        trial: The trial index (pass^k).
        seed: The episode's seed.
        agent_usage: Tokens the assistant used (None: nothing recorded).
        user_usage: Tokens the user simulator used.
        error: What failed, when a role raised.
    """

    messages: list[dict[str, Any]]
    agent: str
    user: str
    stop_reason: StopReason
    trial: int = 0
    seed: int = 0
    agent_usage: Usage | None = None
    user_usage: Usage | None = None
    error: str | None = None
