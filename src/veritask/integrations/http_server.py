"""HTTP environment server in the OpenEnv style: many sessions over reset / step / state.

One process serves either a domain (every session starts from the domain's seed state) or a
dataset directory (every session starts from a task's s_origin and is scored against its
s_target). Each session owns its own :class:`~veritask.env.Environment`, i.e. its own in-memory
SQLite database; the only state shared between sessions is the session table, guarded by a lock.
Requests on one session are serialized by that session's own lock.

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
  ``1 - min(d_t, d_0) / (d_0 + eps)`` (1.0 exactly at the target; see :func:`proximity`) in
  dataset mode and null in domain mode.
- ``GET /state?session_id=ID[&rows=1]`` (or ``GET /session/ID``) returns ``{"session_id",
  "task_id", "steps", "distance_to_target", "state_sha256"}``, plus ``"rows"`` per table with
  ``rows=1``. ``state_sha256`` hashes the rows (see :func:`state_digest`).
- ``DELETE /session/ID`` closes a session; ``GET /health`` and ``GET /tasks`` describe the server.
  Sessions unused for ``idle_timeout`` seconds are closed too.

The transport is Starlette (:func:`make_app`: routing, requests, JSON responses) served by
uvicorn (:class:`EnvHTTPServer`, :func:`serve`), both from the ``http`` extra
(``pip install 'veritask[http]'``) and imported only when a server is built. Handlers run on the
event loop, each request to completion, so hundreds of concurrent sessions cost no thread
switching; connections are kept alive; bodies carry a ``Content-Length`` of at most 1 MiB (no
chunked uploads). The server binds loopback by default and refuses a non-loopback address unless
``allow_remote=True``: there is no authentication, only unguessable session ids.
:class:`EnvClient` is a matching blocking client on the standard library.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import http.client
import ipaddress
import json
import logging
import secrets
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qs, quote, urlsplit

from veritask.env import CompiledDomain, Environment, Snapshot, diff
from veritask.policy import DomainSpec, render_wiki
from veritask.reward import proximity as reward_proximity

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger("veritask.http")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_IDLE_TIMEOUT = 600.0
DEFAULT_MAX_SESSIONS = 1024
MAX_BODY_BYTES = 1 << 20
"""Largest request body accepted; a larger ``Content-Length`` is answered 413."""
MAX_HEAD_BYTES = 64 << 10
"""Largest request line plus headers accepted."""
CONNECTION_TIMEOUT = 300
"""Seconds a keep-alive connection may sit idle between requests before it is closed."""

_ACTION_KEYS = frozenset({"tool", "arguments"})


class RequestError(Exception):
    """A request the server refuses; becomes ``{"error": {"code", "message"}}`` with ``status``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def to_json(self) -> dict[str, Any]:
        """The error body."""
        return {"error": {"code": self.code, "message": self.message}}


# -- what sessions start from --------------------------------------------------------------


@dataclass(frozen=True)
class TaskStart:
    """Everything a session needs to start: the domain, the state and what the agent is shown."""

    task_id: str | None
    domain: CompiledDomain
    origin: bytes
    target: Snapshot | None
    initial_distance: int | None
    """Distance from the origin to the target (None without a target)."""
    task: str | None
    policy: str
    tools: list[dict[str, Any]]


class EnvSource(Protocol):
    """Where sessions start from: a domain's seed state or the tasks of a dataset."""

    @property
    def mode(self) -> str:
        """``"domain"`` or ``"dataset"``."""
        ...

    @property
    def name(self) -> str:
        """A short description for logs and ``/health``."""
        ...

    def task_ids(self) -> list[str]:
        """Ids of the tasks that ``start`` accepts (empty in domain mode)."""
        ...

    def start(self, task_id: str | None, seed: int | None) -> TaskStart:
        """What a new session starts from; raises :class:`RequestError` for an unknown task."""
        ...


class DomainSource:
    """Sessions over a domain, each starting from the seed state, with no target."""

    mode = "domain"

    def __init__(self, domain: CompiledDomain | DomainSpec) -> None:
        compiled = (
            domain if isinstance(domain, CompiledDomain) else CompiledDomain.from_spec(domain)
        )
        self._start = TaskStart(
            task_id=None,
            domain=compiled,
            origin=compiled.seed,
            target=None,
            initial_distance=None,
            task=None,
            policy=render_wiki(compiled.spec),
            tools=[t.openai_schema() for t in compiled.tools.values()],
        )

    @property
    def name(self) -> str:
        """The domain's name."""
        return self._start.domain.spec.name

    def task_ids(self) -> list[str]:
        """No tasks in domain mode."""
        return []

    def start(self, task_id: str | None, seed: int | None) -> TaskStart:
        """The seed state (``seed`` is accepted and ignored: the seed state is fixed)."""
        if task_id is not None:
            raise RequestError(400, "BAD_REQUEST", "task_id needs a dataset directory server")
        return self._start


