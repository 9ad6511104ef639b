"""Serve an environment's tools over the Model Context Protocol with the official ``mcp`` SDK.

One server holds one :class:`~veritask.task.EnvSession` (one environment), or any other
:class:`~veritask.task.Session` an ``opener`` builds (a simulated one: its tools are the
session's ``tools``, its calls go through ``astep``, one at a time): every tool of the domain is published
under its veritask name, with its logic-aware description (preconditions and side effects) and
its JSON schema. A call runs ``Environment.call``; a rejected call (a policy violation, a bad
argument, an unknown tool) comes back as a tool error (``isError``) whose text and structured
content are the structured error ``{code, message, violated_rule, hint}``, so an MCP client
sees exactly what a veritask agent sees.

Over stdio one client owns the environment for the life of the process. Over streamable HTTP
every MCP session talks to the same environment, so its state is shared between clients (this
is the protocol's contract here; per-client sessions are what :mod:`veritask.serve.app` offers).

Works with the ``mcp`` SDK 1.x (decorator-registered handlers) and 2.x (constructor-registered
handlers); the protocol objects are built from their wire form, which both accept.
"""

from __future__ import annotations

import functools
import json
import re
import socket
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import anyio
import mcp.types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from veritask import __version__
from veritask.domains import load_domain
from veritask.env import CompiledDomain, ConfirmationGate, Environment, ToolResult
from veritask.policy import DomainSpec, render_wiki
from veritask.serve._asgi import ASGIApp, bounded_body
from veritask.serve._hosts import guard_hosts
from veritask.serve._net import (
    MAX_CONNECTIONS,
    REQUEST_TIMEOUT,
    check_bind,
    is_loopback,
)
from veritask.task import EnvSession, Session

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from veritask.serve._listen import GuardedServer

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
HTTP_PATH = "/mcp"

# mcp 1.x registers handlers with decorators (``@server.call_tool()``); 2.x takes them in the
# constructor (``Server(on_call_tool=...)``) and has no such decorator.
_DECORATOR_API = hasattr(Server, "call_tool")


class EnvironmentServer(NamedTuple):
    """A low-level MCP server and the session its tools act on."""

    server: Server[Any]
    session: Session

    @property
    def env(self) -> Environment:
        """The environment the tools act on.

        Raises:
            TypeError: The session runs on no database (an opener built another kind).
        """
        if not isinstance(self.session, EnvSession):
            raise TypeError(f"the served {type(self.session).__name__} has no database")
        return self.session.env

    def close(self) -> None:
        """Release the environment."""
        self.session.close()


def tool_definitions(env: Environment) -> list[types.Tool]:
    """The environment's tools as MCP tool definitions.

    Args:
        env: The environment whose tools to publish.

    Returns:
        One definition per tool, with the veritask name, description and input schema.
    """
    return [
        types.Tool.model_validate(
            {"name": t.name, "description": t.description, "inputSchema": t.json_schema()}
        )
        for t in (ConfirmationGate(env).tools if env.spec.confirm_writes else env.tools).values()
    ]


def session_tool_definitions(session: Session) -> list[types.Tool]:
    """Any session's tools (OpenAI function schemas) as MCP tool definitions."""
    tools = []
    for schema in session.tools:
        fn = schema.get("function", schema)
        wire = {
            "name": fn["name"],
            "description": fn.get("description", ""),
            "inputSchema": fn.get("parameters") or {"type": "object", "properties": {}},
        }
        tools.append(types.Tool.model_validate(wire))
    return tools


def call_result(result: ToolResult) -> types.CallToolResult:
    """Convert a veritask tool result into an MCP tool result.

    A success carries the result as JSON text and as structured content (a non-object result
    is wrapped as ``{"result": ...}``). A failure sets ``isError`` and carries the structured
    error ``{code, message, violated_rule, hint}`` as both JSON text and structured content.

    Args:
        result: The outcome of ``Environment.call``.

    Returns:
        The MCP ``CallToolResult``.
    """
    if result.ok:
        payload: Any = result.result
        structured = payload if isinstance(payload, dict) else {"result": payload}
    else:
        payload = structured = (
            result.error.to_json()
            if result.error is not None
            else {"code": "ERROR", "message": "tool call failed", "violated_rule": None, "hint": ""}
        )
    text = json.dumps(payload, ensure_ascii=False, default=str)
    return types.CallToolResult.model_validate(
        {
            "content": [{"type": "text", "text": text}],
            "structuredContent": structured,
            "isError": not result.ok,
        }
    )


