"""The one way every veritask server listens: uvicorn with bounded clients and quiet failures.

The HTTP environment server, MCP over streamable HTTP and the OpenEnv app all serve through
:class:`GuardedServer` on a socket from :func:`bind`, with the protocol from
:func:`guarded_protocol`:

- **a deadline on each request**: uvicorn's only timeout, ``timeout_keep_alive``, covers the
  idle time between requests and any byte resets it, so a client trickling a head byte by byte
  would hold its connection for ever; the protocol closes a connection whose request (head and
  body) has not arrived whole within ``request_timeout`` seconds of its first byte;
- **a connection cap**: past ``max_connections`` open connections a new one is answered 503
  (JSON) and closed as it arrives, before anything is read from it;
- **JSON 400s** for bytes that are not HTTP, instead of uvicorn's plain text;
- **``TCP_NODELAY``** on every connection (see ``docs/design/0020-server-hardening.md``);
- **accepting backs off** when the process runs out of file descriptors: asyncio's accept loop
  tries up to ``backlog`` accepts in one go and reports each failure with a traceback, so one
  tick wrote a thousand tracebacks; the socket here fails the first accept (asyncio then stops
  listening for :data:`ACCEPT_RETRY_DELAY` seconds) and reports the rest of that batch as "no
  connection waiting", and the failure is logged as one rate-limited line.

Needs uvicorn and h11 (the ``http`` extra).
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import socket
from asyncio import constants as asyncio_constants
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from veritask.serve._net import (
    CONNECTION_TIMEOUT,
    MAX_CONNECTIONS,
    MAX_HEAD_BYTES,
    REQUEST_TIMEOUT,
    LogLimiter,
)

log = logging.getLogger("veritask.serve")
limiter = LogLimiter(log)
"""Rate limit shared by every failure a listening server logs."""

RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
"""Accept failures that mean the process or the system ran out of something."""
ACCEPT_RETRY_DELAY: float = asyncio_constants.ACCEPT_RETRY_DELAY
"""Seconds asyncio waits before accepting again after such a failure."""
_ACCEPT_FAILED = "socket.accept() out of system resource"
"""The message asyncio reports such a failure with (to its exception handler)."""


def json_error(status: int, reason: str, code: str, message: str) -> bytes:
    """A whole HTTP/1.1 answer with a JSON error body that closes the connection."""
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json; charset=utf-8\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


def set_nodelay(transport: asyncio.BaseTransport) -> bool:
    """Turn Nagle's algorithm off on a TCP transport's socket; True when the option is set.

    Other sockets (Unix, or a transport without one) are left alone.
    """
    sock = transport.get_extra_info("socket")
    if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return False
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        return False
    return True


class GuardedH11(H11Protocol):
    """uvicorn's h11 protocol with a deadline on receiving each request, a cap on open
    connections, JSON 400s and ``TCP_NODELAY`` on every connection."""

    request_timeout = REQUEST_TIMEOUT
    max_connections = MAX_CONNECTIONS
    tcp_nodelay = True
    """Set ``TCP_NODELAY`` on each connection (off only to measure the cost of Nagle)."""
    _deadline: asyncio.TimerHandle | None = None

    def _arm(self) -> None:
        """Start the deadline, unless it is running."""
        if self._deadline is None:
            self._deadline = self.loop.call_later(self.request_timeout, self._too_slow)

    def _disarm(self) -> None:
        """Stop the deadline: the request arrived whole, or the connection is gone."""
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        """The deadline passed with the request still incomplete: hang up."""
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """A new connection: refused past the cap; else no Nagle delay, and its first request
        must arrive within the deadline."""
        if self.tcp_nodelay:
            set_nodelay(transport)
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            limiter.log(
                "connection cap",
                logging.WARNING,
                "refusing a connection: %d open, the cap is %d",
                len(self.connections),
                self.max_connections,
            )
            message = f"the server holds {self.max_connections} connections; try again later"
            transport.write(json_error(503, "Service Unavailable", "TOO_MANY_CONNECTIONS", message))
            transport.close()
            return
        self._arm()

    def data_received(self, data: bytes) -> None:
        """Bytes of a request: start the deadline on its first byte, stop it on its last."""
        if self.transport.is_closing():
            return  # refused at the cap, or cut off: nothing more is read
        if self.conn.their_state is h11.IDLE:
            self._arm()
        super().data_received(data)
        upgraded = self.transport.get_protocol() is not self  # a WebSocket took the connection
        if upgraded or self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
            self._disarm()

    def on_response_complete(self) -> None:
        """An answer went out; a pipelined request already buffered gets its own deadline."""
        super().on_response_complete()
        if self.conn.their_state is h11.IDLE and self.conn.trailing_data[0]:
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        """The connection closed: no deadline to keep."""
        self._disarm()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """Answer a request that is not HTTP (or whose head is too long) in JSON and hang up."""
        body = json.dumps({"error": {"code": "BAD_REQUEST", "message": msg}}).encode()
        headers = [
            (b"content-type", b"application/json; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        for event in (
            h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
            h11.Data(data=body),
            h11.EndOfMessage(),
        ):
            self.transport.write(self.conn.send(event) or b"")
        self.transport.close()


def guarded_protocol(
    request_timeout: float = REQUEST_TIMEOUT, max_connections: int = MAX_CONNECTIONS
) -> type[H11Protocol]:
    """The protocol class given to uvicorn (``http=``): its request deadline in seconds and
    its cap on open connections."""
    if request_timeout <= 0:
        raise ValueError("request_timeout must be positive")
    if max_connections < 1:
        raise ValueError("max_connections must be at least 1")
    fields = {"request_timeout": request_timeout, "max_connections": max_connections}
    return type("GuardedH11", (GuardedH11,), fields)


class GuardedSocket(socket.socket):
    """A listening socket whose accepts back off when descriptors run out.

    asyncio calls :meth:`accept` up to ``backlog`` times each time the socket is readable. On
    a resource failure (:data:`RESOURCE_ERRNOS`) the first call logs one rate-limited line and
    raises, so asyncio stops reading the socket for :data:`ACCEPT_RETRY_DELAY` seconds; the
    other calls of the same batch raise ``BlockingIOError`` (asyncio's "nothing waiting").
    """

    _paused = False

    def accept(self) -> tuple[socket.socket, Any]:
        """Accept a connection (see the class docstring for failures)."""
        if self._paused:
            raise BlockingIOError(errno.EAGAIN, "accepting is paused")
        try:
            return super().accept()
        except OSError as exc:
            if exc.errno not in RESOURCE_ERRNOS:
                raise
            self._pause()
            limiter.log(
                "accept",
                logging.ERROR,
                "cannot accept connections (%s); retrying in %.1f s",
                exc.strerror or exc,
                ACCEPT_RETRY_DELAY,
            )
            raise

    def _pause(self) -> None:
        """Refuse the rest of this batch; the next loop iteration lifts the pause."""
        self._paused = True
        try:
            asyncio.get_running_loop().call_soon(self._resume)
        except RuntimeError:  # not called by an event loop: nothing batches the calls
            self._paused = False

    def _resume(self) -> None:
        self._paused = False


def bind(host: str, port: int, backlog: int = 1024) -> GuardedSocket:
    """A listening :class:`GuardedSocket` on ``host:port`` (``port`` 0 picks a free one).

    Raises:
        OSError: The address cannot be bound.
    """
    bind_host = host.strip("[]")
    family = socket.AF_INET6 if ":" in bind_host else socket.AF_INET
    plain = socket.create_server((bind_host, port), family=family, backlog=backlog)
    return GuardedSocket(plain.family, plain.type, plain.proto, plain.detach())


def quiet_exception_handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The event loop's exception handler: an accept failure was already logged (one line,
    rate-limited) by :class:`GuardedSocket`; anything else goes to asyncio's default."""
    if context.get("message") == _ACCEPT_FAILED:
        return
    loop.default_exception_handler(context)


class GuardedServer(uvicorn.Server):
    """uvicorn's server with :func:`quiet_exception_handler` on its event loop."""

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        """Serve on ``sockets`` (see ``uvicorn.Server.serve``)."""
        asyncio.get_running_loop().set_exception_handler(quiet_exception_handler)
        await super().serve(sockets)


def guarded_config(
    app: Any,
    *,
    request_timeout: float = REQUEST_TIMEOUT,
    max_connections: int = MAX_CONNECTIONS,
    **options: Any,
) -> uvicorn.Config:
    """uvicorn's settings for ``app`` with the guarded protocol and the shared limits.

    Args:
        app: The ASGI application.
        request_timeout: Seconds a client has to send each request, head and body.
        max_connections: Connections open at once; more are answered 503.
        **options: More ``uvicorn.Config`` settings (``ws``, ``lifespan``, ``headers``...).
    """
    settings: dict[str, Any] = {
        "log_config": None,
        "log_level": "warning",
        "access_log": False,
        "timeout_keep_alive": CONNECTION_TIMEOUT,
        "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
        **options,
    }
    return uvicorn.Config(app, http=guarded_protocol(request_timeout, max_connections), **settings)