class DatasetSource:
    """Sessions over the tasks of a dataset directory (``veritask generate`` output)."""

    mode = "dataset"

    def __init__(self, root: str | Path) -> None:
        from veritask.rollout import TaskSource

        self._source = TaskSource.load(root)
        self._root = Path(root)
        if not self._source.packages:
            raise ValueError(f"{root}: the dataset holds no tasks")
        self._by_id = {p.id: p for p in self._source.packages}
        for domain in sorted({p.domain for p in self._source.packages}):
            self._source.domain(domain)  # compile every domain once, before threads start
        self._tools: dict[str, list[dict[str, Any]]] = {}
        self._cache: dict[str, TaskStart] = {}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """The dataset directory."""
        return str(self._root)

    def task_ids(self) -> list[str]:
        """Ids of the dataset's tasks, in manifest order."""
        return [p.id for p in self._source.packages]

    def start(self, task_id: str | None, seed: int | None) -> TaskStart:
        """The task ``task_id``, else the ``seed % n``-th task (the first without a seed)."""
        if task_id is not None:
            package = self._by_id.get(task_id)
            if package is None:
                raise RequestError(404, "UNKNOWN_TASK", f"no task with id {task_id!r}")
        else:
            packages = self._source.packages
            package = packages[(seed or 0) % len(packages)]
        with self._lock:
            cached = self._cache.get(package.id)
            if cached is None:
                task = self._source.episode_task(package)
                tools = self._tools.get(package.domain)
                if tools is None:
                    tools = [t.openai_schema() for t in task.domain.tools.values()]
                    self._tools[package.domain] = tools
                target = Snapshot(task.target, task.domain.layout)
                origin = Snapshot(task.origin, task.domain.layout)
                cached = TaskStart(
                    task_id=package.id,
                    domain=task.domain,
                    origin=task.origin,
                    target=target,
                    initial_distance=diff(origin, target).distance,
                    task=package.task_description,
                    policy=task.policy,
                    tools=tools,
                )
                self._cache[package.id] = cached
        return cached


def open_source(domain_or_dir: str | Path) -> EnvSource:
    """A dataset source when the path is a directory with a ``manifest.jsonl``, else a domain.

    Args:
        domain_or_dir: A built-in domain name, a spec file or folder, or a dataset directory.

    Raises:
        ValueError: The domain or dataset cannot be loaded (``SpecError`` and ``DatasetError``
            are ``ValueError`` subclasses).
    """
    path = Path(domain_or_dir)
    if path.is_dir() and (path / "manifest.jsonl").exists():
        return DatasetSource(path)
    from veritask.domains import load_domain

    return DomainSource(load_domain(domain_or_dir))


# -- state digest ----------------------------------------------------------------------------


def _json_default(value: object) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    return str(value)


def state_rows(env: Environment) -> dict[str, list[dict[str, Any]]]:
    """Every row of every table of the domain, in rowid order (an inspection helper)."""
    return {t.name: env.rows(t.name) for t in env.spec.tables}


def state_digest(env: Environment) -> str:
    """sha256 of the canonical JSON of :func:`state_rows` (keys sorted, no spaces).

    It depends on the rows only, not on how SQLite laid the pages out, so two environments that
    ran the same calls from the same state have the same digest.
    """
    text = json.dumps(state_rows(env), sort_keys=True, separators=(",", ":"), default=_json_default)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def proximity(distance: int, initial_distance: int) -> float:
    """LOGIGEN's state proximity, the step reward (``veritask.reward.proximity``)."""
    return reward_proximity(distance, initial_distance)


# -- sessions ----------------------------------------------------------------------------------


@dataclass(eq=False)
class _Session:
    id: str
    start: TaskStart
    env: Environment
    last_used: float
    steps: int = 0
    closed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def distance(self) -> int | None:
        target = self.start.target
        return None if target is None else self.env.distance(target)


