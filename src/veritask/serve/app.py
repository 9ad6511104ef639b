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

Handlers run on the event loop: a tool call on an in-memory database takes tens of microseconds,
so a request never waits on a worker thread. Bodies carry a ``Content-Length`` of at most
:data:`~veritask.serve.MAX_BODY_BYTES` (413 beyond; chunked uploads are refused with 411), and a
trailing slash is ignored. Needs the ``http`` extra (``pip install 'veritask[http]'``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from veritask.serve._net import MAX_BODY_BYTES
from veritask.serve._service import EnvService, json_default
from veritask.serve._source import RequestError

log = logging.getLogger("veritask.http")


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
        RequestError: ``BAD_JSON`` for text that is not JSON, ``BAD_REQUEST`` for anything but
            an object (or an empty body when ``allow_empty`` is false).
    """
    if not body.strip():
        if allow_empty:
            return {}
        raise RequestError(400, "BAD_REQUEST", "the request needs a JSON object body")

    def reject_constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    try:
        value = json.loads(body, parse_constant=reject_constant)
    except (ValueError, UnicodeDecodeError) as exc:
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


def framing_error(scope: Scope) -> RequestError | None:
    """Other HTTP versions, chunked uploads and bodies over :data:`MAX_BODY_BYTES`, refused."""
    version = scope["http_version"]
    if version not in ("1.0", "1.1"):
        return RequestError(
            505, "HTTP_VERSION_NOT_SUPPORTED", f"{'HTTP/' + version!r} is not supported"
        )
    headers = Headers(scope=scope)
    if "transfer-encoding" in headers:
        return RequestError(411, "LENGTH_REQUIRED", "send a Content-Length, not chunks")
    raw = headers.get("content-length", "0")
    if not (raw.isascii() and raw.isdigit()):
        return RequestError(400, "BAD_REQUEST", "invalid Content-Length")
    if int(raw) > MAX_BODY_BYTES:
        return RequestError(413, "PAYLOAD_TOO_LARGE", f"bodies are limited to {MAX_BODY_BYTES}")
    return None


class _Transport:
    """ASGI middleware: ignores a trailing slash, refuses bad framing before the body is read
    (answering with ``Connection: close``), and logs each request with its status and time."""

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


async def _on_internal(request: Request, exc: Exception) -> Response:
    log.error("internal error on %s %s", request.method, request.url.path, exc_info=exc)
    return json_response(500, {"error": {"code": "INTERNAL", "message": "internal server error"}})


def _routes(service: EnvService) -> list[Route]:
    async def reset(request: Request) -> Response:
        body = parse_object(await request.body(), allow_empty=True)
        return json_response(200, service.reset(body))

    async def step(request: Request) -> Response:
        body = parse_object(await request.body(), allow_empty=False)
        return json_response(200, service.step(body))

    async def state(request: Request) -> Response:
        session_id = _query(request, "session_id", "")
        if not session_id:
            raise RequestError(400, "BAD_REQUEST", "session_id (a string) is required")
        return json_response(200, service.state(session_id, rows=_flag(request, "rows")))

    async def session(request: Request) -> Response:
        session_id = request.path_params["session_id"]
        if request.method == "DELETE":
            return json_response(200, service.delete(session_id))
        return json_response(200, service.state(session_id, rows=_flag(request, "rows")))

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


def make_app(service: EnvService, *, log_requests: bool = False) -> Starlette:
    """The Starlette application serving ``service`` (see the module docstring for endpoints).

    Every answer, errors included, is JSON: :class:`RequestError` from the service, routing
    errors (404, 405) and unexpected failures (500) go through exception handlers. The app's
    lifespan runs the idle-session reaper.

    Args:
        service: The sessions to serve.
        log_requests: Log every request at INFO level (DEBUG otherwise).
    """

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        reaper = asyncio.create_task(service.store.expire_every())
        try:
            yield
        finally:
            reaper.cancel()

    return Starlette(
        routes=_routes(service),
        middleware=[Middleware(_Transport, log_requests=log_requests)],
        exception_handlers={
            RequestError: _on_request_error,
            HTTPException: _on_http_exception,
            Exception: _on_internal,
        },
        lifespan=lifespan,
    )