Opener = Callable[[CompiledDomain, bytes], Session]
"""Builds the served session from the compiled domain and the start state image."""


def _session(
    domain: str | Path | DomainSpec | CompiledDomain,
    state: str | Path | None,
    opener: Opener | None = None,
) -> Session:
    spec = domain if isinstance(domain, DomainSpec | CompiledDomain) else load_domain(domain)
    compiled = spec if isinstance(spec, CompiledDomain) else CompiledDomain.from_spec(spec)
    origin = Path(state).read_bytes() if state is not None else compiled.seed
    if opener is not None:
        return opener(compiled, origin)
    return EnvSession(compiled, origin, record=False)


_ListTools = Callable[[], Awaitable[list[types.Tool]]]
_CallTool = Callable[[str, dict[str, Any] | None], Awaitable[types.CallToolResult]]


def _handlers(session: Session) -> tuple[_ListTools, _CallTool]:
    """``list_tools`` and ``call_tool`` over ``session``."""
    if isinstance(session, EnvSession):
        env_session = session

        async def list_env_tools() -> list[types.Tool]:
            return tool_definitions(env_session.env)

        async def call_env_tool(
            tool: str, arguments: dict[str, Any] | None
        ) -> types.CallToolResult:
            # EnvSession.call is synchronous and never awaits, so concurrent requests on the
            # event loop cannot interleave inside one call.
            return call_result(env_session.call(tool, arguments or {}))

        return list_env_tools, call_env_tool
    lock = anyio.Lock()
    turns = [0]

    async def list_tools() -> list[types.Tool]:
        return session_tool_definitions(session)

    async def call_tool(tool: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        async with lock:  # one call at a time: each sees the history of the ones before
            turns[0] += 1
            fn = {"name": tool, "arguments": json.dumps(arguments or {})}
            _message, result = await session.astep(
                {"id": f"call_{turns[0]}", "function": fn}, turns[0]
            )
        return call_result(result)

    return list_tools, call_tool


def build_server(
    domain: str | Path | DomainSpec | CompiledDomain,
    state: str | Path | None = None,
    *,
    name: str | None = None,
    opener: Opener | None = None,
) -> EnvironmentServer:
    """Build an MCP server publishing a domain's tools over one fresh environment.

    Args:
        domain: A built-in domain name, a spec file path, a loaded spec or a compiled domain.
        state: A SQLite state file to start from (see ``Environment.save``); the domain's
            seed state when None.
        name: The server name announced to clients (default ``veritask-<domain>``).
        opener: Builds the served session from the compiled domain and the start state (any
            :class:`~veritask.task.Session`, e.g. a simulated environment); None serves an
            :class:`~veritask.task.EnvSession`.

    Returns:
        The server and the session it serves; the session keeps its state across calls for as
        long as the server lives.
    """
    spec = domain if isinstance(domain, DomainSpec | CompiledDomain) else load_domain(domain)
    compiled = spec if isinstance(spec, CompiledDomain) else CompiledDomain.from_spec(spec)
    session = _session(compiled, state, opener)
    server_name = name or f"veritask-{compiled.spec.name}"
    instructions = render_wiki(compiled.spec)
    list_tools, call_tool = _handlers(session)

    if _DECORATOR_API:
        legacy: Any = Server(server_name, version=__version__, instructions=instructions)
        legacy.list_tools()(list_tools)
        legacy.call_tool(validate_input=False)(call_tool)
        return EnvironmentServer(legacy, session)

    async def on_list_tools(
        _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=await list_tools())

    async def on_call_tool(
        _ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await call_tool(params.name, params.arguments)

    server: Server[Any] = Server(
        server_name,
        version=__version__,
        description=compiled.spec.description or None,
        instructions=instructions,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
    return EnvironmentServer(server, session)


# -- stdio: every line gets an answer ----------------------------------------------------------

# mcp 2.x validates wire messages with a type adapter; 1.x with the JSONRPCMessage root model.
_ADAPTER: Any = getattr(types, "jsonrpc_message_adapter", None)
_LEGACY_MESSAGE: Any = None if _ADAPTER is not None else types.JSONRPCMessage
_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_TOKEN = re.compile(_STRING + r"|[{}\[\]]")
_COLON = re.compile(r"\s*:\s*")
PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def _validate(line: str) -> None:
    """Parse ``line`` as the SDK's stdio reader does; raises what the SDK would drop."""
    if _ADAPTER is not None:
        _ADAPTER.validate_json(line, by_name=False)
    else:
        _LEGACY_MESSAGE.model_validate_json(line)


def _wire(message: dict[str, Any]) -> Any:
    """A JSON-RPC message object the SDK's writer accepts, from its wire form."""
    if _ADAPTER is not None:
        return _ADAPTER.validate_python(message, by_name=False)
    return _LEGACY_MESSAGE.model_validate(message)


def request_id(line: str) -> str | int | None:
    """The top-level ``"id"`` of a JSON-RPC line, found without decoding nested values.

    A request too deeply nested (or otherwise unacceptable) for the SDK's parser still gets its
    answer under its own id; None when there is no usable id.
    """
    depth = 0
    for match in _TOKEN.finditer(line):
        token = match.group()
        if token in ("{", "["):
            depth += 1
        elif token in ("}", "]"):
            depth -= 1
        elif depth == 1 and token == '"id"':
            colon = _COLON.match(line, match.end())
            if colon is None or line[colon.end() : colon.end() + 1] in ("{", "["):
                continue
            try:
                value, _ = json.JSONDecoder().raw_decode(line, colon.end())
            except ValueError:
                return None
            usable = isinstance(value, str | int) and not isinstance(value, bool)
            return value if usable else None
    return None


def rpc_error(line: str) -> Any | None:
    """The JSON-RPC error answering ``line``, or None when the SDK accepts it.

    Text that is not JSON is a parse error (-32700, id null); JSON the SDK refuses (not a
    JSON-RPC message, nested past its parser's depth limit, a lone surrogate) is an invalid
    request (-32600) under the request's own id when it has one.
    """
    try:
        _validate(line)
        return None
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        errors = exc.errors() if isinstance(exc, ValidationError) else []
        detail = str(errors[0]["msg"]) if errors else str(exc)
    try:
        json.loads(line)
    except RecursionError:
        pass  # JSON, but deeper than Python's own parser goes
    except ValueError:
        error = {"code": PARSE_ERROR, "message": f"Parse error: {detail[:200]}"}
        return _wire({"jsonrpc": "2.0", "id": None, "error": error})
    error = {"code": INVALID_REQUEST, "message": f"Invalid Request: {detail[:200]}"}
    return _wire({"jsonrpc": "2.0", "id": request_id(line), "error": error})


async def _checked_lines(
    lines: AsyncIterable[str], replies: MemoryObjectSendStream[SessionMessage]
) -> AsyncIterator[str]:
    """The lines the SDK accepts; the others are answered here through ``replies``."""
    async with replies:
        async for line in lines:
            if not line.strip():
                continue
            error = rpc_error(line)
            if error is None:
                yield line
            else:
                await replies.send(SessionMessage(error))


async def _forward(replies: MemoryObjectReceiveStream[SessionMessage], out: Any) -> None:
    """Write the answers to refused lines on a clone of the server's output stream."""
    async with replies, out:
        async for message in replies:
            await out.send(message)


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one client over the process's stdin and stdout until it disconnects.

    The SDK drops a line it cannot parse without a word, so its client would wait for ever;
    here every such line is answered with a JSON-RPC error (see :func:`rpc_error`).

    Args:
        server: The MCP server to run.
    """
    send, receive = anyio.create_memory_object_stream[SessionMessage](64)
    stdin = open(0, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    lines: Any = _checked_lines(anyio.wrap_file(stdin), send)
    async with (
        stdio_server(stdin=lines) as (read_stream, write_stream),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(_forward, receive, write_stream.clone())
        await server.run(read_stream, write_stream, server.create_initialization_options())


class _HttpEndpoint:
    """ASGI endpoint handing every request to a streamable-HTTP session manager (mcp 1.x)."""

    def __init__(self, manager: Any) -> None:
        self._manager = manager

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self._manager.handle_request(scope, receive, send)


NO_SDK_HOST_CHECK = TransportSecuritySettings(enable_dns_rebinding_protection=False)
"""The SDK's own DNS-rebinding check is off: the servers' one guard
(:func:`~veritask.serve._hosts.guard_hosts`) checks ``Host`` and ``Origin`` in front of it."""


_RPC_CODES = {"TOO_DEEP": PARSE_ERROR}


def rpc_error_body(status: int, code: str, message: str) -> bytes:
    """A refusal as a JSON-RPC error without an id (the SDK's own format for bad requests)."""
    del status
    error = {
        "code": _RPC_CODES.get(code, INVALID_REQUEST),
        "message": message,
        "data": {"reason": code},
    }
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()


def http_app(
    server: Server[Any],
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    allowed_hosts: Iterable[str] = (),
) -> ASGIApp:
    """The streamable-HTTP ASGI application serving ``server`` at ``/mcp``.

    Requests must name the server by an allowed host in ``Host`` (the loopback names, ``host``
    itself when it is not loopback, and ``allowed_hosts``, on any port), and a browser's
    ``Origin`` must name one of them: DNS rebinding and cross-site requests are refused by the
    servers' one guard (:func:`~veritask.serve._hosts.guard_hosts`: 400 / 403). Each
    body is read whole before the SDK sees it (:func:`~veritask.serve._asgi.bounded_body`): one
    over :data:`~veritask.serve.MAX_BODY_BYTES` is a 413, one nested past
    :data:`~veritask.serve.MAX_JSON_DEPTH` a 400, and a client leaving mid-body one log line;
    these refusals are JSON-RPC errors without an id, like the SDK's.

    Args:
        server: The MCP server to expose.
        host: The address the application will be bound to.
        port: The port it will be bound to (unused: any port is accepted).
        allowed_hosts: More names clients may use (see :func:`~veritask.serve.allowed_hosts`).

    Returns:
        An ASGI application (its lifespan runs the session manager).
    """
    names = [*allowed_hosts, *([] if is_loopback(host) else [host])]
    security = NO_SDK_HOST_CHECK
    del port  # the guard accepts the allowed names on any port

    def guard(inner: ASGIApp) -> ASGIApp:
        return guard_hosts(bounded_body(inner, make_error=rpc_error_body), names)

    if hasattr(server, "streamable_http_app"):
        app: ASGIApp = server.streamable_http_app(
            streamable_http_path=HTTP_PATH, host=host, transport_security=security
        )
        return guard(app)
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.routing import Route

    manager = StreamableHTTPSessionManager(app=server, security_settings=security)
    legacy = Starlette(
        routes=[Route(HTTP_PATH, endpoint=_HttpEndpoint(manager))],
        lifespan=lambda _app: manager.run(),
    )
    return guard(legacy)


def http_server(
    server: Server[Any],
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    allow_remote: bool = False,
    allowed_hosts: Iterable[str] = (),
    request_timeout: float = REQUEST_TIMEOUT,
    max_connections: int = MAX_CONNECTIONS,
) -> tuple[GuardedServer, socket.socket]:
    """:func:`http_app` on a bound socket, ready to serve (``await web.serve([sock])``).

    It listens like the HTTP environment server (:mod:`veritask.serve._listen`): a deadline
    on each request, a cap on open connections, and accepts that back off when file
    descriptors run out.

    Args:
        server: The MCP server to expose.
        host: The address to bind; loopback unless ``allow_remote`` (there is no
            authentication).
        port: The TCP port to bind (0: any free port, read it from the socket).
        allow_remote: Allow a non-loopback ``host``.
        allowed_hosts: More names clients may use in ``Host`` (see :func:`http_app`).
        request_timeout: Seconds a client has to send each request, head and body.
        max_connections: Connections open at once; one more is answered 503 and closed.

    Raises:
        ValueError: ``host`` is not loopback and ``allow_remote`` is false, or a limit is
            not positive.
        OSError: The address cannot be bound.
    """
    from veritask.serve._listen import GuardedServer, bind, guarded_config, guarded_protocol

    check_bind(host, allow_remote)
    guarded_protocol(request_timeout, max_connections)  # refuses bad limits before binding
    sock = bind(host, port)
    app = http_app(server, host, sock.getsockname()[1], allowed_hosts)
    config = guarded_config(app, request_timeout=request_timeout, max_connections=max_connections)
    return GuardedServer(config), sock


async def serve_http(
    server: Server[Any],
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    allow_remote: bool = False,
    allowed_hosts: Iterable[str] = (),
    request_timeout: float = REQUEST_TIMEOUT,
    max_connections: int = MAX_CONNECTIONS,
) -> None:
    """Serve ``server`` over streamable HTTP at ``http://host:port/mcp`` until interrupted.

    The arguments are :func:`http_server`'s.

    Raises:
        ValueError: ``host`` is not loopback and ``allow_remote`` is false, or a limit is
            not positive.
    """
    web, sock = http_server(
        server,
        host,
        port,
        allow_remote=allow_remote,
        allowed_hosts=allowed_hosts,
        request_timeout=request_timeout,
        max_connections=max_connections,
    )
    try:
        await web.serve([sock])
    finally:
        sock.close()


def run_stdio(
    domain: str | Path | DomainSpec | CompiledDomain,
    state: str | Path | None = None,
    *,
    opener: Opener | None = None,
) -> None:
    """Build a server for ``domain`` and serve it over stdio (blocking).

    Args:
        domain: A built-in domain name, a spec file path, a loaded spec or a compiled domain.
        state: A SQLite state file to start from; the seed state when None.
        opener: Builds the served session (see :func:`build_server`).
    """
    served = build_server(domain, state, opener=opener)
    try:
        anyio.run(serve_stdio, served.server)
    finally:
        served.close()


def run_http(
    domain: str | Path | DomainSpec | CompiledDomain,
    state: str | Path | None = None,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    allow_remote: bool = False,
    allowed_hosts: Iterable[str] = (),
    opener: Opener | None = None,
    request_timeout: float = REQUEST_TIMEOUT,
    max_connections: int = MAX_CONNECTIONS,
) -> None:
    """Build a server for ``domain`` and serve it over streamable HTTP (blocking).

    Args:
        domain: A built-in domain name, a spec file path, a loaded spec or a compiled domain.
        state: A SQLite state file to start from; the seed state when None.
        host: The address to bind; loopback unless ``allow_remote``.
        port: The TCP port to bind.
        allow_remote: Allow a non-loopback ``host`` (the server has no authentication).
        allowed_hosts: More names clients may use in ``Host`` (see :func:`http_app`).
        opener: Builds the served session (see :func:`build_server`).
        request_timeout: Seconds a client has to send each request, head and body.
        max_connections: Connections open at once; one more is answered 503 and closed.

    Raises:
        ValueError: ``host`` is not loopback and ``allow_remote`` is false (checked before the
            server is built).
    """
    check_bind(host, allow_remote)
    served = build_server(domain, state, opener=opener)
    try:
        anyio.run(
            functools.partial(
                serve_http,
                served.server,
                host,
                port,
                allow_remote=allow_remote,
                allowed_hosts=tuple(allowed_hosts),
                request_timeout=request_timeout,
                max_connections=max_connections,
            )
        )
    finally:
        served.close()


__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "HTTP_PATH",
    "NO_SDK_HOST_CHECK",
    "EnvironmentServer",
    "Opener",
    "build_server",
    "call_result",
    "http_app",
    "http_server",
    "request_id",
    "rpc_error",
    "rpc_error_body",
    "run_http",
    "run_stdio",
    "serve_http",
    "serve_stdio",
    "session_tool_definitions",
    "tool_definitions",
]
