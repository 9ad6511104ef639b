"""The two sides of an episode besides the environment: the assistant agent and the user."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from veritask.model import Usage

STOP = "###STOP###"
"""What a user simulator says to end the conversation (LOGIGEN Appendix B.1)."""
PAYLOAD = "veritask"
"""Message key of the structured part of a turn (a request the user reveals, a rule the agent
names when it refuses). Symbolic roles read it; it is removed before a message reaches a model."""


def wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as a model sees them: without the structured part."""
    return [{k: v for k, v in m.items() if k != PAYLOAD} if PAYLOAD in m else m for m in messages]


@dataclass
class Turn:
    """One message produced by an agent or a user, with what it cost."""

    message: dict[str, Any]
    usage: Usage = field(default_factory=Usage)


class Agent(Protocol):
    """The assistant: sees the conversation (system policy, user, its own turns, tool results)
    and returns its next assistant message, which may contain OpenAI-style ``tool_calls``."""

    name: str

    async def respond(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        """The next assistant message."""
        ...


class User(Protocol):
    """The user simulator: opens the conversation and answers the assistant's text turns."""

    name: str

    async def open(self) -> Turn:
        """The user's first message."""
        ...

    async def respond(self, messages: list[dict[str, Any]]) -> Turn:
        """The next user message, given the conversation so far (``STOP`` in its content ends it)."""
        ...


def text_message(content: str, role: str = "assistant") -> dict[str, Any]:
    """A plain chat message."""
    return {"role": role, "content": content}


def tool_call_message(
    call_id: str, name: str, arguments: str, content: str | None = None
) -> dict[str, Any]:
    """An assistant message making one OpenAI-style tool call."""
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        ],
    }
