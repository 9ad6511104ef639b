"""Both ends of an HTTP connection run with ``TCP_NODELAY``.

The server writes a response's head and body in two ``send`` calls; with Nagle's algorithm on,
the body waits for the client's delayed acknowledgement of the head (40 ms on Linux) on every
request. These tests read the socket option on live loopback connections; they time nothing.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from veritask.env import CompiledDomain
from veritask.serve import DomainSource

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

import httpx

from veritask.serve.client import EnvClient
from veritask.serve.server import EnvHTTPServer, set_nodelay


@pytest.fixture(scope="module")
def server(compiled: dict[str, CompiledDomain]) -> Iterator[EnvHTTPServer]:
    with EnvHTTPServer(DomainSource(compiled["mock"]), port=0) as srv:
        srv.start()
        yield srv


def nodelay(sock: Any) -> bool:
    return bool(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))


def server_side(srv: EnvHTTPServer, peer: tuple[str, int]) -> Any:
    """The server's socket for the connection whose client end is bound to ``peer``."""
    # uvicorn registers each connection's protocol (with its peer address) on connection_made,
    # before the first request is read, so a connection that has been answered is listed.
    connections = srv._server.server_state.connections
    (protocol,) = [p for p in connections if getattr(p, "client", None) == peer]
    return protocol.transport.get_extra_info("socket")


def test_the_server_sets_nodelay_on_each_connection(server: EnvHTTPServer) -> None:
    with socket.create_connection((server.host, server.port), timeout=10) as sock:
        assert not nodelay(sock)  # a client that leaves Nagle on
        host = f"{server.host}:{server.port}".encode()
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: " + host + b"\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        assert nodelay(server_side(server, sock.getsockname()[:2]))


def test_the_client_sets_nodelay_and_keeps_its_connection(server: EnvHTTPServer) -> None:
    sockets: list[Any] = []

    def record(response: httpx.Response) -> None:
        sockets.append(response.extensions["network_stream"].get_extra_info("socket"))

    with EnvClient(server.url) as client:
        client._http.event_hooks["response"].append(record)
        sid = client.reset()["session_id"]
        client.step(sid, "list_members", {})
        client.state(sid)
        assert len(sockets) == 3
        assert len({sock.getsockname() for sock in sockets}) == 1  # one keep-alive connection
        assert nodelay(sockets[0])
        assert nodelay(server_side(server, sockets[0].getsockname()[:2]))


def test_set_nodelay_leaves_other_sockets_alone() -> None:
    class Transport(asyncio.BaseTransport):
        def __init__(self, sock: socket.socket | None) -> None:
            super().__init__()
            self.sock = sock

        def get_extra_info(self, name: str, default: Any = None) -> Any:
            return self.sock if name == "socket" else default

    left, right = socket.socketpair()
    with left, right:
        assert not set_nodelay(Transport(left))
    assert not set_nodelay(Transport(None))
    with (
        socket.create_server(("127.0.0.1", 0)) as listener,
        socket.create_connection(listener.getsockname()) as sock,
    ):
        assert not nodelay(sock)  # a socket made with protocol 0: asyncio would skip it
        assert set_nodelay(Transport(sock))
        assert nodelay(sock)
