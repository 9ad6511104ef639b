"""Serve an environment's tools over the Model Context Protocol with the official ``mcp`` SDK.

One server holds one :class:`~veritask.task.EnvSession` (one environment): every tool of the domain is published
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

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from veritask import __version__
from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment, ToolResult
from veritask.policy import DomainSpec, render_wiki
from veritask.task import EnvSession

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from starlette.applications import Starlette

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
HTTP_PATH = "/mcp"

# mcp 1.x registers handlers with decorators (``@server.call_tool()``); 2.x takes them in the
# constructor (``Server(on_call_tool=...)``) and has no such decorator.
_DECORATOR_API = hasattr(Server, "call_tool")


class EnvironmentServer(NamedTuple):
    """A low-level MCP server and the session its tools act on."""

    server: Server[Any]
    session: EnvSession

    @property
    def env(self) -> Environment:
        """The environment the tools act on."""
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
        for t in env.tools.values()
    ]


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


def _session(
    domain: str | Path | DomainSpec | CompiledDomain, state: str | Path | None
) -> EnvSession:
    spec = domain if isinstance(domain, DomainSpec | CompiledDomain) else load_domain(domain)
    compiled = spec if isinstance(spec, CompiledDomain) else CompiledDomain.from_spec(spec)
    origin = Path(state).read_bytes() if state is not None else compiled.seed
    return EnvSession(compiled, origin, record=False)


def build_server(
    domain: str | Path | DomainSpec | CompiledDomain,
    state: str | Path | None = None,
    *,
    name: str | None = None,
) -> EnvironmentServer:
    """Build an MCP server publishing a domain's tools over one fresh environment.

    Args:
        domain: A built-in domain name, a spec file path, a loaded spec or a compiled domain.
        state: A SQLite state file to start from (see ``Environment.save``); the domain's
            seed state when None.
        name: The server name announced to clients (default ``veritask-<domain>``).

    Returns:
        The server and the session it serves; the session keeps its state across calls for as
        long as the server lives.
    """
    session = _session(domain, state)
    spec = session.domain.spec
    server_name = name or f"veritask-{spec.name}"
    instructions = render_wiki(spec)

    async def list_tools() -> list[types.Tool]:
        return tool_definitions(session.env)

    async def call_tool(tool: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        # EnvSession.call is synchronous and never awaits, so concurrent requests on the event
        # loop cannot interleave inside one call.
        return call_result(session.call(tool, arguments or {}))

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
        description=spec.description or None,
        instructions=instructions,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
    return EnvironmentServer(server, session)


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one client over the process's stdin and stdout until it disconnects.

    Args:
        server: The MCP server to run.
    """
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


class _HttpEndpoint:
    """ASGI endpoint handing every request to a streamable-HTTP session manager (mcp 1.x)."""

    def __init__(self, manager: Any) -> None:
        self._manager = manager

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self._manager.handle_request(scope, receive, send)


def http_app(server: Server[Any], host: str = DEFAULT_HOST) -> Starlette:
    """The streamable-HTTP ASGI application serving ``server`` at ``/mcp``.

    DNS-rebinding protection is on when ``host`` is a loopback address.

    Args:
        server: The MCP server to expose.
        host: The address the application will be bound to.

    Returns:
        A Starlette application (its lifespan runs the session manager).
    """
    if hasattr(server, "streamable_http_app"):
        app: Starlette = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host)
        return app
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.routing import Route

    security = None
    if host in ("127.0.0.1", "localhost", "::1"):
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    manager = StreamableHTTPSessionManager(app=server, security_settings=security)
    return Starlette(
        routes=[Route(HTTP_PATH, endpoint=_HttpEndpoint(manager))],
        lifespan=lambda _app: manager.run(),
    )


async def serve_http(
    server: Server[Any], host: str = DEFAULT_HOST, port: int = DEFAULT_PORT
) -> None:
    """Serve ``server`` over streamable HTTP at ``http://host:port/mcp`` until interrupted.

    Args:
        server: The MCP server to run.
        host: The address to bind (loopback by default; anything else exposes the environment
            to the network without authentication).
        port: The TCP port to bind.
    """
    import uvicorn

    config = uvicorn.Config(http_app(server, host), host=host, port=port, log_level="warning")
    await uvicorn.Server(config).serve()


def run_stdio(
    domain: str | Path | DomainSpec | CompiledDomain, state: str | Path | None = None
) -> None:
    """Build a server for ``domain`` and serve it over stdio (blocking).

    Args:
        domain: A built-in domain name, a spec file path, a loaded spec or a compiled domain.
        state: A SQLite state file to start from; the seed state when None.
    """
    served = build_server(domain, state)
    try:
        anyio.run(serve_stdio, served.server)
    finally:
        served.close()


def run_http(
    domain: str | Path | DomainSpec | CompiledDomain,
    state: str | Path | None = None,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
) -> None:
    """Build a server for ``domain`` and serve it over streamable HTTP (blocking).

    Args:
        domain: A built-in domain name, a spec file path, a loaded spec or a compiled domain.
        state: A SQLite state file to start from; the seed state when None.
        host: The address to bind (loopback by default).
        port: The TCP port to bind.
    """
    served = build_server(domain, state)
    try:
        anyio.run(serve_http, served.server, host, port)
    finally:
        served.close()


__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "HTTP_PATH",
    "EnvironmentServer",
    "build_server",
    "call_result",
    "http_app",
    "run_http",
    "run_stdio",
    "serve_http",
    "serve_stdio",
    "tool_definitions",
]
