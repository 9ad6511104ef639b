"""The provider interface and the values that cross it: config, output, prices, errors."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from veritask.model._usage import Usage

ErrorKind = Literal[
    "connection",
    "timeout",
    "auth",
    "not_found",
    "rate_limit",
    "server",
    "request",
    "parse",
    "script",
    "replay",
    "provider",
]
"""What kind of failure a :class:`ProviderError` is: ``connection`` (the endpoint could not be
reached), ``timeout``, ``auth`` (401/403), ``not_found`` (404: a wrong model name or path),
``rate_limit`` (429 after retries), ``server`` (5xx after retries), ``request`` (another 4xx),
``parse`` (an unusable response), ``script``/``replay`` (a test double ran out) and
``provider`` (anything else)."""


class ProviderError(RuntimeError):
    """A model call failed (transport error, HTTP error, unusable response).

    Attributes:
        status_code: The HTTP status of the failed response, or None when there was none
            (connection error, timeout, malformed payload, scripted failure).
        kind: What kind of failure it is (see :data:`ErrorKind`).
        base_url: The endpoint the call went to, when the provider has one.
        model: The model the call asked for, when the provider names one.
        reason: A short cause for people (``connection refused``), or None.
    """

    default_kind: ErrorKind = "provider"

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        kind: ErrorKind | None = None,
        base_url: str | None = None,
        model: str | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.kind: ErrorKind = kind or self.default_kind
        self.base_url = base_url
        self.model = model
        self.reason = reason


class ScriptExhausted(ProviderError):
    """A scripted provider was asked for more responses than its script holds."""

    default_kind: ErrorKind = "script"


class ReplayMiss(ProviderError):
    """A replay provider has no recorded response for a request."""

    default_kind: ErrorKind = "replay"


@dataclass(frozen=True)
class GenerateConfig:
    """Sampling settings for one call; part of the request hash.

    Attributes:
        model: Model name; empty means the provider's own model.
        temperature: Sampling temperature (omitted from the request when None).
        top_p: Nucleus sampling mass (omitted when None).
        max_tokens: Completion token limit (omitted when None).
        seed: Sampling seed passed to the server (omitted when None).
        extra: Extra body parameters sent as-is (e.g. vLLM's ``top_k``).
    """

    model: str = ""
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def with_model(self, model: str) -> GenerateConfig:
        """Return a copy with ``model`` set."""
        return dataclasses.replace(self, model=model)


@dataclass
class Prices:
    """Per-million-token prices used to turn token counts into cost.

    Attributes:
        prompt_per_million: Price of one million prompt tokens.
        completion_per_million: Price of one million completion tokens.
    """

    prompt_per_million: float = 0.0
    completion_per_million: float = 0.0

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Cost of a call with the given token counts."""
        return (
            prompt_tokens * self.prompt_per_million
            + completion_tokens * self.completion_per_million
        ) / 1e6

    @classmethod
    def coerce(cls, value: Prices | Mapping[str, float] | None) -> Prices:
        """Accept a ``Prices``, a mapping of its fields (e.g. from YAML), or None (free)."""
        if value is None:
            return cls()
        if isinstance(value, Prices):
            return value
        return cls(**dict(value))


def _one_call() -> Usage:
    return Usage(calls=1)


@dataclass
class ModelOutput:
    """What a provider returns for one request.

    Attributes:
        message: An OpenAI assistant message: ``role``, ``content`` (str or None) and, only when
            the model called tools, ``tool_calls`` in wire format (``arguments`` is the raw JSON
            string the model produced, which may be malformed).
        usage: Tokens and cost of this call. A cache hit has everything zeroed except
            ``cached_calls=1``.
        finish_reason: The server's finish reason (``stop``, ``tool_calls``, ``length``...).
        cached: True when served from a cache rather than a model.
        choice: The server's first choice as it sent it (logprobs, token ids and any extra
            fields kept), for trainers that learn from the raw completion; None when the
            output did not come from a chat-completions response. Not part of ``to_dict``.
    """

    message: dict[str, Any]
    usage: Usage = field(default_factory=_one_call)
    finish_reason: str | None = None
    cached: bool = False
    choice: dict[str, Any] | None = None

    @property
    def text(self) -> str:
        """The message text, or an empty string when there is none."""
        content = self.message.get("content")
        return content if isinstance(content, str) else ""

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """The wire-format tool calls (empty when the model called no tool)."""
        calls = self.message.get("tool_calls")
        return list(calls) if isinstance(calls, list) else []

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form, read back by :meth:`from_dict`."""
        return {
            "message": self.message,
            "usage": self.usage.model_dump(),
            "finish_reason": self.finish_reason,
            "cached": self.cached,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelOutput:
        """Rebuild an output written by :meth:`to_dict`."""
        return cls(
            message=dict(data["message"]),
            usage=Usage.model_validate(data.get("usage") or {}),
            finish_reason=data.get("finish_reason"),
            cached=bool(data.get("cached", False)),
        )


@runtime_checkable
class ModelProvider(Protocol):
    """The one interface every model backend implements.

    Attributes:
        name: A short label for logs and trajectories (e.g. ``openai:gpt-4o``).
    """

    name: str

    async def generate(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        config: GenerateConfig | None = None,
        sample_index: int = 0,
    ) -> ModelOutput:
        """Produce the next assistant message.

        Args:
            messages: OpenAI chat messages so far.
            tools: OpenAI tool schemas offered to the model, or None.
            config: Sampling settings; None means the provider's defaults.
            sample_index: Which sample of this exact request this is (trial number); it keeps
                repeated samples apart in caches and recordings.

        Returns:
            The assistant message with its usage.
        """
        ...


def provider_model(provider: ModelProvider) -> str:
    """The model name a provider answers with when the config names none."""
    model = getattr(provider, "model", "")
    return model if isinstance(model, str) and model else provider.name


def resolve_config(provider: ModelProvider, config: GenerateConfig | None) -> GenerateConfig:
    """Fill in the provider's model when ``config`` names none (so hashes name a model)."""
    config = config or GenerateConfig()
    return config if config.model else config.with_model(provider_model(provider))
