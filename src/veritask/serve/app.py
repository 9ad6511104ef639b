"""The ASGI application: Starlette routing over an :class:`~veritask.serve.EnvService`.

Endpoints (JSON in, JSON out; errors are ``{"error": {"code", "message"}}`` with a 4xx/5xx
status, never a traceback):

- ``POST /reset`` ``{"task_id"?: str, "seed"?: int, "session_id"?: str}`` starts a session (or
  restarts ``session_id`` in place) and returns ``{"session_id", "observation": {"tools",
  "task", "policy"}, "reward": null, "done": false, "info": {"task_id", "distance_to_target"}}``.
  In dataset mode ``task_id`` picks a task, else ``seed`` picks the ``seed % n``-th (default 0).
- ``POST /step`` ``{"session_id", "action": {"tool": str, "arguments": {...} | str}}`` runs one
  tool call and returns ``{"observation": ToolResult.to_json(), "reward", "done": false,
  "info": {"distance_to_target", "steps"}}``. A call the policy rejects is a normal step whose
  observation carries the structured error. ``reward`` is LOGIGEN's state proximity
  ``1 - min(d_t, d_0) / (d_0 + eps)`` (1.0 exactly at the target) in dataset mode and null in
  domain mode.
- ``GET /state?session_id=ID[&rows=1]`` (or ``GET /session/ID``) returns ``{"session_id",
  "task_id", "steps", "distance_to_target", "state_sha256"}``, plus ``"rows"`` per table with
  ``rows=1``. ``state_sha256`` hashes the rows (see :func:`~veritask.serve.state_digest`).
- ``DELETE /session/ID`` closes a session; ``GET /health`` and ``GET /tasks`` describe the server.
  Sessions unused for ``idle_timeout`` seconds are closed by the app's lifespan task.

Work on a session (parsing the body, the call, reading the state) runs in Starlette's thread
pool, so a large ``GET /state`` or a slow call never holds up the event loop, and a request that
waits for a session's lock waits in a worker thread. Before any routing, the servers' one guard
(:func:`~veritask.serve._hosts.guard_hosts`) refuses a ``Host`` outside the allowed names
(Starlette's ``TrustedHostMiddleware``: a plain-text 400) and an ``Origin`` naming another site
(JSON 403); then a request is refused (JSON, ``Connection: close``) when its head is over
:data:`~veritask.serve.MAX_HEAD_BYTES` (431), or when its framing is wrong: bodies carry a ``Content-Length`` of at most
:data:`~veritask.serve.MAX_BODY_BYTES` (413 beyond; chunked uploads are refused with 411). A
trailing slash is ignored. Needs the ``http`` extra (``pip install 'veritask[http]'``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from veritask.serve._hosts import guard_hosts
from veritask.serve._net import (
    LOOPBACK_NAMES,
    MAX_BODY_BYTES,
    MAX_HEAD_BYTES,
    MAX_JSON_DEPTH,
    TooDeep,
    loads_bounded,
)
from veritask.serve._service import EnvService, json_default
from veritask.serve._source import RequestError

log = logging.getLogger("veritask.http")

T = TypeVar("T")


def json_response(status: int, payload: Mapping[str, Any], *, close: bool = False) -> Response:
    """A JSON response (database blobs as hex); ``close`` asks the client to hang up."""
    body = json.dumps(payload, ensure_ascii=False, default=json_default).encode("utf-8")
    return Response(
        body,
        status_code=status,
        headers={"Connection": "close"} if close else None,
        media_type="application/json; charset=utf-8",
    )


def parse_object(body: bytes, *, allow_empty: bool) -> dict[str, Any]:
    """A request body as a JSON object (``NaN`` and friends refused).

    Raises:
        RequestError: ``BAD_JSON`` for text that is not JSON (not UTF-8, truncated, binary),
            ``TOO_DEEP`` for arrays and objects nested past :data:`MAX_JSON_DEPTH`,
            ``BAD_REQUEST`` for anything but an object (or an empty body when ``allow_empty``
            is false).
    """
    if not body.strip():
        if allow_empty:
            return {}
        raise RequestError(400, "BAD_REQUEST", "the request needs a JSON object body")

    def reject_constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    try:
        value = loads_bounded(body, MAX_JSON_DEPTH, parse_constant=reject_constant)
    except TooDeep as exc:
        raise RequestError(400, "TOO_DEEP", str(exc)) from None
    except ValueError as exc:  # UnicodeDecodeError included
        raise RequestError(400, "BAD_JSON", f"malformed JSON body: {exc}") from None
    if not isinstance(value, dict):
        raise RequestError(400, "BAD_REQUEST", "the body must be a JSON object")
    return value


def _query(request: Request, name: str, default: str) -> str:
    """The first non-blank value of query parameter ``name``."""
    query: bytes = request.scope["query_string"]
    values = parse_qs(query.decode("latin-1")).get(name)
    return values[0] if values else default


def _flag(request: Request, name: str) -> bool:
    return _query(request, name, "0").lower() in {"1", "true", "yes"}


def head_size(scope: Scope) -> int:
    """Bytes of the request line and headers as received (give or take the separators)."""
    line = len(scope["raw_path"] or b"") + len(scope["query_string"]) + len(scope["method"]) + 16
    return line + sum(len(name) + len(value) + 4 for name, value in scope["headers"])


def framing_error(scope: Scope) -> RequestError | None:
    """A request refused before routing: a head over :data:`MAX_HEAD_BYTES`, another HTTP
    version, a chunked upload or a body over :data:`MAX_BODY_BYTES` (a foreign ``Host`` or
    ``Origin`` was refused before, by :func:`~veritask.serve._hosts.guard_hosts`)."""
    headers = Headers(scope=scope)
    if head_size(scope) > MAX_HEAD_BYTES:
        return RequestError(
            431, "HEADERS_TOO_LARGE", f"request heads are limited to {MAX_HEAD_BYTES} bytes"
        )
    version = scope["http_version"]
    if version not in ("1.0", "1.1"):
        return RequestError(
            505, "HTTP_VERSION_NOT_SUPPORTED", f"{'HTTP/' + version!r} is not supported"
        )
    if "transfer-encoding" in headers:
        return RequestError(411, "LENGTH_REQUIRED", "send a Content-Length, not chunks")
    raw = headers.get("content-length", "0")
    if not (raw.isascii() and raw.isdigit()):
        return RequestError(400, "BAD_REQUEST", "invalid Content-Length")
    if int(raw) > MAX_BODY_BYTES:
        return RequestError(413, "PAYLOAD_TOO_LARGE", f"bodies are limited to {MAX_BODY_BYTES}")
    return None


class _Transport:
    """ASGI middleware: ignores a trailing slash, refuses oversized heads and bad framing
    before the body is read (answering with ``Connection: close``), and logs each request
    with its status and time."""

    def __init__(self, app: ASGIApp, log_requests: bool = False) -> None:
        self.app = app
        self.level = logging.INFO if log_requests else logging.DEBUG

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"].rstrip("/") or "/"
        scope = {**scope, "path": path}
        started, status = time.perf_counter(), [500]

        async def send_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        error = framing_error(scope)
        if error is not None:
            await json_response(error.status, error.to_json(), close=True)(
                scope, receive, send_status
            )
        else:
            await self.app(scope, receive, send_status)
        if log.isEnabledFor(self.level):
            query = scope["query_string"].decode("latin-1")
            shown = path + (f"?{query}" if query else "")
            ms = 1e3 * (time.perf_counter() - started)
            log.log(self.level, "%s %s %d %.2f ms", scope["method"], shown, status[0], ms)


async def _on_request_error(_: Request, exc: Exception) -> Response:
    error = exc if isinstance(exc, RequestError) else RequestError(500, "INTERNAL", str(exc))
    return json_response(error.status, error.to_json())


async def _on_http_exception(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    if status == 405:
        allowed = (getattr(exc, "headers", None) or {}).get("Allow", "")
        message = f"{request.method} not allowed here; use {allowed}"
        return json_response(405, RequestError(405, "METHOD_NOT_ALLOWED", message).to_json())
    if status == 404:
        message = f"no endpoint {request.scope['path']!r}"
        return json_response(404, RequestError(404, "NOT_FOUND", message).to_json())
    detail = str(getattr(exc, "detail", "")) or "request failed"
    return json_response(status, RequestError(status, "HTTP_ERROR", detail).to_json())


async def _on_disconnect(request: Request, _: Exception) -> Response:
    # the client hung up (or was cut off by the request timeout) before its body arrived
    log.debug("client left during %s %s", request.method, request.url.path)
    return json_response(400, {"error": {"code": "CLIENT_DISCONNECTED", "message": "gone"}})


async def _on_internal(request: Request, exc: Exception) -> Response:
    log.error("internal error on %s %s", request.method, request.url.path, exc_info=exc)
    return json_response(500, {"error": {"code": "INTERNAL", "message": "internal server error"}})


async def off_loop(work: Callable[[], T]) -> T:
    """Run ``work`` in Starlette's thread pool: session locks, big reads and the encoding of
    big answers stay off the event loop."""
    return await run_in_threadpool(work)


def _routes(service: EnvService) -> list[Route]:
    async def reset(request: Request) -> Response:
        raw = await request.body()
        return await off_loop(
            lambda: json_response(200, service.reset(parse_object(raw, allow_empty=True)))
        )

    async def step(request: Request) -> Response:
        raw = await request.body()
        return await off_loop(
            lambda: json_response(200, service.step(parse_object(raw, allow_empty=False)))
        )

    async def state(request: Request) -> Response:
        session_id = _query(request, "session_id", "")
        if not session_id:
            raise RequestError(400, "BAD_REQUEST", "session_id (a string) is required")
        rows = _flag(request, "rows")
        return await off_loop(lambda: json_response(200, service.state(session_id, rows=rows)))

    async def session(request: Request) -> Response:
        session_id = request.path_params["session_id"]
        if request.method == "DELETE":
            return await off_loop(lambda: json_response(200, service.delete(session_id)))
        rows = _flag(request, "rows")
        return await off_loop(lambda: json_response(200, service.state(session_id, rows=rows)))

    async def health(_: Request) -> Response:
        return json_response(200, service.health())

    async def tasks(_: Request) -> Response:
        return json_response(200, {"tasks": service.source.task_ids()})

    return [
        Route("/session/{session_id:path}", session, methods=["GET", "DELETE"]),
        Route("/reset", reset, methods=["POST"]),
        Route("/step", step, methods=["POST"]),
        Route("/state", state, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        Route("/tasks", tasks, methods=["GET"]),
    ]


def make_app(
    service: EnvService, *, hosts: Sequence[str] = LOOPBACK_NAMES, log_requests: bool = False
) -> ASGIApp:
    """The Starlette application serving ``service`` (see the module docstring for endpoints).

    Every answer, errors included, is JSON: :class:`RequestError` from the service, routing
    errors (404, 405) and unexpected failures (500) go through exception handlers. The app's
    lifespan runs the idle-session reaper.

    Args:
        service: The sessions to serve.
        hosts: The host names accepted in ``Host`` and ``Origin``, on any port (see
            :func:`~veritask.serve.host_names`): the app is behind
            :func:`~veritask.serve._hosts.guard_hosts` (a foreign ``Host`` gets Starlette's 400,
            a foreign ``Origin`` a JSON 403).
        log_requests: Log every request at INFO level (DEBUG otherwise).
    """

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        reaper = asyncio.create_task(service.store.expire_every())
        try:
            yield
        finally:
            reaper.cancel()

    app = Starlette(
        routes=_routes(service),
        middleware=[Middleware(_Transport, log_requests=log_requests)],
        exception_handlers={
            RequestError: _on_request_error,
            HTTPException: _on_http_exception,
            ClientDisconnect: _on_disconnect,
            Exception: _on_internal,
        },
        lifespan=lifespan,
    )
    return guard_hosts(app, hosts)
