"""Provider for any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, SGLang...).

This is the only module that imports the ``openai`` SDK.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import openai

from veritask.model._convert import from_chat_completion, to_chat_request
from veritask.model._errors import connection_reason
from veritask.model._types import ErrorKind, GenerateConfig, ModelOutput, Prices, ProviderError

_RETRYABLE = (openai.RateLimitError, openai.InternalServerError, openai.APIConnectionError)
"""429, 5xx, connection failures and timeouts (``APITimeoutError`` is a connection error)."""

SDK_DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""Where the SDK sends requests when no base URL is set (named in error messages)."""


def error_kind(exc: openai.OpenAIError) -> ErrorKind:
    """The :data:`~veritask.model.ErrorKind` of an SDK error."""
    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "connection"
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return "auth"
    if isinstance(exc, openai.NotFoundError):
        return "not_found"
    if isinstance(exc, openai.RateLimitError):
        return "rate_limit"
    if isinstance(exc, openai.InternalServerError):
        return "server"
    if isinstance(exc, openai.APIStatusError):
        return "request"
    if isinstance(exc, openai.APIResponseValidationError):
        return "parse"
    return "provider"


def resolve_endpoint(
    base_url: str | None, api_key: str | None, env: Mapping[str, str]
) -> tuple[str | None, str]:
    """Base URL and API key from explicit options, else the environment.

    Args:
        base_url: Explicit base URL, or None to read ``VERITASK_BASE_URL`` then
            ``OPENAI_BASE_URL`` (None when neither is set: the SDK's default).
        api_key: Explicit key, or None to read ``VERITASK_API_KEY`` then ``OPENAI_API_KEY``;
            ``"EMPTY"`` when none is set (local servers such as vLLM accept it).
        env: The environment to read.

    Returns:
        ``(base_url, api_key)``.
    """
    url = base_url or env.get("VERITASK_BASE_URL") or env.get("OPENAI_BASE_URL") or None
    key = api_key or env.get("VERITASK_API_KEY") or env.get("OPENAI_API_KEY") or "EMPTY"
    return url, key


def backoff_delay(attempt: int, base_delay: float, max_delay: float, rng: random.Random) -> float:
    """Exponential backoff with jitter: ``base * 2**attempt`` capped, scaled into [50%, 100%]."""
    ceiling = min(max_delay, base_delay * (2.0**attempt))
    return ceiling * (0.5 + 0.5 * rng.random())


def _retry_after(exc: Exception, max_delay: float) -> float:
    """The server's ``Retry-After`` in seconds (capped), or 0 when it gave none."""
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        seconds = float(str(value)) if value else 0.0
    except ValueError:
        return 0.0
    return min(max_delay, max(0.0, seconds))


