"""The environment service: sessions and the reset / step / state logic, without HTTP.

Each session is an :class:`~veritask.task.EnvSession` (its own in-memory SQLite database), or
whatever :class:`~veritask.task.Session` the source's ``TaskStart.opener`` builds (a simulated
one: no database, so no size cap, distance or digest), kept in
a :class:`~veritask.task.SessionStore` (capacity, idle expiry, one lock per session). Request
bodies are validated by pydantic models; a refused request raises :class:`RequestError`, which a
transport turns into ``{"error": {"code", "message"}}`` with its status. A session's database
may not grow past ``max_state_bytes``: a write that would take it there is undone and comes back
as a ``STATE_TOO_LARGE`` tool error.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, StrictInt, StringConstraints, ValidationError

from veritask.env import Environment, ToolError, ToolResult, proximity
from veritask.serve._net import DEFAULT_MAX_STATE_BYTES
from veritask.serve._source import EnvSource, RequestError, TaskStart
from veritask.task import EnvSession, Session, SessionStore, SessionStoreFull, UnknownSession

DEFAULT_IDLE_TIMEOUT = 600.0
DEFAULT_MAX_SESSIONS = 1024

_Text = Annotated[str, StringConstraints(strict=True, min_length=1)]


class ResetRequest(BaseModel):
    """Body of ``POST /reset`` (unknown keys are ignored)."""

    model_config = ConfigDict(extra="ignore")

    task_id: Annotated[str, StringConstraints(strict=True)] | None = None
    seed: StrictInt | None = None
    session_id: _Text | None = None


class Action(BaseModel):
    """One tool call: ``{"tool", "arguments"}`` (arguments as an object or JSON text)."""

    model_config = ConfigDict(extra="forbid")

    tool: _Text
    arguments: dict[str, Any] | Annotated[str, StringConstraints(strict=True)] | None = None


class StepRequest(BaseModel):
    """Body of ``POST /step``."""

    session_id: _Text
    action: Action


_MESSAGES = {
    ("seed",): "seed must be an integer",
    ("task_id",): "task_id must be a string",
    ("session_id",): "session_id (a string) is required",
    ("action",): 'action must be {"tool", "arguments"}',
    ("action", "tool"): "action.tool (a string) is required",
    ("action", "arguments"): "action.arguments must be an object or a JSON string",
}

M = TypeVar("M", bound=BaseModel)


def parse_body(model: type[M], body: Mapping[str, Any]) -> M:
    """Validate a request body; a failure is a 400 ``BAD_REQUEST`` naming the first problem.

    Raises:
        RequestError: The body does not fit ``model``.
    """
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        errors = exc.errors()
    locs = [tuple(str(p) for p in e["loc"]) for e in errors]
    extra = sorted(
        loc[-1] for loc, e in zip(locs, errors, strict=True) if e["type"] == "extra_forbidden"
    )
    if extra and locs[0][:1] != ("session_id",):
        message = f"unknown action key(s) {extra}; use tool, arguments"
    else:
        message = _MESSAGES.get(locs[0][:2]) or _MESSAGES.get(locs[0][:1]) or "malformed body"
    raise RequestError(400, "BAD_REQUEST", message)


def json_default(value: object) -> Any:
    """JSON for database values the encoder does not know (blobs as hex, the rest as text)."""
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
    text = json.dumps(state_rows(env), sort_keys=True, separators=(",", ":"), default=json_default)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _open(start: TaskStart) -> Session:
    if start.opener is not None:
        return start.opener(start)
    return EnvSession(
        start.domain,
        start.origin,
        start.target,
        initial_distance=start.initial_distance,
        record=False,
    )


def too_large(tool: str, limit: int) -> ToolResult:
    """The tool error of a write refused because the database would grow past ``limit``."""
    error = ToolError(
        "STATE_TOO_LARGE",
        f"this write would grow the session's database past {limit} bytes; it was undone",
        None,
        "Reset the session, or stop adding rows.",
    )
    return ToolResult(tool=tool, ok=False, error=error, state_changed=False)


@dataclass(eq=False)
class _Served:
    """A served session: what it started from, the session, its last accepted image and how
    many calls it answered.

    An :class:`EnvSession` is called directly (and capped in size); any other
    :class:`~veritask.task.Session` (a simulated one) answers through ``astep``, run to
    completion on the request's worker thread, and has no database to measure or digest.
    """

    start: TaskStart
    session: Session
    accepted: bytes = b""
    calls: int = 0

    def __post_init__(self) -> None:
        self.accepted = self.start.origin

    def restart(self, start: TaskStart) -> None:
        old, self.session, self.start = self.session, _open(start), start
        self.accepted = start.origin
        self.calls = 0
        old.close()

    @property
    def env_session(self) -> EnvSession | None:
        """The session when it runs on a database, else None."""
        return self.session if isinstance(self.session, EnvSession) else None

    @property
    def distance(self) -> int | None:
        """Distance to the target (None without a target or a database)."""
        env_session = self.env_session
        return None if env_session is None else env_session.distance

    def call(self, tool: str, arguments: Any, limit: int | None) -> ToolResult:
        """One tool call; a write leaving the database over ``limit`` bytes is undone.

        The image taken to measure an accepted write is kept: it is what the next refused
        write restores, so each write costs one copy of the database and no more.
        """
        self.calls += 1
        session = self.env_session
        if session is None:
            text = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
            call = {"id": f"call_{self.calls}", "function": {"name": tool, "arguments": text}}
            return asyncio.run(self.session.astep(call, self.calls))[1]
        result = session.call(tool, arguments)
        spec = session.domain.tools.get(tool)
        if limit is None or not result.ok or spec is None or not spec.writes:
            return result
        env = session.env
        image = env.image()
        if len(image) <= limit:
            self.accepted = image
            return result
        env.restore(self.accepted)
        return too_large(tool, limit)

    def close(self) -> None:
        self.session.close()


class EnvService:
    """The server's logic without the transport: a session store and the endpoint handlers.

    Thread-safe: requests on different sessions run concurrently and requests on one session
    run one at a time (see :class:`~veritask.task.SessionStore`).

    Args:
        source: Where sessions start from.
        idle_timeout: Seconds after which an unused session is closed; None never expires.
        max_sessions: Open sessions allowed at once; ``/reset`` answers 503 beyond.
        max_state_bytes: Largest database a session's writes may leave (None: no cap).
        clock: Monotonic time source (tests pass a fake one).

    Raises:
        ValueError: A non-positive ``idle_timeout`` or ``max_state_bytes``, or
            ``max_sessions`` below 1.
    """

    def __init__(
        self,
        source: EnvSource,
        *,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        max_state_bytes: int | None = DEFAULT_MAX_STATE_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if idle_timeout is not None and idle_timeout <= 0:
            raise ValueError("idle_timeout must be positive (or None for never)")
        if max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        if max_state_bytes is not None and max_state_bytes <= 0:
            raise ValueError("max_state_bytes must be positive (or None for no cap)")
        self.source = source
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self.max_state_bytes = max_state_bytes
        self.store: SessionStore[_Served] = SessionStore(
            capacity=max_sessions, idle_timeout=idle_timeout, clock=clock
        )

    def __len__(self) -> int:
        return len(self.store)

    @contextmanager
    def _use(self, session_id: str) -> Iterator[_Served]:
        try:
            with self.store.use(session_id) as served:
                yield served
        except UnknownSession:
            raise RequestError(404, "UNKNOWN_SESSION", f"no session {session_id!r}") from None

    def expire(self) -> int:
        """Close the sessions idle for longer than ``idle_timeout``; return how many."""
        return self.store.expire()

    def close(self, timeout: float = 5.0) -> None:
        """Close every session, waiting at most ``timeout`` seconds in all for calls in flight."""
        self.store.close(timeout)

    # -- endpoints -----------------------------------------------------------------------------

    def reset(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /reset``: a new session (or ``session_id`` restarted) at its start state."""
        request = parse_body(ResetRequest, body)
        start = self.source.start(request.task_id, request.seed)
        if request.session_id is not None:
            with self._use(request.session_id) as served:
                served.restart(start)
                return self._reset_reply(request.session_id, served)
        served = _Served(start, _open(start))
        try:
            session_id = self.store.add(served)
        except SessionStoreFull as exc:
            served.close()
            raise RequestError(503, "TOO_MANY_SESSIONS", str(exc)) from None
        with self._use(session_id) as served:
            return self._reset_reply(session_id, served)

    @staticmethod
    def _reset_reply(session_id: str, served: _Served) -> dict[str, Any]:
        start = served.start
        tools = start.tools if start.opener is None else served.session.tools
        return {
            "session_id": session_id,
            "observation": {"tools": tools, "task": start.task, "policy": start.policy},
            "reward": None,
            "done": False,
            "info": {"task_id": start.task_id, "distance_to_target": served.distance},
        }

    def step(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /step``: one tool call in a session."""
        request = parse_body(StepRequest, body)
        action = request.action
        with self._use(request.session_id) as served:
            result = served.call(action.tool, action.arguments, self.max_state_bytes)
            distance = served.distance
            initial = served.start.initial_distance
            steps = served.calls
        return {
            "observation": result.to_json(),
            "reward": None if distance is None or initial is None else proximity(distance, initial),
            "done": False,
            "info": {"distance_to_target": distance, "steps": steps},
        }

    def state(self, session_id: str, *, rows: bool = False) -> dict[str, Any]:
        """``GET /state``: the session's progress and a digest of its database."""
        with self._use(session_id) as served:
            session = served.env_session
            reply: dict[str, Any] = {
                "session_id": session_id,
                "task_id": served.start.task_id,
                "steps": served.calls,
                "distance_to_target": served.distance,
                "state_sha256": None if session is None else state_digest(session.env),
            }
            if rows:
                reply["rows"] = None if session is None else state_rows(session.env)
        return reply

    def delete(self, session_id: str) -> dict[str, Any]:
        """``DELETE /session/ID``: close a session."""
        if not self.store.discard(session_id):
            raise RequestError(404, "UNKNOWN_SESSION", f"no session {session_id!r}")
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
            "max_state_bytes": self.max_state_bytes,
            "idle_timeout": self.idle_timeout,
        }
