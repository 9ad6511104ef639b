"""Pure translation between veritask values and the chat-completions wire format."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from veritask.model._types import GenerateConfig, ModelOutput, Prices, ProviderError
from veritask.model._usage import Usage


def to_chat_request(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    config: GenerateConfig,
) -> dict[str, Any]:
    """Keyword arguments for ``chat.completions.create``.

    Sampling parameters left as None and an empty tool list are omitted; ``config.extra``
    travels as ``extra_body``.
    """
    request: dict[str, Any] = {"model": config.model, "messages": messages}
    if tools:
        request["tools"] = tools
    sampling = {
        "temperature": config.temperature,
        "top_p": config.top_p,
        "max_tokens": config.max_tokens,
        "seed": config.seed,
    }
    request.update({k: v for k, v in sampling.items() if v is not None})
    if config.extra:
        request["extra_body"] = dict(config.extra)
    return request


def _arguments_text(arguments: Any) -> str:
    """Tool-call arguments as the JSON string the wire format carries (kept as-is if a str)."""
    if isinstance(arguments, str):
        return arguments
    if arguments is None:
        return "{}"
    return json.dumps(arguments, ensure_ascii=False)


def normalize_tool_call(call: Mapping[str, Any], fallback_id: str) -> dict[str, Any]:
    """A wire-format tool call ``{"id", "type": "function", "function": {"name", "arguments"}}``.

    Accepts the wire format, or the shorthand ``{"name", "arguments"}`` (arguments a dict or a
    raw JSON string). Malformed argument strings are kept verbatim.
    """
    function = call.get("function")
    source: Mapping[str, Any] = function if isinstance(function, Mapping) else call
    return {
        "id": str(call.get("id") or fallback_id),
        "type": "function",
        "function": {
            "name": str(source.get("name") or ""),
            "arguments": _arguments_text(source.get("arguments")),
        },
    }


def normalize_message(message: Mapping[str, Any], id_prefix: str = "call_") -> dict[str, Any]:
    """An assistant message in the canonical shape: ``tool_calls`` present only when non-empty.

    Args:
        message: A message from a server or a script.
        id_prefix: Prefix for ids given to tool calls that have none (numbered from 1).
    """
    content = message.get("content")
    result: dict[str, Any] = {
        "role": "assistant",
        "content": content if isinstance(content, str) else None,
    }
    calls = message.get("tool_calls") or []
    if calls:
        result["tool_calls"] = [
            normalize_tool_call(call, f"{id_prefix}{i}") for i, call in enumerate(calls, 1)
        ]
    return result


def usage_from(payload_usage: Mapping[str, Any] | None, prices: Prices | None = None) -> Usage:
    """Usage of one model call from a response's ``usage`` block (zeros when absent)."""
    block = payload_usage or {}
    prompt = int(block.get("prompt_tokens") or 0)
    completion = int(block.get("completion_tokens") or 0)
    cost = (prices or Prices()).cost(prompt, completion)
    return Usage(prompt_tokens=prompt, completion_tokens=completion, cost=cost, calls=1)


def from_chat_completion(payload: Mapping[str, Any], prices: Prices | None = None) -> ModelOutput:
    """Translate a chat-completions response body into a :class:`ModelOutput`.

    Args:
        payload: The response JSON (as a dict), e.g. ``ChatCompletion.model_dump()``.
        prices: Prices for the cost; None counts the call as free.

    Returns:
        The first choice's message in canonical wire format, with usage and finish reason.

    Raises:
        ProviderError: The payload holds no choice with a message.
    """
    choices = payload.get("choices") or []
    if not choices or not isinstance(choices[0], Mapping):
        raise ProviderError("chat completion response has no choices", kind="parse")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, Mapping):
        raise ProviderError("chat completion choice has no message", kind="parse")
    return ModelOutput(
        message=normalize_message(message),
        usage=usage_from(payload.get("usage"), prices),
        finish_reason=choice.get("finish_reason"),
        choice=dict(choice),
    )
