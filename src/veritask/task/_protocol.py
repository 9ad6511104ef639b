"""The session protocol: what the episode loop needs from the environment side of an episode.

:class:`~veritask.task.EnvSession` (a SQLite environment) implements it, and so does the
simulated environment of ``veritask.simulate`` (a model answers each call). The loop awaits
both methods, so a session whose answers come from a model call does not block the event loop.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from veritask.env import ToolResult
from veritask.task._trajectory import EpisodeEnd, Trajectory


@runtime_checkable
class Session(Protocol):
    """The environment side of one episode."""

    @property
    def tools(self) -> list[dict[str, Any]]:
        """OpenAI tool schemas offered to the agent."""
        ...

    async def astep(self, call: Mapping[str, Any], turn: int) -> tuple[dict[str, Any], ToolResult]:
        """Answer one OpenAI-style tool call: the ``tool`` message and the result."""
        ...

    async def atrajectory(self, end: EpisodeEnd) -> Trajectory:
        """The episode as a trajectory (a simulated session also judges it here)."""
        ...

    def close(self) -> None:
        """Release what the session holds (idempotent)."""
        ...
