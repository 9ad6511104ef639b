"""An OpenEnv environment over veritask tasks, served by OpenEnv's own ``create_app``.

OpenEnv (``openenv-core``, ``meta-pytorch/OpenEnv``) keeps one ``Environment`` per WebSocket
session at ``/ws`` (``reset`` / ``step`` / ``state`` messages) and also serves ``/schema``,
``/metadata`` and ``/health``. :class:`VeritaskOpenEnv` is that environment: ``reset(seed,
episode_id, task_id=...)`` starts a task on its own in-memory database, and ``step`` takes a
:class:`VeritaskAction` of one of three kinds:

- ``call_tool``: run ``tool_name(arguments)``; the observation holds the tool's JSON payload
  and the reward is the state proximity P_t;
- ``list_tools``: the domain's OpenAI tool schemas;
- ``reply``: a text message to the user; the scripted user answers, and when it stops the
  episode is done and the reward is the verified reward.

The action kind is ``kind``, not OpenEnv's ``type``, so OpenEnv's own MCP routing of
``call_tool`` / ``list_tools`` payloads does not take these actions away from the environment.

:func:`make_openenv_app` wraps the FastAPI app in the Host/Origin checks of the other servers
(DNS rebinding, cross-site requests; ``docs/design/0020-server-hardening.md``), WebSocket
handshakes included; bodies are read whole and bounded (:func:`~veritask.serve._asgi.bounded_body`)
and WebSocket endings kept quiet (:func:`~veritask.serve._asgi.quiet_websockets`: a normal close
logs nothing). :func:`openenv_server` listens like the other servers (a request deadline, a
connection cap, accepts that back off when descriptors run out) and binds loopback unless told
otherwise. Needs the ``openenv`` extra (``pip install 'veritask[openenv]'``).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import TYPE_CHECKING, Any, Literal

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import Field

from veritask.integrations._session import VeritaskEnv
from veritask.serve._asgi import bounded_body, quiet_websockets
from veritask.serve._net import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    MAX_CONNECTIONS,
    REQUEST_TIMEOUT,
    allowed_hosts,
    check_bind,
    host_error,
)
from veritask.serve._service import state_digest

if TYPE_CHECKING:
    from veritask.serve._listen import GuardedServer

__all__ = [
    "VeritaskAction",
    "VeritaskObservation",
    "VeritaskOpenEnv",
    "VeritaskState",
    "make_openenv_app",
    "openenv_factory",
    "openenv_server",
    "serve_openenv",
]

DEFAULT_MAX_ENVS = 256
"""Concurrent WebSocket sessions (one environment each) a server holds by default."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class VeritaskAction(Action):  # type: ignore[misc]
    """One action: call a tool, list the tools, or reply to the user."""

    kind: Literal["call_tool", "list_tools", "reply"] = Field(description="What to do")
    tool_name: str = Field(default="", description="The tool to call (call_tool)")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Its arguments")
    content: str = Field(default="", description="The message to the user (reply)")


class VeritaskObservation(Observation):  # type: ignore[misc]
    """What the policy sees after ``reset`` or a step."""

    task_id: str = Field(default="", description="The task being played")
    system: str = Field(default="", description="The wiki policy (on reset)")
    user: str = Field(default="", description="The user's latest message")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="OpenAI tool schemas")
    result: dict[str, Any] | None = Field(default=None, description="A tool call's payload")
    proximity: float = Field(default=0.0, description="State proximity P_t after the action")


class VeritaskState(State):  # type: ignore[misc]
    """The episode's state: counts, distance to the target and a digest of the database."""

    task_id: str = ""
    done: bool = False
    distance_to_target: int | None = None
    proximity: float = 0.0
    state_sha256: str = ""
    reward: float | None = None


