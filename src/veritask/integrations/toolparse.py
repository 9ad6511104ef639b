"""Tool calls in raw model text, for trainers that hand environments the decoded completion
rather than parsed calls: the hermes format (``<tool_call>{"name": ..., "arguments": {...}}
</tool_call>``, Qwen2.5/Qwen3 chat templates) and the Qwen3 XML format (``<tool_call>
<function=NAME><parameter=KEY>VALUE</parameter></function></tool_call>``, Qwen3-Coder)."""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from veritask._util import loads_untrusted

__all__ = ["ToolFormat", "parse_tool_calls", "strip_tool_calls"]

ToolFormat = Literal["hermes", "qwen3_xml", "auto"]

_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FUNCTION = re.compile(r"<function=([^>\s]+)>\s*(.*?)\s*(?:</function>|$)", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=([^>\s]+)>\n?(.*?)\n?</parameter>", re.DOTALL)


def _value(text: str) -> Any:
    try:
        return loads_untrusted(text)
    except ValueError:
        return text


def _hermes(block: str) -> tuple[str, Any] | None:
    try:
        data = loads_untrusted(block)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None
    arguments = data.get("arguments", data.get("parameters", {}))
    return data["name"], _value(arguments) if isinstance(arguments, str) else arguments


def _qwen3_xml(block: str) -> tuple[str, Any] | None:
    match = _FUNCTION.search(block)
    if match is None:
        return None
    params = {k: _value(v) for k, v in _PARAMETER.findall(match.group(2))}
    return match.group(1), params


def parse_tool_calls(text: str, fmt: ToolFormat = "auto") -> list[dict[str, Any]]:
    """The OpenAI-style tool calls written in ``text``, in order.

    A block that does not parse becomes a call whose arguments are the raw text under
    ``__unparsable__`` (named ``__invalid__`` when no name was readable), so the environment
    answers it with a structured error instead of the call vanishing.

    Args:
        text: The decoded completion.
        fmt: ``hermes``, ``qwen3_xml``, or ``auto`` (XML when a block starts with
            ``<function=``, else hermes).

    Returns:
        ``[{"id", "type": "function", "function": {"name", "arguments": JSON text}}]``.
    """
    calls = []
    for i, block in enumerate(_BLOCK.findall(text)):
        xml = fmt == "qwen3_xml" or (fmt == "auto" and block.startswith("<function="))
        parsed = _qwen3_xml(block) if xml else _hermes(block)
        name, arguments = parsed or ("__invalid__", {"__unparsable__": block})
        calls.append(
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        )
    return calls


def strip_tool_calls(text: str) -> str:
    """``text`` without its tool-call blocks (what the user would read)."""
    return _BLOCK.sub("", text).strip()
