"""Failed model calls name their kind and endpoint; a dead endpoint fails fast."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import httpx
import pytest

from veritask.model import (
    ProviderError,
    ScriptExhausted,
    StructuredOutputError,
    classify_error,
    get_provider,
)
from veritask.model._openai import OpenAIProvider

MESSAGES = [{"role": "user", "content": "hi"}]
OK = {
    "id": "c1",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}
    ],
}


class Transport:
    """Answers from a list: an ``httpx`` exception to raise, or a (status, body) pair."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.calls = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        status, body = answer
        return httpx.Response(status, json=body, request=request)


def provider(transport: Transport, **options: Any) -> OpenAIProvider:
    client = httpx.AsyncClient(transport=httpx.MockTransport(transport))
    options = {"base_delay": 0.0, "connect_delay": 0.0, **options}
    return OpenAIProvider("m", base_url="http://model.test/v1", http_client=client, **options)


async def twice(p: OpenAIProvider) -> list[BaseException | None]:
    """Two calls in one loop; what each raised (None when it answered)."""
    out: list[BaseException | None] = []
    for _ in range(2):
        try:
            await p.generate(MESSAGES)
            out.append(None)
        except ProviderError as exc:
            out.append(exc)
    return out


def test_a_refused_first_connection_is_retried_briefly_then_latched() -> None:
    transport = Transport([httpx.ConnectError("refused")])
    first, second = asyncio.run(twice(provider(transport, max_retries=5)))
    assert isinstance(first, ProviderError) and isinstance(second, ProviderError)
    assert transport.calls == 3  # one attempt and connect_retries=2, not max_retries=5
    assert (first.kind, first.base_url, first.model) == ("connection", "http://model.test/v1", "m")
    assert second.kind == "connection" and str(second) == str(first)


def test_a_reached_endpoint_gets_the_full_retries_on_connection_errors() -> None:
    transport = Transport([(200, OK), *[httpx.ConnectError("reset")] * 5])
    first, second = asyncio.run(twice(provider(transport, max_retries=3)))
    assert first is None and isinstance(second, ProviderError)
    assert transport.calls == 1 + 4 and second.kind == "connection"


def test_without_fail_fast_every_call_tries_again() -> None:
    transport = Transport([httpx.ConnectError("refused")])
    asyncio.run(twice(provider(transport, connect_retries=0, fail_fast=False)))
    assert transport.calls == 2


@pytest.mark.parametrize(
    ("status", "kind"),
    [(401, "auth"), (403, "auth"), (404, "not_found"), (400, "request"), (500, "server")],
)
def test_http_errors_have_kinds(status: int, kind: str) -> None:
    body = {"error": {"message": "no", "type": "x"}}
    transport = Transport([(status, body)])
    first, _ = asyncio.run(twice(provider(transport, max_retries=0)))
    assert isinstance(first, ProviderError)
    assert (first.kind, first.status_code, first.reason) == (kind, status, None)
    assert "http://model.test/v1" in str(first)


def test_a_closed_local_port_is_named_as_refused() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    dead = get_provider("openai:m", base_url=url, connect_retries=0)
    with pytest.raises(ProviderError) as caught:
        asyncio.run(dead.generate(MESSAGES))
    info = classify_error(caught.value)
    assert (info.kind, info.reason, info.base_url, info.model) == (
        "connection",
        "connection refused",
        url,
        "m",
    )


def test_classify_error_beyond_providers() -> None:
    assert classify_error(ScriptExhausted("out")).kind == "script"
    assert classify_error(StructuredOutputError("plan", ["bad json"], "{")).kind == "parse"
    assert classify_error(TimeoutError()).kind == "timeout"
    refused = classify_error(ConnectionRefusedError("nope"))
    assert (refused.kind, refused.reason) == ("connection", "connection refused")
    bug = classify_error(KeyError("x"))
    assert (bug.kind, bug.message) == ("error", "KeyError: 'x'")


def test_the_sdk_runs_the_retries_with_veritask_waits() -> None:
    """The SDK client retries (its max_retries); the waits between attempts are veritask's:
    the server's Retry-After as the SDK parses it (retry-after-ms included), capped, never
    below the seeded backoff, and the fast connect cadence before the endpoint ever answered."""
    import httpx

    from veritask.model._openai import OpenAIProvider, _Client

    p = OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", max_retries=4, max_delay=5.0)
    assert p._client_options["max_retries"] == 4
    sdk = _Client(api_key="EMPTY", base_url="http://127.0.0.1:9/v1")
    header = sdk._parse_retry_after_header(httpx.Headers({"retry-after-ms": "1500"}))
    assert header == 1.5
    assert p._wait(0, header, True) >= 1.5
    assert p._wait(0, 600.0, True) == 5.0  # capped at max_delay
    assert p._wait(2, None, False) == p._connect_delay * 4  # never answered: connect cadence
