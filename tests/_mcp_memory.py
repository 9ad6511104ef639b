"""An MCP client connected in memory to a veritask MCP server (no transport, no subprocess)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
from mcp import ClientSession
from mcp.shared.memory import create_client_server_memory_streams

from veritask.serve.mcp_server import EnvironmentServer

T = TypeVar("T")


def in_session(served: EnvironmentServer, body: Callable[[ClientSession], Awaitable[T]]) -> T:
    """Run ``body`` with an initialized client session connected in memory to ``served``."""
    out: list[T] = []

    async def main() -> None:
        server = served.server
        with anyio.fail_after(30):
            async with (
                create_client_server_memory_streams() as (client_streams, server_streams),
                anyio.create_task_group() as tg,
            ):
                tg.start_soon(
                    lambda: server.run(
                        server_streams[0],
                        server_streams[1],
                        server.create_initialization_options(),
                        raise_exceptions=True,
                    )
                )
                async with ClientSession(client_streams[0], client_streams[1]) as session:
                    await session.initialize()
                    out.append(await body(session))
                tg.cancel_scope.cancel()

    anyio.run(main)
    return out[0]
