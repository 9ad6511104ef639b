"""An OpenEnv environment over veritask tasks, served by OpenEnv's own ``create_app``.

OpenEnv (the ``openenv`` package, ``meta-pytorch/OpenEnv``) keeps one ``Environment`` per
WebSocket session at ``/ws`` (``reset`` / ``step`` / ``state`` messages) and also serves
``/reset``, ``/step`` and ``/state`` over HTTP (each on a fresh environment), ``/mcp``,
``/schema``, ``/metadata`` and ``/health``. :class:`VeritaskOpenEnv` is that environment:
``reset(seed, episode_id, task_id=...)`` starts a task on its own in-memory database, and
``step`` takes an action of one of three types:

- ``call_tool``: run ``tool_name(arguments)``; the observation is a ``CallToolObservation``
  whose ``result`` is the MCP ``CallToolResult`` the veritask MCP server would answer (built
  with the official ``mcp`` SDK), and the reward is the state proximity P_t;
- ``list_tools``: the domain's tools as MCP tool definitions (a ``ListToolsObservation``);
- ``reply``: a text message to the user; the scripted user answers, and when it stops the
  episode is done and the reward is the verified reward.

The first two are OpenEnv's own MCP action payloads, so OpenEnv's ``MCPToolClient``
(``list_tools()``, ``call_tool()``, ``step(CallToolAction(...))``) plays veritask tasks as it
is; its ``step`` takes a :class:`VeritaskAction` of type ``reply`` to talk to the user.

:func:`make_openenv_app` puts the app behind the servers' one Host/Origin guard
(:func:`~veritask.serve._hosts.guard_hosts`: the loopback names on any port, WebSocket
handshakes included) and turns failures into JSON (a bad action is a 409 with its reason);
bodies are read whole and bounded (:func:`~veritask.serve._asgi.bounded_body`) and WebSocket
endings kept quiet (:func:`~veritask.serve._asgi.quiet_websockets`). :func:`openenv_server`
listens like the other servers (a request deadline, a connection cap, accepts that back off
when descriptors run out) and binds loopback unless told otherwise. Needs the ``openenv``
extra (``pip install 'veritask[openenv]'``).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_types import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Tool,
)
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import AliasChoices, Field
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp

from veritask import __version__
from veritask.env import ToolError, ToolResult
from veritask.integrations._session import VeritaskEnv
from veritask.serve._asgi import bounded_body, quiet_websockets
from veritask.serve._hosts import guard_hosts
from veritask.serve._net import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    MAX_CONNECTIONS,
    REQUEST_TIMEOUT,
    check_bind,
)
from veritask.serve._service import state_digest
from veritask.serve.mcp_server import call_result, session_tool_definitions

if TYPE_CHECKING:
    from veritask.serve._listen import GuardedServer

__all__ = [
    "ActionError",
    "VeritaskAction",
    "VeritaskCallObservation",
    "VeritaskObservation",
    "VeritaskOpenEnv",
    "VeritaskState",
    "VeritaskToolsObservation",
    "make_openenv_app",
    "openenv_factory",
    "openenv_server",
    "serve_openenv",
]

DEFAULT_MAX_ENVS = 256
"""Concurrent WebSocket sessions (one environment each) a server holds by default."""


class VeritaskAction(Action):  # type: ignore[misc]
    """One action: call a tool, list the tools, or reply to the user.

    ``type`` is OpenEnv's MCP discriminator, so the payloads OpenEnv's ``MCPToolClient`` sends
    (``{"type": "call_tool", "tool_name", "arguments"}``, ``{"type": "list_tools"}``) are
    veritask actions as they are. ``kind`` is accepted for ``type`` (older clients).
    """

    type: Literal["call_tool", "list_tools", "reply"] = Field(
        validation_alias=AliasChoices("type", "kind"), description="What to do"
    )
    tool_name: str = Field(default="", description="The tool to call (call_tool)")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Its arguments")
    content: str = Field(default="", description="The message to the user (reply)")


class VeritaskObservation(Observation):  # type: ignore[misc]
    """What the policy sees after ``reset`` or a reply."""

    task_id: str = Field(default="", description="The task being played")
    system: str = Field(default="", description="The wiki policy (on reset)")
    user: str = Field(default="", description="The user's latest message")
    tool_schemas: list[dict[str, Any]] = Field(
        default_factory=list, description="OpenAI tool schemas (on reset)"
    )
    proximity: float = Field(default=0.0, description="State proximity P_t after the action")


class VeritaskToolsObservation(ListToolsObservation):  # type: ignore[misc]
    """The answer to ``list_tools``: MCP tool definitions (``name``, ``description``,
    ``input_schema``), as OpenEnv's MCP client reads them."""

    task_id: str = ""
    proximity: float = 0.0