def _object(body: bytes, *, allow_empty: bool) -> dict[str, Any]:
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


def _optional_str(body: Mapping[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is None or isinstance(value, str):
        return value
    raise RequestError(400, "BAD_REQUEST", f"{key} must be a string")


def _session_id(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise RequestError(400, "BAD_REQUEST", "session_id (a string) is required")
    return value


class EnvService:
    """The server's logic without the transport: a session table and the endpoint handlers.

    Thread-safe: the table is guarded by one lock, and each session by its own, so requests on
    different sessions run concurrently and requests on one session run one at a time.

    Args:
        source: Where sessions start from.
        idle_timeout: Seconds after which an unused session is closed; None never expires.
        max_sessions: Open sessions allowed at once; ``/reset`` answers 503 beyond.
        clock: Monotonic time source (tests pass a fake one).
    """

    def __init__(
        self,
        source: EnvSource,
        *,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if idle_timeout is not None and idle_timeout <= 0:
            raise ValueError("idle_timeout must be positive (or None for never)")
        if max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        self.source = source
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self._clock = clock
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.Lock()

    # -- table ---------------------------------------------------------------------------------

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def _get(self, session_id: str) -> _Session:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None:
                session.last_used = self._clock()
        if session is None:
            raise RequestError(404, "UNKNOWN_SESSION", f"no session {session_id!r}")
        return session

    def _locked(self, session_id: str) -> _Session:
        """The session with its lock held; the caller releases it."""
        session = self._get(session_id)
        session.lock.acquire()
        if session.closed:  # deleted or expired while we waited
            session.lock.release()
            raise RequestError(404, "UNKNOWN_SESSION", f"no session {session_id!r}")
        return session

    def expire(self) -> int:
        """Close the sessions idle for longer than ``idle_timeout``; return how many."""
        if self.idle_timeout is None:
            return 0
        deadline = self._clock() - self.idle_timeout
        with self._lock:
            stale = [
                s for s in self._sessions.values() if s.last_used < deadline and not s.lock.locked()
            ]
            for s in stale:
                del self._sessions[s.id]
        for s in stale:
            self._close(s)
        if stale:
            log.info("expired %d idle session(s)", len(stale))
        return len(stale)

    @staticmethod
    def _close(session: _Session, timeout: float = -1) -> bool:
        if not session.lock.acquire(timeout=timeout):
            return False
        try:
            if not session.closed:
                session.closed = True
                session.env.close()
        finally:
            session.lock.release()
        return True

    def close(self, timeout: float = 5.0) -> None:
        """Close every session, waiting at most ``timeout`` seconds in all for calls in flight."""
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
        deadline = time.monotonic() + timeout
        stuck = sum(not self._close(s, max(0.0, deadline - time.monotonic())) for s in sessions)
        if stuck:
            log.warning("%d session(s) still busy at shutdown were left open", stuck)

    # -- endpoints -----------------------------------------------------------------------------

    def reset(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /reset``: a new session (or ``session_id`` restarted) at its start state."""
        task_id = _optional_str(body, "task_id")
        seed = body.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise RequestError(400, "BAD_REQUEST", "seed must be an integer")
        existing = body.get("session_id")
        start = self.source.start(task_id, seed)
        if existing is not None:
            session = self._locked(_session_id(existing))
            try:
                old = session.env
                session.env = Environment(start.domain, start.origin)
                session.start, session.steps = start, 0
                old.close()
                return self._reset_reply(session)
            finally:
                session.lock.release()
        session = _Session(
            id=secrets.token_hex(16),
            start=start,
            env=Environment(start.domain, start.origin),
            last_used=self._clock(),
        )
        with self._lock:
            full = len(self._sessions) >= self.max_sessions
        if full:
            self.expire()
        with self._lock:
            if len(self._sessions) >= self.max_sessions:
                full = True
            else:
                full = False
                self._sessions[session.id] = session
        if full:
            session.env.close()
            raise RequestError(
                503, "TOO_MANY_SESSIONS", f"{self.max_sessions} sessions are open; delete some"
            )
        with session.lock:
            return self._reset_reply(session)

    @staticmethod
    def _reset_reply(session: _Session) -> dict[str, Any]:
        start = session.start
        return {
            "session_id": session.id,
            "observation": {"tools": start.tools, "task": start.task, "policy": start.policy},
            "reward": None,
            "done": False,
            "info": {"task_id": start.task_id, "distance_to_target": session.distance()},
        }

    def step(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /step``: one tool call in a session."""
        session_id = _session_id(body.get("session_id"))
        action = body.get("action")
        if not isinstance(action, dict):
            raise RequestError(400, "BAD_REQUEST", 'action must be {"tool", "arguments"}')
        extra = set(action) - _ACTION_KEYS
        if extra:
            raise RequestError(
                400, "BAD_REQUEST", f"unknown action key(s) {sorted(extra)}; use tool, arguments"
            )
        tool = action.get("tool")
        if not isinstance(tool, str) or not tool:
            raise RequestError(400, "BAD_REQUEST", "action.tool (a string) is required")
        arguments = action.get("arguments")
        if arguments is not None and not isinstance(arguments, dict | str):
            raise RequestError(
                400, "BAD_REQUEST", "action.arguments must be an object or a JSON string"
            )
        session = self._locked(session_id)
        try:
            result = session.env.call(tool, arguments)
            session.steps += 1
            distance = session.distance()
            initial = session.start.initial_distance
            steps = session.steps
            session.last_used = self._clock()
        finally:
            session.lock.release()
        return {
            "observation": result.to_json(),
            "reward": None if distance is None or initial is None else proximity(distance, initial),
            "done": False,
            "info": {"distance_to_target": distance, "steps": steps},
        }

    def state(self, session_id: str, *, rows: bool = False) -> dict[str, Any]:
        """``GET /state``: the session's progress and a digest of its database."""
        session = self._locked(session_id)
        try:
            reply: dict[str, Any] = {
                "session_id": session.id,
                "task_id": session.start.task_id,
                "steps": session.steps,
                "distance_to_target": session.distance(),
                "state_sha256": state_digest(session.env),
            }
            if rows:
                reply["rows"] = state_rows(session.env)
        finally:
            session.lock.release()
        return reply

    def delete(self, session_id: str) -> dict[str, Any]:
        """``DELETE /session/ID``: close a session."""
        with self._lock:
            session = self._sessions.pop(session_id, None)
        if session is None:
            raise RequestError(404, "UNKNOWN_SESSION", f"no session {session_id!r}")
        self._close(session)
        return {"session_id": session_id, "deleted": True}

    def health(self) -> dict[str, Any]:
        """``GET /health``."""
        return {
            "status": "ok",
            "mode": self.source.mode,
            "source": self.source.name,
            "tasks": len(self.source.task_ids()),
            "sessions": len(self),
            "max_sessions": self.max_sessions,
            "idle_timeout": self.idle_timeout,
        }


# -- HTTP transport: Starlette on uvicorn ----------------------------------------------------------


HTTP_INSTALL_HINT = "pip install 'veritask[http]'"


def require_http() -> None:
    """Check that the HTTP extra (starlette and uvicorn) is installed.

    Raises:
        ImportError: One of them is missing; the message names :data:`HTTP_INSTALL_HINT`.
    """
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"the HTTP server needs starlette and uvicorn ({exc}); install them with:"
            f" {HTTP_INSTALL_HINT}"
        ) from exc


def is_loopback(host: str) -> bool:
    """True when every address ``host`` names is a loopback address (``""`` is all interfaces)."""
    host = host.strip("[]")
    if not host:
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0]).is_loopback for i in infos)


_Handler = Callable[["Request", bytes], dict[str, Any]]


def _json_response(status: int, payload: Mapping[str, Any], *, close: bool = False) -> Response:
    from starlette.responses import Response

    body = json.dumps(payload, ensure_ascii=False, default=_json_default).encode("utf-8")
    return Response(
        body,
        status_code=status,
        headers={"Connection": "close"} if close else None,
        media_type="application/json; charset=utf-8",
    )


def _query(request: Request, name: str, default: str) -> str:
    """The first non-blank value of query parameter ``name``."""
    query: bytes = request.scope["query_string"]
    values = parse_qs(query.decode("latin-1")).get(name)
    return values[0] if values else default


def _flag(request: Request, name: str) -> bool:
    return _query(request, name, "0").lower() in {"1", "true", "yes"}


def _check_framing(request: Request) -> None:
    """Refuse other HTTP versions, chunked uploads and bodies over :data:`MAX_BODY_BYTES`."""
    version = request.scope["http_version"]
    if version not in ("1.0", "1.1"):
        raise RequestError(
            505, "HTTP_VERSION_NOT_SUPPORTED", f"{'HTTP/' + version!r} is not supported"
        )
    if "transfer-encoding" in request.headers:
        raise RequestError(411, "LENGTH_REQUIRED", "send a Content-Length, not chunks")
    raw = request.headers.get("content-length", "0")
    if not (raw.isascii() and raw.isdigit()):
        raise RequestError(400, "BAD_REQUEST", "invalid Content-Length")
    if int(raw) > MAX_BODY_BYTES:
        raise RequestError(413, "PAYLOAD_TOO_LARGE", f"bodies are limited to {MAX_BODY_BYTES}")


class _StripTrailingSlash:
    """ASGI middleware: a trailing slash is ignored (``/health/`` is ``/health``, no redirect)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = scope["path"].rstrip("/") or "/"
            if path != scope["path"]:
                scope = {**scope, "path": path}
        await self.app(scope, receive, send)


def make_app(service: EnvService, *, log_requests: bool = False) -> Starlette:
    """The Starlette application serving ``service`` (see the module docstring for endpoints).

    Handlers run on the event loop: a tool call on an in-memory database takes tens of
    microseconds, so a request never waits on a worker thread. Every answer, errors included,
    is JSON; bodies are limited to :data:`MAX_BODY_BYTES` (413) and chunked uploads are refused
    (411). The app's lifespan runs the idle-session reaper.

    Args:
        service: The sessions to serve.
        log_requests: Log every request at INFO level (DEBUG otherwise).

    Raises:
        ImportError: starlette is not installed (``pip install 'veritask[http]'``).
    """
    require_http()
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.requests import Request
    from starlette.routing import Route

    async def dispatch(
        request: Request, handlers: Mapping[str, _Handler], fallback: _Handler | None = None
    ) -> Response:
        started = time.perf_counter()
        close = False
        try:
            try:
                _check_framing(request)
            except RequestError:
                close = True  # the body is left unread: answer and hang up
                raise
            body = await request.body()
            handler = handlers.get(request.method, fallback)
            if handler is None:
                raise RequestError(
                    405,
                    "METHOD_NOT_ALLOWED",
                    f"{request.method} not allowed here; use {', '.join(handlers)}",
                )
            status, payload = 200, handler(request, body)
        except RequestError as exc:
            status, payload = exc.status, exc.to_json()
        except Exception:
            log.exception("internal error on %s %s", request.method, request.url.path)
            status = 500
            payload = {"error": {"code": "INTERNAL", "message": "internal server error"}}
        if log_requests or log.isEnabledFor(logging.DEBUG):
            query = request.scope["query_string"].decode("latin-1")
            log.log(
                logging.INFO if log_requests else logging.DEBUG,
                "%s %s %d %.2f ms",
                request.method,
                request.scope["path"] + (f"?{query}" if query else ""),
                status,
                1e3 * (time.perf_counter() - started),
            )
        return _json_response(status, payload, close=close)

    class Endpoint:
        """An ASGI endpoint, so that its route passes every method on (``dispatch`` checks)."""

        def __init__(self, handlers: Mapping[str, _Handler], fallback: _Handler | None) -> None:
            self.handlers = handlers
            self.fallback = fallback

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            response = await dispatch(Request(scope, receive), self.handlers, self.fallback)
            await response(scope, receive, send)

    def route(path: str, fallback: _Handler | None = None, **handlers: _Handler) -> Route:
        return Route(path, Endpoint(handlers, fallback))

    def not_found(request: Request, body: bytes) -> dict[str, Any]:
        raise RequestError(404, "NOT_FOUND", f"no endpoint {request.scope['path']!r}")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        reaper = asyncio.create_task(_reap(service))
        try:
            yield
        finally:
            reaper.cancel()

    routes = [
        route(
            "/session/{session_id:path}",
            GET=lambda r, _: service.state(r.path_params["session_id"], rows=_flag(r, "rows")),
            DELETE=lambda r, _: service.delete(r.path_params["session_id"]),
        ),
        route("/reset", POST=lambda _, body: service.reset(_object(body, allow_empty=True))),
        route("/step", POST=lambda _, body: service.step(_object(body, allow_empty=False))),
        route(
            "/state",
            GET=lambda r, _: service.state(
                _session_id(_query(r, "session_id", "")), rows=_flag(r, "rows")
            ),
        ),
        route("/health", GET=lambda _, __: service.health()),
        route("/tasks", GET=lambda _, __: {"tasks": service.source.task_ids()}),
        route("/{path:path}", not_found),
    ]
    return Starlette(routes=routes, middleware=[Middleware(_StripTrailingSlash)], lifespan=lifespan)


async def _reap(service: EnvService) -> None:
    """Close idle sessions every so often (a quarter of the idle timeout, at most 30 s)."""
    timeout = service.idle_timeout
    if timeout is None:
        return
    interval = max(0.05, min(timeout / 4, 30.0))
    while True:
        await asyncio.sleep(interval)
        try:
            service.expire()
        except Exception:  # the reaper must outlive a bad sweep
            log.exception("session expiry failed")


def _protocol_class() -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol, answering a request it cannot parse with the JSON error shape."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class JSONErrorH11Protocol(H11Protocol):
        def send_400_response(self, msg: str) -> None:
            error = RequestError(400, "BAD_REQUEST", "malformed HTTP request")
            body = json.dumps(error.to_json()).encode("utf-8")
            headers = [
                (b"content-type", b"application/json; charset=utf-8"),
                (b"content-length", str(len(body)).encode("ascii")),
                (b"connection", b"close"),
            ]
            for event in (
                h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                h11.Data(data=body),
                h11.EndOfMessage(),
            ):
                self.transport.write(self.conn.send(event) or b"")
            self.transport.close()

    return JSONErrorH11Protocol


class EnvHTTPServer:
    """The HTTP server: an :class:`EnvService` behind :func:`make_app`, served by uvicorn.

    The socket is bound on construction (so ``port=0`` can be read back at once); serve in this
    thread with :meth:`serve_forever` or in a background one with :meth:`start`. One event loop
    serves every connection; connections are kept alive between requests for up to
    :data:`CONNECTION_TIMEOUT` seconds.

    Args:
        source: Where sessions start from (see :func:`open_source`).
        host: Address to bind; loopback unless ``allow_remote``.
        port: Port to bind; 0 picks a free one (read it back from ``port``).
        allow_remote: Allow a non-loopback ``host``. The server has no authentication.
        idle_timeout: Seconds after which an unused session is closed; None never expires.
        max_sessions: Open sessions allowed at once.
        log_requests: Log every request at INFO level (DEBUG otherwise).

    Raises:
        ValueError: ``host`` is not loopback and ``allow_remote`` is false.
        ImportError: starlette or uvicorn is missing (``pip install 'veritask[http]'``).
        OSError: The address cannot be bound.
    """

    def __init__(
        self,
        source: EnvSource,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        *,
        allow_remote: bool = False,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        log_requests: bool = False,
    ) -> None:
        if not allow_remote and not is_loopback(host):
            raise ValueError(
                f"refusing to bind non-loopback host {host!r}: the server has no authentication;"
                " pass allow_remote (--allow-remote) to expose it"
            )
        require_http()
        import uvicorn

        self.service = EnvService(source, idle_timeout=idle_timeout, max_sessions=max_sessions)
        config = uvicorn.Config(
            make_app(self.service, log_requests=log_requests),
            http=_protocol_class(),
            ws="none",
            lifespan="on",
            log_config=None,
            log_level="warning",
            access_log=False,
            server_header=False,
            headers=[("Server", "veritask")],
            timeout_keep_alive=CONNECTION_TIMEOUT,
            h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        )
        self._server = uvicorn.Server(config)
        bind_host = host.strip("[]")
        family = socket.AF_INET6 if ":" in bind_host else socket.AF_INET
        self._sock = socket.create_server((bind_host, port), family=family, backlog=1024)
        self._address: tuple[str, int] = self._sock.getsockname()[:2]
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def host(self) -> str:
        """The bound address."""
        return self._address[0]

    @property
    def port(self) -> int:
        """The bound port."""
        return self._address[1]

    @property
    def url(self) -> str:
        """``http://host:port`` of the server."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def serve_forever(self) -> None:
        """Serve until :meth:`shutdown` is called from another thread (or Ctrl-C / SIGTERM)."""
        if self._done.is_set():
            raise RuntimeError("the server was shut down")
        try:
            self._server.run(sockets=[self._sock])
        finally:
            self._done.set()

    def start(self) -> EnvHTTPServer:
        """Serve in a background thread; return self once it accepts connections."""
        if self._thread is not None:
            raise RuntimeError("the server is already started")
        self._thread = threading.Thread(
            target=self.serve_forever, name="veritask-http", daemon=True
        )
        self._thread.start()
        while not self._server.started:
            self._thread.join(timeout=0.01)
            if not self._thread.is_alive():
                raise RuntimeError("the HTTP server thread failed to start")
        return self

    def shutdown(self) -> None:
        """Stop serving, close the socket, open connections and every session."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        self._done.set()
        self._sock.close()
        self.service.close()

    def __enter__(self) -> EnvHTTPServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def serve(
    source: EnvSource,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    allow_remote: bool = False,
    idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    log_requests: bool = False,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve ``source`` over HTTP in this thread until Ctrl-C or SIGTERM.

    Args:
        source: Where sessions start from (see :func:`open_source`).
        host: Address to bind; loopback unless ``allow_remote``.
        port: Port to bind; 0 picks a free one.
        allow_remote: Allow a non-loopback ``host``. The server has no authentication.
        idle_timeout: Seconds after which an unused session is closed; None never expires.
        max_sessions: Open sessions allowed at once.
        log_requests: Log every request at INFO level.
        on_ready: Called with the server's URL once the socket is bound.

    Raises:
        ValueError: ``host`` is not loopback and ``allow_remote`` is false.
        ImportError: starlette or uvicorn is missing (``pip install 'veritask[http]'``).
        OSError: The address cannot be bound.
    """
    server = EnvHTTPServer(
        source,
        host,
        port,
        allow_remote=allow_remote,
        idle_timeout=idle_timeout,
        max_sessions=max_sessions,
        log_requests=log_requests,
    )
    try:
        if on_ready is not None:
            on_ready(server.url)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()


# -- client ----------------------------------------------------------------------------------------


class EnvClientError(Exception):
    """A non-2xx answer from the server."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class EnvClient:
    """A small blocking client over one keep-alive connection (not thread-safe: one per thread).

    Args:
        url: The server's ``http://host:port``.
        timeout: Socket timeout in seconds.
    """

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or parts.hostname is None:
            raise ValueError(f"expected http://host:port, got {url!r}")
        self._conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout)

    def request(
        self, method: str, path: str, body: Mapping[str, Any] | bytes | None = None
    ) -> tuple[int, dict[str, Any]]:
        """Send one request; return (status, decoded JSON body) whatever the status."""
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        try:
            self._conn.request(method, path, body=data, headers=headers)
            response = self._conn.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException):
            self._conn.close()  # the next request reconnects
            raise
        if response.will_close:
            self._conn.close()
        return response.status, json.loads(raw) if raw else {}

    def _ok(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> dict[str, Any]:
        status, payload = self.request(method, path, body)
        if not 200 <= status < 300:
            err = payload.get("error") or {}
            raise EnvClientError(status, str(err.get("code")), str(err.get("message")))
        return payload

    def reset(
        self, task_id: str | None = None, seed: int | None = None, session_id: str | None = None
    ) -> dict[str, Any]:
        """``POST /reset``."""
        body = {
            k: v
            for k, v in {"task_id": task_id, "seed": seed, "session_id": session_id}.items()
            if v is not None
        }
        return self._ok("POST", "/reset", body)

    def step(
        self, session_id: str, tool: str, arguments: Mapping[str, Any] | str | None = None
    ) -> dict[str, Any]:
        """``POST /step``."""
        action: dict[str, Any] = {"tool": tool}
        if arguments is not None:
            action["arguments"] = arguments
        return self._ok("POST", "/step", {"session_id": session_id, "action": action})

    def state(self, session_id: str, rows: bool = False) -> dict[str, Any]:
        """``GET /state``."""
        path = f"/state?session_id={quote(session_id)}" + ("&rows=1" if rows else "")
        return self._ok("GET", path)

    def delete(self, session_id: str) -> dict[str, Any]:
        """``DELETE /session/ID``."""
        return self._ok("DELETE", f"/session/{quote(session_id)}")

    def health(self) -> dict[str, Any]:
        """``GET /health``."""
        return self._ok("GET", "/health")

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    def __enter__(self) -> EnvClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_PORT",
    "HTTP_INSTALL_HINT",
    "DatasetSource",
    "DomainSource",
    "EnvClient",
    "EnvClientError",
    "EnvHTTPServer",
    "EnvService",
    "EnvSource",
    "RequestError",
    "TaskStart",
    "is_loopback",
    "make_app",
    "open_source",
    "proximity",
    "require_http",
    "serve",
    "state_digest",
    "state_rows",
]
