"""A test double that answers from a script, in the real wire format."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

from veritask.model._convert import normalize_message
from veritask.model._types import GenerateConfig, ModelOutput, Prices, ScriptExhausted
from veritask.model._usage import Usage

ScriptItem: TypeAlias = str | dict[str, Any] | ModelOutput | BaseException
"""One scripted answer: text, a message (full or shorthand), a ready output, or an error."""

ScriptFn: TypeAlias = Callable[[list[dict[str, Any]], list[dict[str, Any]] | None], Any]
"""A script as a function of ``(messages, tools)``; returning None ends the script."""


def rough_tokens(text: str) -> int:
    """A rough token count: four characters per token."""
    return len(text) // 4


def _message_text(message: Mapping[str, Any]) -> str:
    """Everything countable in a message: its text parts and its tool calls."""
    content = message.get("content")
    if isinstance(content, list):
        text = "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    else:
        text = content if isinstance(content, str) else ""
    for call in message.get("tool_calls") or []:
        function = call.get("function", {}) if isinstance(call, Mapping) else {}
        text += str(function.get("name", "")) + str(function.get("arguments", ""))
    return text


def _prompt_text(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    """The text a prompt is charged for: messages plus tool schemas."""
    schemas = json.dumps(tools) if tools else ""
    return "".join(_message_text(m) for m in messages) + schemas


class ScriptedProvider:
    """Answers each request with the next item of a script; fails loudly when it runs out.

    Items may be a str (assistant text), a dict (a full assistant message with ``role``, or the
    shorthand ``{"content": ..., "tool_calls": [{"name": ..., "arguments": {...} or "raw"}]}``,
    optionally with ``finish_reason``), a :class:`ModelOutput` (returned as-is), or an exception
    instance (raised, to simulate failures). Tool calls without ids get ``call_<n>``, numbered
    across the provider's life. Usage counts four characters per token.

    Args:
        script: A list of items, or a callable ``(messages, tools) -> item`` (None ends it).
        prices: Prices for the cost in usage.
        model: The model name the provider reports (default ``scripted``).

    Attributes:
        requests: Every request received, as ``{"messages", "tools", "config", "sample_index"}``.
    """

    def __init__(
        self,
        script: Sequence[ScriptItem] | ScriptFn,
        *,
        prices: Prices | Mapping[str, float] | None = None,
        model: str = "scripted",
    ) -> None:
        self.name = "scripted"
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self._script = script if callable(script) else list(script)
        self._position = 0
        self._next_call_id = 1
        self._prices = Prices.coerce(prices)

    @property
    def remaining(self) -> int | None:
        """Items left in a list script (None for a callable script)."""
        return None if callable(self._script) else len(self._script) - self._position

    async def generate(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        config: GenerateConfig | None = None,
        sample_index: int = 0,
    ) -> ModelOutput:
        """Return the next scripted answer (see :class:`ModelProvider`).

        Raises:
            ScriptExhausted: The script has no item left.
            BaseException: Whatever exception instance the script holds at this point.
        """
        self.requests.append(
            {"messages": messages, "tools": tools, "config": config, "sample_index": sample_index}
        )
        item = self._next_item(messages, tools)
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, ModelOutput):
            return item
        return self._to_output(item, messages, tools)

    def _next_item(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> ScriptItem:
        """The next item, or ScriptExhausted."""
        if callable(self._script):
            item = self._script(messages, tools)
        else:
            item = self._script[self._position] if self._position < len(self._script) else None
        if item is None:
            raise ScriptExhausted(self._exhausted_message(messages))
        self._position += 1
        if not isinstance(item, str | dict | ModelOutput | BaseException):
            raise TypeError(f"unsupported script item of type {type(item).__name__}: {item!r}")
        return item

    def _exhausted_message(self, messages: list[dict[str, Any]]) -> str:
        """Say how far the script went and what was asked when it ran out."""
        last = _message_text(messages[-1]) if messages else ""
        role = messages[-1].get("role") if messages else None
        return (
            f"scripted provider ran out of script after {self._position} response(s); "
            f"request #{len(self.requests)} had {len(messages)} message(s), "
            f"last ({role}): {last[:200]!r}"
        )

    def _to_output(
        self,
        item: str | dict[str, Any],
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
    ) -> ModelOutput:
        """Turn text or a (shorthand) message into wire format with usage."""
        raw = {"content": item} if isinstance(item, str) else dict(item)
        finish_reason = raw.pop("finish_reason", None)
        message = normalize_message(self._with_call_ids(raw))
        if finish_reason is None:
            finish_reason = "tool_calls" if "tool_calls" in message else "stop"
        prompt = rough_tokens(_prompt_text(messages, tools))
        completion = rough_tokens(_message_text(message))
        usage = Usage(
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost=self._prices.cost(prompt, completion),
            calls=1,
        )
        return ModelOutput(message=message, usage=usage, finish_reason=finish_reason)

    def _with_call_ids(self, raw: dict[str, Any]) -> dict[str, Any]:
        """Give every tool call without an id the next ``call_<n>``."""
        calls = []
        for call in raw.get("tool_calls") or []:
            call = dict(call)
            if not call.get("id"):
                call["id"] = f"call_{self._next_call_id}"
                self._next_call_id += 1
            calls.append(call)
        return {**raw, "tool_calls": calls}