class VeritaskCallObservation(CallToolObservation):  # type: ignore[misc]
    """The answer to ``call_tool``: ``result`` is the MCP ``CallToolResult`` in wire form
    (``content``, ``structuredContent``, ``isError``), as the veritask MCP server answers it; a
    refused call is a tool error (``isError``), never a transport ``error``."""

    task_id: str = ""
    proximity: float = 0.0


class VeritaskState(State):  # type: ignore[misc]
    """The episode's state: counts, distance to the target and a digest of the database."""

    task_id: str = ""
    done: bool = False
    distance_to_target: int | None = None
    proximity: float = 0.0
    state_sha256: str = ""
    reward: float | None = None


class ActionError(ValueError):
    """An action the episode cannot take (answered 409 over HTTP, an error message over
    WebSocket)."""


NO_EPISODE = (
    "no episode: OpenEnv's HTTP /step runs on a fresh environment (it keeps no session);"
    " play an episode over the WebSocket session (/ws, OpenEnv's EnvClient or MCPToolClient)"
)


class EpisodeTools:
    """The episode's tools as the MCP client OpenEnv's ``/mcp`` endpoint looks for on an
    environment (``env.mcp_client``): ``list_tools`` and ``call_tool`` answer with the official
    ``mcp`` SDK's tool definitions and ``CallToolResult`` in wire form, exactly what the veritask
    MCP server answers. A call is recorded on the episode like a ``call_tool`` step, so
    OpenEnv's ``MCPToolClient`` (tools over ``/mcp``, reset and replies over ``/ws`` in the same
    session) plays one episode.

    Args:
        env: The environment whose episode the tools act on.
    """

    def __init__(self, env: VeritaskOpenEnv) -> None:
        self.env = env

    def is_connected(self) -> bool:
        """Always: the tools run in process (no transport to open)."""
        return True

    async def __aenter__(self) -> EpisodeTools:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def list_tools(self) -> list[dict[str, Any]]:
        """The domain's tools as MCP tool definitions (``name``, ``description``,
        ``inputSchema``)."""
        with self.env.lock:
            self.env.playing()
            tools = session_tool_definitions(self.env.episode.session)
        return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        """Run one tool call on the episode; the MCP ``CallToolResult`` in wire form."""
        with self.env.lock:
            self.env.playing()
            return self.env.call(name, dict(arguments or {}))


class VeritaskOpenEnv(Environment[VeritaskAction, Observation, VeritaskState]):  # type: ignore[misc]
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
        self._started = False
        self.lock = threading.Lock()
        self.mcp_client = EpisodeTools(self)

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: str | None = None,
        **kwargs: Any,
    ) -> VeritaskObservation:
        """Start ``task_id`` (else the task at ``seed`` modulo the dataset, else the first).

        Raises:
            ActionError: ``task_id`` is not in the dataset.
        """
        try:
            obs = self.episode.reset(task_id, seed)
        except KeyError as exc:
            raise ActionError(f"unknown task {task_id!r}") from exc
        self._episode_id, self._reward, self._started = episode_id, None, True
        return VeritaskObservation(
            task_id=obs.task_id,
            system=obs.system,
            user=obs.user,
            tool_schemas=obs.tools,
            proximity=self.episode.proximity(),
            reward=None,
            done=False,
        )

    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        """Run one action on the episode (see the module's documentation); ``timeout_s`` is
        not needed (every action finishes in microseconds to milliseconds).

        Raises:
            ActionError: No episode was started, it is over, or ``call_tool`` names no tool.
        """
        del timeout_s
        kind, name, arguments, content = _unpack(action)
        with self.lock:
            self.playing()
            if kind == "list_tools":
                tools = [_openenv_tool(t) for t in session_tool_definitions(self.episode.session)]
                return VeritaskToolsObservation(tools=tools, **self._scored())
            if kind == "call_tool":
                result = self.call(name, arguments)
                return VeritaskCallObservation(tool_name=name, result=result, **self._scored())
            return self._reply(content)

    def playing(self) -> None:
        """Check that an episode is under way.

        Raises:
            ActionError: No episode was started, or it is over.
        """
        if not self._started:
            raise ActionError(NO_EPISODE)
        if self.episode.done:
            raise ActionError("the episode is over; reset to start another")

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run and record one tool call; the MCP ``CallToolResult`` in wire form.

        Raises:
            ActionError: ``name`` is empty.
        """
        if not name:
            raise ActionError("call_tool needs a tool_name")
        call_id = f"call_{len(self.episode.steps) + 1}"
        payload = self.episode.record_call(name, arguments, call_id)
        wire: dict[str, Any] = call_result(_tool_result(name, payload)).model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
        return wire

    def _reply(self, content: str) -> VeritaskObservation:
        out = self.episode.step({"role": "assistant", "content": content})
        user = next((m["content"] for m in out.messages if m.get("role") == "user"), "")
        if out.done:
            self._reward = float(self.episode.reward()["reward"])
        return VeritaskObservation(user=str(user or ""), **self._scored())

    def _scored(self) -> dict[str, Any]:
        proximity = self.episode.proximity()
        done = self.episode.done
        return {
            "task_id": self.episode.task.package.id,
            "proximity": proximity,
            "reward": self._reward if done else proximity,
            "done": done,
        }

    @property
    def state(self) -> VeritaskState:
        """The episode's counts, distance, proximity and database digest."""
        if not self._started:
            return VeritaskState(episode_id=self._episode_id, step_count=0)
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
            version=__version__,
        )

    def close(self) -> None:
        """Release the episode's database."""
        self.episode.close()