def _describe(exc: openai.OpenAIError) -> str:
    """A one-line description of an SDK error (the SDK never puts the key in messages)."""
    return f"{type(exc).__name__}: {exc}"


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` replaced by ``***`` (a placeholder key such
    as ``EMPTY``, shorter than 8 characters, is left alone: it is no secret)."""
    if not secret or len(secret) < 8:
        return text
    return text.replace(secret, "***")


def openai_choice(choice: Mapping[str, Any]) -> Any:
    """A raw choice (``ModelOutput.choice``) as the SDK's ``Choice`` object, for trainers whose
    trajectories hold those (ART)."""
    from openai.types.chat.chat_completion import Choice

    return Choice.model_validate(dict(choice))


@dataclass
class _LoopBound:
    """What an SDK client needs that belongs to one event loop."""

    loop: asyncio.AbstractEventLoop
    client: openai.AsyncOpenAI
    semaphore: asyncio.Semaphore


class OpenAIProvider:
    """Chat completions through the official ``openai`` async client.

    The SDK's own retries are disabled; this provider retries 429, 5xx, connection errors and
    timeouts with exponential backoff and seeded jitter (honouring ``Retry-After`` up to
    ``max_delay``), and never retries other 4xx. An endpoint that has never answered fails
    fast: a connection error before the first response is retried only ``connect_retries``
    times, ``connect_delay`` apart (doubling), and once those run out every later call raises
    the same error at once (with ``fail_fast``), so a dead ``--base-url`` costs a second, not
    minutes per episode. Each event loop gets its own SDK client and concurrency limit;
    ``await aclose()`` before a loop ends releases its connections.

    Errors are :class:`~veritask.model.ProviderError` with ``kind``, ``base_url`` and ``model``
    set (and ``reason`` ``connection refused`` when the server refused the connection).

    Args:
        model: Model name sent to the server.
        base_url: Endpoint base URL (see :func:`resolve_endpoint` for the fallbacks).
        api_key: API key (see :func:`resolve_endpoint`); kept only inside the SDK client.
        max_concurrency: Most requests in flight at once.
        max_retries: Retries after the first attempt for retryable failures.
        prices: Prices for the cost in usage; None counts calls as free.
        timeout: Per-request timeout in seconds.
        base_delay: First backoff delay in seconds (doubles each retry).
        max_delay: Cap on one backoff delay in seconds.
        retry_seed: Seed of the jitter's random generator.
        http_client: An ``httpx.AsyncClient`` for the SDK to send requests with (a trainer's
            own pooled client, or an in-process transport in tests). The caller owns it:
            ``aclose`` leaves it open.
        connect_retries: Retries of a connection error before the endpoint first answered.
        connect_delay: First delay between those retries in seconds (doubles each retry).
        fail_fast: Once the endpoint has never answered and the connect retries ran out, fail
            every later call at once with the same error.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_concurrency: int = 16,
        max_retries: int = 5,
        prices: Prices | Mapping[str, float] | None = None,
        timeout: float = 120.0,
        base_delay: float = 1.0,
        max_delay: float = 60.0,
        retry_seed: int = 0,
        http_client: Any | None = None,
        connect_retries: int = 2,
        connect_delay: float = 0.25,
        fail_fast: bool = True,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}")
        url, key = resolve_endpoint(base_url, api_key, os.environ)
        self.model = model
        self.name = f"openai:{model}"
        self.base_url = url
        self._max_retries = max(0, max_retries)
        self._prices = Prices.coerce(prices)
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._rng = random.Random(retry_seed)
        self._max_concurrency = max_concurrency
        self._connect_retries = max(0, connect_retries)
        self._connect_delay = connect_delay
        self._fail_fast = fail_fast
        self._reached = False
        self._dead: ProviderError | None = None
        self._client_options: dict[str, Any] = {
            "base_url": url,
            "api_key": key,
            "max_retries": 0,
            "timeout": timeout,
        }
        self._owns_http = http_client is None
        if http_client is not None:
            self._client_options["http_client"] = http_client
        self._bound: _LoopBound | None = None

    def __repr__(self) -> str:
        return f"OpenAIProvider(model={self.model!r}, base_url={self.base_url!r})"

    async def generate(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        config: GenerateConfig | None = None,
        sample_index: int = 0,
    ) -> ModelOutput:
        """Send one chat-completions request (see :class:`ModelProvider`).

        Raises:
            ProviderError: A non-retryable error, or retries ran out; ``status_code`` is set
                for HTTP errors.
        """
        del sample_index  # a live endpoint samples anew on every request; caches key on it
        config = config or GenerateConfig()
        request = to_chat_request(messages, tools, config.with_model(config.model or self.model))
        payload = await self._create_with_retries(request)
        return from_chat_completion(payload, self._prices)

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop (call before the loop ends); a
        caller's ``http_client`` stays open."""
        bound, self._bound = self._bound, None
        if bound is not None and bound.loop is asyncio.get_running_loop() and self._owns_http:
            await bound.client.close()

    def _loop_bound(self) -> _LoopBound:
        """The client and concurrency limit of the running loop, made on first use in it.

        Connections and semaphores belong to one event loop; a provider reused under a new
        loop (a second ``asyncio.run``) gets fresh ones instead of failing on a closed loop.
        """
        loop = asyncio.get_running_loop()
        if self._bound is None or self._bound.loop is not loop:
            self._bound = _LoopBound(
                loop=loop,
                client=openai.AsyncOpenAI(**self._client_options),
                semaphore=asyncio.Semaphore(self._max_concurrency),
            )
        return self._bound

    async def _create_with_retries(self, request: dict[str, Any]) -> dict[str, Any]:
        """Call the endpoint, retrying retryable failures; the response as a JSON dict."""
        if self._dead is not None:
            raise self._copy(self._dead)
        attempt = 0
        while True:
            try:
                payload = await self._create_once(request)
            except openai.OpenAIError as exc:
                if attempt >= self._retries_for(exc):
                    raise self._give_up(exc, attempt) from None
                await asyncio.sleep(self._delay(attempt, exc))
                attempt += 1
            else:
                self._reached = True
                return payload

    def _unreached_connection(self, exc: openai.OpenAIError) -> bool:
        """A connection (not timeout) error from an endpoint that has never answered."""
        return (
            not self._reached
            and isinstance(exc, openai.APIConnectionError)
            and not isinstance(exc, openai.APITimeoutError)
        )

    def _retries_for(self, exc: openai.OpenAIError) -> int:
        """How many retries an error of this type gets."""
        if not isinstance(exc, _RETRYABLE):
            return 0
        if self._unreached_connection(exc):
            return min(self._max_retries, self._connect_retries)
        return self._max_retries

    def _give_up(self, exc: openai.OpenAIError, attempt: int) -> ProviderError:
        """The error to raise once ``exc`` is not retried (again); latches a dead endpoint."""
        note = f"gave up after {attempt + 1} attempts" if attempt else "not retried"
        error = self._error(exc, note)
        if self._fail_fast and self._unreached_connection(exc):
            self._dead = error
        return error

    @staticmethod
    def _copy(error: ProviderError) -> ProviderError:
        """A fresh exception with ``error``'s message and facts (no shared traceback)."""
        return ProviderError(
            str(error),
            status_code=error.status_code,
            kind=error.kind,
            base_url=error.base_url,
            model=error.model,
            reason=error.reason,
        )

    async def _create_once(self, request: dict[str, Any]) -> dict[str, Any]:
        """One attempt, under the concurrency limit."""
        bound = self._loop_bound()
        async with bound.semaphore:
            response = await bound.client.chat.completions.create(**request)
        payload: dict[str, Any] = response.model_dump(mode="json")
        return payload

    def _delay(self, attempt: int, exc: Exception) -> float:
        """How long to wait before the next attempt."""
        if isinstance(exc, openai.OpenAIError) and self._unreached_connection(exc):
            return self._connect_delay * (2.0**attempt)
        jittered = backoff_delay(attempt, self._base_delay, self._max_delay, self._rng)
        return max(jittered, _retry_after(exc, self._max_delay))

    def _error(self, exc: openai.OpenAIError, note: str) -> ProviderError:
        """Wrap an SDK error so callers need not import the SDK.

        The message quotes the server's error body, and some servers echo the key they were
        sent: the key is cut out of the message, and the SDK error (which holds the body) is
        not chained, so no traceback or log line carries it.
        """
        status = exc.status_code if isinstance(exc, openai.APIStatusError) else None
        kind = error_kind(exc)
        reason = connection_reason(exc) if kind == "connection" else None
        text = redact(_describe(exc), self._client_options["api_key"])
        url = self.base_url or SDK_DEFAULT_BASE_URL
        detail = f" ({reason})" if reason else ""
        return ProviderError(
            f"{self.name} request to {url} failed ({note}): {text}{detail}",
            status_code=status,
            kind=kind,
            base_url=url,
            model=self.model,
            reason=reason,
        )
