"""Dual control in messages: the agent asks the user to run one of the user's own tools, the user
runs it, and the user's report carries what was called and what came back
(docs/design/0060-dual-control-and-escalation.md).

The user's tool traffic is the user's: the agent sees only the user's words (the structured copy
under :data:`~veritask.agent.PAYLOAD` is removed before a message reaches a model), while the
user simulator, and user-model SFT data, see the user's own calls and results as tool calls.
"""

from __future__ import annotations

import json
from typing import Any

from veritask.agent._base import PAYLOAD, text_message

USER_CALL = "user_call"
"""Payload key of an assistant message asking the user to run one of their tools."""
USER_TRAFFIC = "user_traffic"
"""Payload key of a user message: the user's tool-call messages and their results, in order."""
BY_USER = "by_user"
"""Payload key marking a ``tool`` message as the answer to one of the user's own calls."""


def ask_user_to_call(call_id: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """The assistant's request that the user run ``tool`` with ``args`` on their side.

    Args:
        call_id: An id for the requested call (the user's call carries it).
        tool: One of the user's tools.
        args: Its arguments.

    Returns:
        An assistant text message, with the request in structured form.
    """
    shown = json.dumps(args, sort_keys=True)
    text = (
        f"Could you do this on your side, please: run {tool} with {shown}, "
        "and tell me what it shows?"
    )
    message = text_message(text)
    message[PAYLOAD] = {USER_CALL: {"id": call_id, "tool": tool, "args": args}}
    return message


def requested_call(message: dict[str, Any]) -> dict[str, Any] | None:
    """The user-side call an assistant message asks for, or None."""
    found = (message.get(PAYLOAD) or {}).get(USER_CALL)
    return found if isinstance(found, dict) else None


def user_tool_call_message(call_id: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """A user message making one OpenAI-style call of one of the user's own tools."""
    arguments = json.dumps(args, sort_keys=True)
    return {
        "role": "user",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": tool, "arguments": arguments}}
        ],
    }


def user_results(message: dict[str, Any]) -> list[tuple[str, dict[str, Any], str]]:
    """``(tool, args, result text)`` of each call a user message's traffic made, in order."""
    traffic = (message.get(PAYLOAD) or {}).get(USER_TRAFFIC) or []
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    out: list[tuple[str, dict[str, Any], str]] = []
    for m in traffic:
        for call in m.get("tool_calls") or []:
            fn = call.get("function") or {}
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except (TypeError, ValueError):
                args = {}
            calls[str(call.get("id", ""))] = (str(fn.get("name", "")), args)
        if m.get("role") == "tool" and str(m.get("tool_call_id", "")) in calls:
            tool, args = calls[str(m.get("tool_call_id", ""))]
            out.append((tool, args if isinstance(args, dict) else {}, m.get("content") or ""))
    return out


def flipped_traffic(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A user message's own tool traffic as the user model sees it: its calls as ``assistant``
    tool calls and their results as ``tool`` messages (empty without traffic)."""
    traffic = (message.get(PAYLOAD) or {}).get(USER_TRAFFIC) or []
    out: list[dict[str, Any]] = []
    for m in traffic:
        if m.get("tool_calls"):
            out.append(
                {"role": "assistant", "content": m.get("content"), "tool_calls": m["tool_calls"]}
            )
        elif m.get("role") == "tool":
            out.append(
                {"role": "tool", "tool_call_id": m.get("tool_call_id"), "content": m["content"]}
            )
    return out
