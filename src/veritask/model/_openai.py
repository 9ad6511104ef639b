"""Provider for any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, SGLang...).

This is the only module that imports the ``openai`` SDK.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import random
from collections.abc import Callable, Mapping
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


_RETRIES: contextvars.ContextVar[list[int]] = contextvars.ContextVar("veritask_retries")
"""Retries the SDK made for the request running in this task (for the error message)."""

RetryDelay = Callable[[int, "float | None", bool], float]
"""``(attempt, retry_after, answered) -> seconds`` before the SDK's next attempt."""


class _Client(openai.AsyncOpenAI):
    """The SDK client, whose own retry loop (``max_retries``: 408, 409, 429, 5xx, connection
    errors and timeouts; ``Retry-After`` and ``retry-after-ms`` parsed by the SDK) runs each
    request; only the wait between attempts is veritask's (seeded jitter for reproducible
    runs, a fast cadence for an endpoint that never answered, ``max_delay``)."""

    veritask_delay: RetryDelay | None = None

    def _calculate_retry_timeout(
        self, remaining_retries: int, options: Any, response_headers: Any = None
    ) -> float:
        counter = _RETRIES.get(None)
        if counter is not None:
            counter[0] += 1
        if self.veritask_delay is None:  # pragma: no cover - set on every client veritask makes
            return float(
                super()._calculate_retry_timeout(remaining_retries, options, response_headers)
            )
        attempt = options.get_max_retries(self.max_retries) - remaining_retries
        retry_after = self._parse_retry_after_header(response_headers)
        return self.veritask_delay(attempt, retry_after, response_headers is not None)


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
    client: _Client
    semaphore: asyncio.Semaphore


class OpenAIProvider:
    """Chat completions through the official ``openai`` async client.

    Retries are the SDK's own (``max_retries``: 408, 409, 429, 5xx, connection errors and
    timeouts; never 401, 403 or other 4xx; the server's ``Retry-After`` honoured up to
    ``max_delay``), with veritask's policy on top: the wait between attempts is exponential
    from ``base_delay`` with seeded jitter, and an endpoint that has never answered fails
    fast: before the first response a request gets only ``connect_retries`` retries,
    ``connect_delay`` apart (doubling), and once a connection error outlives those every later
    call raises the same error at once (with ``fail_fast``), so a dead ``--base-url`` costs a
    second, not minutes per episode. Each event loop gets its own SDK client and concurrency limit;
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
            "max_retries": self._max_retries,
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
            client = _Client(**self._client_options)
            client.veritask_delay = self._wait
            self._bound = _LoopBound(
                loop=loop,
                client=client,
                semaphore=asyncio.Semaphore(self._max_concurrency),
            )
        return self._bound

    def _sdk_client(self, retries: int) -> openai.AsyncOpenAI:
        """The loop's client, with ``retries`` SDK retries (it shares the connection pool)."""
        client = self._loop_bound().client
        if retries == self._max_retries:
            return client
        copy = client.with_options(max_retries=retries)
        copy.veritask_delay = self._wait
        return copy

    async def _create_with_retries(self, request: dict[str, Any]) -> dict[str, Any]:
        """Call the endpoint through the SDK's retries; the response as a JSON dict."""
        if self._dead is not None:
            raise self._copy(self._dead)
        counter = [0]
        _RETRIES.set(counter)
        reached = self._reached
        probe = self._max_retries if reached else min(self._max_retries, self._connect_retries)
        try:
            payload = await self._create_once(request, probe)
        except openai.APIStatusError as exc:
            self._reached = True  # the endpoint answered: the probe's limit no longer applies
            left = self._max_retries - counter[0]
            if reached or not isinstance(exc, _RETRYABLE) or left <= 0:
                raise self._give_up(exc, counter[0]) from None
            try:
                payload = await self._create_once(request, left - 1)
            except openai.OpenAIError as again:
                raise self._give_up(again, counter[0] + 1) from None
        except openai.OpenAIError as exc:
            raise self._give_up(exc, counter[0]) from None
        self._reached = True
        return payload

    def _unreached_connection(self, exc: openai.OpenAIError) -> bool:
        """A connection (not timeout) error from an endpoint that has never answered."""
        return (
            not self._reached
            and isinstance(exc, openai.APIConnectionError)
            and not isinstance(exc, openai.APITimeoutError)
        )

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

    async def _create_once(self, request: dict[str, Any], retries: int) -> dict[str, Any]:
        """One request with ``retries`` SDK retries, under the concurrency limit."""
        bound = self._loop_bound()
        async with bound.semaphore:
            response = await self._sdk_client(retries).chat.completions.create(**request)
        payload: dict[str, Any] = response.model_dump(mode="json")
        return payload

    def _wait(self, attempt: int, retry_after: float | None, answered: bool) -> float:
        """Seconds before retry ``attempt + 1``: the connect cadence while the endpoint never
        answered a connection, else seeded exponential backoff, at least the server's
        ``Retry-After`` (capped at ``max_delay``)."""
        if not answered and not self._reached:
            return float(self._connect_delay * (2.0**attempt))
        jittered = backoff_delay(attempt, self._base_delay, self._max_delay, self._rng)
        wanted = min(self._max_delay, max(0.0, retry_after)) if retry_after else 0.0
        return max(jittered, wanted)

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
