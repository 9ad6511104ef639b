"""ASGI guards put in front of applications veritask does not write (the MCP SDK's, OpenEnv's).

- :func:`bounded_body` reads a request's whole body before the application sees it: a body over
  the size limit is refused (413) before it is read, one nested past
  :data:`~veritask.serve.MAX_JSON_DEPTH` is refused (400), and a client that hangs up halfway
  costs one log line instead of the traceback the application would log.
- :func:`quiet_websockets` keeps a WebSocket's end quiet: a normal close logs nothing, an
  abnormal one a single line, and a message nested too deeply is answered with an error
  message instead of reaching (and ending) the session.

Every refusal is one JSON answer and at most one log line, rate-limited by
:class:`~veritask.serve._net.LogLimiter`. No HTTP dependency: plain ASGI callables.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from veritask.serve._net import (
    MAX_BODY_BYTES,
    MAX_JSON_DEPTH,
    LogLimiter,
    TooDeep,
    loads_bounded,
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
ErrorBody = Callable[[int, str, str], bytes]
"""Builds an error body from ``(status, code, message)``."""

log = logging.getLogger("veritask.serve")
NORMAL_CLOSES = frozenset({1000, 1001})
"""WebSocket close codes of a client that said goodbye (normal closure, going away)."""


def error_body(status: int, code: str, message: str) -> bytes:
    """The servers' error body, ``{"error": {"code", "message"}}``."""
    del status
    return json.dumps({"error": {"code": code, "message": message}}).encode()


async def send_json(send: Send, status: int, body: bytes) -> None:
    """Answer ``body`` (JSON) with ``status`` and ask the client to close."""
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _declared_length(scope: Scope) -> int | None:
    """The request's ``Content-Length`` (None when absent or not a number)."""
    for name, value in scope["headers"]:
        if name.lower() == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isascii() and text.isdigit() else None
    return None


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole body, or None when the client left first; stops reading past ``limit``."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if size > limit or not message.get("more_body", False):
            return b"".join(chunks)


def _too_deep(
    body: bytes, headers: list[tuple[bytes, bytes]], what: str = "request body"
) -> TooDeep | None:
    """Why a JSON body is refused for its nesting (other problems are the application's)."""
    kind = next((v for k, v in headers if k.lower() == b"content-type"), b"application/json")
    if b"json" not in kind.lower() or not body.strip():
        return None
    try:
        loads_bounded(body, MAX_JSON_DEPTH, what)
    except TooDeep as exc:
        return exc
    except ValueError:
        pass  # not JSON: the application answers that in its own words
    return None


def bounded_body(
    app: ASGIApp,
    *,
    max_bytes: int = MAX_BODY_BYTES,
    make_error: ErrorBody = error_body,
) -> ASGIApp:
    """``app`` behind a reader that takes each HTTP request's body whole before passing it on.

    Args:
        app: The application.
        max_bytes: Largest body accepted; a larger one is answered 413.
        make_error: Builds the error body of a refusal (the application's own format).
    """

    limiter = LogLimiter(log)  # per application: one server's failures never hide another's

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        what = f"{scope['method']} {scope['path']}"
        declared = _declared_length(scope)
        too_big = f"request bodies are limited to {max_bytes} bytes"
        if declared is not None and declared > max_bytes:
            await send_json(send, 413, make_error(413, "PAYLOAD_TOO_LARGE", too_big))
            return
        body = await _read_body(receive, max_bytes)
        if body is None:
            limiter.log("disconnect", logging.WARNING, "client left during %s", what)
            return
        if len(body) > max_bytes:
            await send_json(send, 413, make_error(413, "PAYLOAD_TOO_LARGE", too_big))
            return
        deep = _too_deep(body, scope["headers"])
        if deep is not None:
            limiter.log("too deep", logging.INFO, "refused %s: %s", what, deep)
            await send_json(send, 400, make_error(400, "TOO_DEEP", str(deep)))
            return
        await app(scope, _replay(body, receive), send)

    return guarded


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands ``body`` over once, then waits on the client (disconnects)."""
    pending = [body]

    async def replayed() -> Message:
        if pending:
            return {"type": "http.request", "body": pending.pop(), "more_body": False}
        return await receive()

    return replayed


def ws_error(message: str) -> str:
    """An OpenEnv WebSocket error message (``{"type": "error", "data": {...}}``)."""
    return json.dumps({"type": "error", "data": {"message": message, "code": "INVALID_JSON"}})


class _WebSocketWatch:
    """One WebSocket's ``receive`` and ``send`` as the application sees them (see
    :func:`quiet_websockets`)."""

    def __init__(self, receive: Receive, send: Send, make_error: Callable[[str], str]) -> None:
        self._receive = receive
        self._send = send
        self._make_error = make_error
        self.closed: int | None = None
        """The client's close code, once it closed."""

    async def receive(self) -> Message:
        """The next message for the application; one nested too deeply is answered here."""
        while True:
            message = await self._receive()
            if message["type"] == "websocket.disconnect":
                self.closed = int(message.get("code", 1000))
                return message
            text = message.get("text")
            deep = (
                _too_deep(text.encode(), [], "message")
                if message["type"] == "websocket.receive" and text
                else None
            )
            if deep is None:
                return message
            await self._send({"type": "websocket.send", "text": self._make_error(str(deep))})

    async def send(self, message: Message) -> None:
        """Pass ``message`` on, unless the client already closed (it would raise)."""
        if self.closed is None:
            await self._send(message)


def quiet_websockets(app: ASGIApp, *, make_error: Callable[[str], str] = ws_error) -> ASGIApp:
    """``app`` with quiet WebSocket endings and a bound on message nesting.

    The client's close is noted as it is received; after it, whatever the application still
    sends (OpenEnv closes the socket itself, which Starlette answers with an exception and
    uvicorn with a traceback) is dropped. A normal close (:data:`NORMAL_CLOSES`) logs nothing,
    another code one line. A text message nested past :data:`~veritask.serve.MAX_JSON_DEPTH`
    is answered with ``make_error(reason)`` and never reaches the application.
    """

    limiter = LogLimiter(log)  # per application, as in ``bounded_body``

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await app(scope, receive, send)
            return
        watch = _WebSocketWatch(receive, send, make_error)
        try:
            await app(scope, watch.receive, watch.send)
        except Exception as exc:
            if watch.closed is None:
                raise
            limiter.log("ws after close", logging.WARNING, "websocket ended with %r", exc)
        if watch.closed in NORMAL_CLOSES:
            log.debug("websocket closed (%d)", watch.closed)
        elif watch.closed is not None:
            limiter.log(
                "ws close", logging.WARNING, "websocket closed abnormally (%d)", watch.closed
            )

    return guarded