class VeritaskOpenEnv(Environment[VeritaskAction, VeritaskObservation, VeritaskState]):  # type: ignore[misc]
    """One OpenEnv session's environment over a dataset directory of veritask tasks.

    Args:
        dataset: The dataset directory.
        lambda_err: The dense reward's penalty per rule violation (for the trajectory).
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, dataset: str, lambda_err: float = 0.1) -> None:
        super().__init__()
        self.episode = VeritaskEnv(dataset, lambda_err=lambda_err)
        self._episode_id: str | None = None
        self._reward: float | None = None

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: str | None = None,
        **kwargs: Any,
    ) -> VeritaskObservation:
        """Start ``task_id`` (else the task at ``seed`` modulo the dataset, else the first)."""
        obs = self.episode.reset(task_id, seed)
        self._episode_id, self._reward = episode_id, None
        return VeritaskObservation(
            task_id=obs.task_id,
            system=obs.system,
            user=obs.user,
            tools=obs.tools,
            proximity=self.episode.proximity(),
            reward=None,
            done=False,
        )

    def step(
        self, action: VeritaskAction, timeout_s: float | None = None, **kwargs: Any
    ) -> VeritaskObservation:
        """Run one action on the episode (see the module's documentation); ``timeout_s`` is
        not needed (every action finishes in microseconds to milliseconds)."""
        del timeout_s
        if action.kind == "list_tools":
            return self._observe(tools=self.episode.tools)
        if action.kind == "call_tool":
            call_id = f"call_{len(self.episode.steps) + 1}"
            payload = self.episode.record_call(action.tool_name, action.arguments, call_id)
            return self._observe(result=json.loads(json.dumps(payload, default=str)))
        out = self.episode.step({"role": "assistant", "content": action.content})
        user = next((m["content"] for m in out.messages if m.get("role") == "user"), "")
        if out.done:
            self._reward = float(self.episode.reward()["reward"])
        return self._observe(user=str(user or ""))

    def _observe(self, **fields: Any) -> VeritaskObservation:
        proximity = self.episode.proximity()
        done = self.episode.done
        reward = self._reward if done else proximity
        return VeritaskObservation(
            task_id=self.episode.task.package.id,
            proximity=proximity,
            reward=reward,
            done=done,
            **fields,
        )

    @property
    def state(self) -> VeritaskState:
        """The episode's counts, distance, proximity and database digest."""
        session = self.episode.session
        return VeritaskState(
            episode_id=self._episode_id,
            step_count=len(session.steps),
            task_id=self.episode.task.package.id,
            done=self.episode.done,
            distance_to_target=session.distance,
            proximity=self.episode.proximity(),
            state_sha256=state_digest(session.env),
            reward=self._reward,
        )

    def get_metadata(self) -> EnvironmentMetadata:
        """Name and description shown at ``/metadata``."""
        return EnvironmentMetadata(
            name="veritask",
            description="Verifiable tool-use tasks on policy-compiled SQLite environments",
            version="0.1.0",
        )

    def close(self) -> None:
        """Release the episode's database."""
        self.episode.close()


def openenv_factory(dataset: str, lambda_err: float = 0.1) -> Callable[[], VeritaskOpenEnv]:
    """The factory ``create_app`` calls once per WebSocket session."""

    def make() -> VeritaskOpenEnv:
        return VeritaskOpenEnv(dataset, lambda_err)

    return make


def _json(status: int, code: str, message: str) -> tuple[dict[str, Any], bytes]:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    start = {
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json")],
    }
    return start, body


def guard_hosts(app: ASGIApp, hosts: frozenset[str]) -> ASGIApp:
    """``app`` behind the servers' Host/Origin check: an HTTP request from a foreign ``Host``
    is answered 421 and a cross-site ``Origin`` 403 (JSON); such a WebSocket handshake is
    refused (HTTP 403) before the app sees it."""

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refused = host_error(headers, hosts)
        if refused is None:
            await app(scope, receive, send)
        elif scope["type"] == "websocket":
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008})
        else:
            start, body = _json(*refused)
            await send(start)
            await send({"type": "http.response.body", "body": body})

    return guarded


def make_openenv_app(
    dataset: str,
    *,
    port: int = DEFAULT_PORT,
    allowed_host: Iterable[str] = (),
    max_concurrent_envs: int = DEFAULT_MAX_ENVS,
    lambda_err: float = 0.1,
) -> ASGIApp:
    """OpenEnv's FastAPI app over ``dataset``, behind the Host/Origin checks.

    Args:
        dataset: The dataset directory.
        port: The port the server is reached on (for the Host allow-list).
        allowed_host: More ``NAME[:PORT]`` entries clients use (``*`` turns the checks off).
        max_concurrent_envs: WebSocket sessions at once.
        lambda_err: The dense reward's penalty per rule violation.
    """
    app = create_app(
        openenv_factory(dataset, lambda_err),
        VeritaskAction,
        VeritaskObservation,
        env_name="veritask",
        max_concurrent_envs=max_concurrent_envs,
    )
    guarded = quiet_websockets(bounded_body(app))
    return guard_hosts(guarded, allowed_hosts(port, allowed_host))


def openenv_server(
    dataset: str,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    allow_remote: bool = False,
    allowed_host: Iterable[str] = (),
    max_concurrent_envs: int = DEFAULT_MAX_ENVS,
    request_timeout: float = REQUEST_TIMEOUT,
    max_connections: int = MAX_CONNECTIONS,
) -> tuple[GuardedServer, socket.socket]:
    """The OpenEnv app on a bound socket, ready to serve (``server.run([sock])``).

    Loopback unless ``allow_remote``; a non-loopback ``host`` is added to the allowed hosts.
    ``port`` 0 picks a free port (read it from the socket).

    Raises:
        ValueError: ``host`` is not loopback and ``allow_remote`` is false.
        OSError: The address cannot be bound.
    """
    from veritask.serve._listen import GuardedServer, bind, guarded_config

    check_bind(host, allow_remote)
    sock = bind(host, port)
    bound = sock.getsockname()[1]
    extra = [*allowed_host, host] if allow_remote else list(allowed_host)
    app = make_openenv_app(
        dataset, port=bound, allowed_host=extra, max_concurrent_envs=max_concurrent_envs
    )
    config = guarded_config(
        app, request_timeout=request_timeout, max_connections=max_connections, ws="auto"
    )
    return GuardedServer(config), sock


def serve_openenv(
    dataset: str,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    allow_remote: bool = False,
    allowed_host: Iterable[str] = (),
    max_concurrent_envs: int = DEFAULT_MAX_ENVS,
) -> None:
    """Serve the OpenEnv app until interrupted (see :func:`openenv_server`).

    Raises:
        ValueError: ``host`` is not loopback and ``allow_remote`` is false.
    """
    server, sock = openenv_server(
        dataset,
        host=host,
        port=port,
        allow_remote=allow_remote,
        allowed_host=allowed_host,
        max_concurrent_envs=max_concurrent_envs,
    )
    try:
        server.run([sock])
    finally:
        sock.close()