def _unpack(action: Action) -> tuple[str, str, dict[str, Any], str]:
    """``(kind, tool_name, arguments, content)`` of a veritask or an OpenEnv MCP action."""
    if isinstance(action, VeritaskAction):
        return action.type, action.tool_name, action.arguments, action.content
    if isinstance(action, CallToolAction):
        return "call_tool", action.tool_name, dict(action.arguments), ""
    if isinstance(action, ListToolsAction):
        return "list_tools", "", {}, ""
    raise ActionError(f"unsupported action {type(action).__name__}")


def _tool_result(name: str, payload: dict[str, Any]) -> ToolResult:
    """The :class:`~veritask.env.ToolResult` of a recorded call's JSON form."""
    error = payload.get("error")
    return ToolResult(
        tool=name,
        ok=bool(payload.get("ok")),
        result=json.loads(json.dumps(payload.get("result"), default=str)),
        error=ToolError(**error) if isinstance(error, dict) else None,
        state_changed=bool(payload.get("state_changed")),
    )


def _openenv_tool(tool: Any) -> Tool:
    """An MCP SDK tool definition as OpenEnv's ``Tool`` (``input_schema``)."""
    return Tool(name=tool.name, description=tool.description or "", input_schema=tool.inputSchema)


def openenv_factory(dataset: str, lambda_err: float = 0.1) -> Callable[[], VeritaskOpenEnv]:
    """The factory ``create_app`` calls once per WebSocket session."""

    def make() -> VeritaskOpenEnv:
        return VeritaskOpenEnv(dataset, lambda_err)

    return make


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


async def _action_error(_request: Request, exc: Exception) -> JSONResponse:
    """A bad action or reset: 409 with the reason (never a plain-text 500)."""
    return _error(409, "BAD_ACTION", str(exc))


async def _internal_error(_request: Request, exc: Exception) -> JSONResponse:
    """Any other failure: 500 with a JSON body naming the exception's type (not its text)."""
    return _error(500, "INTERNAL_ERROR", f"the server failed ({type(exc).__name__})")


def make_openenv_app(
    dataset: str,
    *,
    allowed_host: Iterable[str] = (),
    max_concurrent_envs: int = DEFAULT_MAX_ENVS,
    lambda_err: float = 0.1,
) -> ASGIApp:
    """OpenEnv's FastAPI app over ``dataset``, behind the servers' Host/Origin guard.

    Errors are JSON: a bad action (``/step`` before an episode, after its end, a ``call_tool``
    without a tool) is a 409 ``{"error": {"code": "BAD_ACTION", "message"}}``, a body that is not
    an action a 422 (FastAPI's validation report), anything else a 500 in the same shape.

    Args:
        dataset: The dataset directory.
        allowed_host: More names clients use (``NAME[:PORT]``; ``*`` turns the checks off).
            The loopback names are accepted on any port.
        max_concurrent_envs: WebSocket sessions at once.
        lambda_err: The dense reward's penalty per rule violation.
    """
    app = create_app(
        openenv_factory(dataset, lambda_err),
        VeritaskAction,
        VeritaskObservation,
        env_name="veritask",
        max_concurrent_envs=max_concurrent_envs,
        state_cls=VeritaskState,
    )
    app.add_exception_handler(ActionError, _action_error)
    app.add_exception_handler(Exception, _internal_error)
    guarded = quiet_websockets(bounded_body(app))
    return guard_hosts(guarded, allowed_host)


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
    extra = [*allowed_host, host] if allow_remote else list(allowed_host)
    app = make_openenv_app(dataset, allowed_host=extra, max_concurrent_envs=max_concurrent_envs)
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
