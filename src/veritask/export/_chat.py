"""Reading OpenAI chat messages: text content, tool calls and their arguments."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from veritask._util import loads_untrusted

RAW_KEY = "__raw__"
"""Key under which malformed tool-call arguments are kept verbatim."""


def dumps(value: Any) -> str:
    """Compact JSON, non-ASCII kept as is."""
    return json.dumps(value, ensure_ascii=False, default=str)


def text(content: Any) -> str | None:
    """A message's content as a string: text parts joined, other values as JSON."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") if isinstance(p, Mapping) else str(p) for p in content]
        return "".join(parts)
    return dumps(content)


def arguments_dict(raw: Any) -> dict[str, Any]:
    """Tool-call arguments as a dict; a malformed string is kept as ``{"__raw__": raw}``."""
    if isinstance(raw, dict):
        return raw
    if raw is None or raw == "":
        return {}
    source = raw if isinstance(raw, str) else dumps(raw)
    try:
        parsed = loads_untrusted(source)
    except ValueError:
        return {RAW_KEY: source}
    return parsed if isinstance(parsed, dict) else {RAW_KEY: source}


def arguments_text(raw: Any) -> str:
    """Tool-call arguments as the JSON string the model produced (a dict is serialized)."""
    if isinstance(raw, str) and raw:
        return raw
    return dumps(raw or {})


def call_parts(call: Mapping[str, Any]) -> tuple[str, str, Any]:
    """``(id, function name, raw arguments)`` of one OpenAI tool call."""
    fn = call.get("function") or {}
    return str(call.get("id") or ""), str(fn.get("name") or ""), fn.get("arguments")


def tool_calls(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The tool calls of an assistant message (empty when none)."""
    calls = message.get("tool_calls") or []
    return [c for c in calls if isinstance(c, Mapping)]


def following_results(
    messages: Sequence[Mapping[str, Any]], start: int
) -> tuple[list[Mapping[str, Any]], int]:
    """The tool messages from ``start`` on, and the index after them."""
    end = start
    while end < len(messages) and messages[end].get("role") == "tool":
        end += 1
    return list(messages[start:end]), end


def result_for(call_id: str, position: int, results: Sequence[Mapping[str, Any]]) -> str | None:
    """The content of the tool message answering a call: by id, else by position."""
    by_id = [r for r in results if call_id and r.get("tool_call_id") == call_id]
    if len(by_id) == 1:
        return text(by_id[0].get("content")) or ""
    if position < len(results):
        return text(results[position].get("content")) or ""
    return None
