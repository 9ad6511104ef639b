"""The HTTP server: the ASGI app of :mod:`veritask.serve.app` served by uvicorn.

One event loop serves every connection; connections are kept alive between requests for up to
:data:`~veritask.serve.CONNECTION_TIMEOUT` seconds, and request heads are limited to
:data:`~veritask.serve.MAX_HEAD_BYTES` (uvicorn's own settings, and the app for a head that
arrived whole). The server binds loopback by default and refuses a non-loopback address unless
``allow_remote=True``: there is no authentication, only unguessable session ids. Requests must
name an allowed ``Host`` (the loopback names with the bound port, plus ``allowed_hosts``).

uvicorn's keep-alive timeout covers only the idle time between requests, and any byte resets
it, so a client trickling a request head byte by byte would hold its connection for ever. The
protocol here is uvicorn's h11 protocol with one addition, a deadline on receiving each request
(:data:`~veritask.serve.REQUEST_TIMEOUT`, from the connection's opening or the request's first
byte to its last), and one change: a request that is not HTTP gets a JSON 400, like every other
error, instead of uvicorn's plain text.

Every accepted connection gets ``TCP_NODELAY``. uvicorn writes a response's head and body in two
``send`` calls; with Nagle's algorithm on, the body waits for the client to acknowledge the head,
and the client delays that acknowledgement (up to 40 ms on Linux), so each sequential request took
about 45 ms on loopback. asyncio sets the option itself only on sockets created with
``IPPROTO_TCP``, and ``socket.create_server`` (the listening socket here) creates them with
protocol 0, so the protocol sets it (see ``docs/design/0020-server-hardening.md``).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Callable, Iterable

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from veritask.serve._net import (
    CONNECTION_TIMEOUT,
    DEFAULT_HOST,
    DEFAULT_MAX_STATE_BYTES,
    DEFAULT_PORT,
    MAX_HEAD_BYTES,
    REQUEST_TIMEOUT,
    check_bind,
    is_loopback,
)
from veritask.serve._net import allowed_hosts as host_allow_list
from veritask.serve._service import DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_SESSIONS, EnvService
from veritask.serve._source import EnvSource
from veritask.serve.app import make_app


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


class _GuardedH11(H11Protocol):
    """uvicorn's h11 protocol with a deadline on receiving each request, JSON 400s and
    ``TCP_NODELAY`` on every connection."""

    request_timeout = REQUEST_TIMEOUT
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
        """A new connection: no Nagle delay; its first request must arrive within the deadline."""
        if self.tcp_nodelay:
            set_nodelay(transport)
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        """Bytes of a request: start the deadline on its first byte, stop it on its last."""
        if self.conn.their_state is h11.IDLE:
            self._arm()
        super().data_received(data)
        if self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
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


def guarded_protocol(request_timeout: float) -> type[H11Protocol]:
    """The protocol class given to uvicorn (``http=``), with its request deadline in seconds."""
    return type("GuardedH11", (_GuardedH11,), {"request_timeout": request_timeout})


class EnvHTTPServer:
    """An :class:`~veritask.serve.EnvService` behind :func:`~veritask.serve.app.make_app`.

    The socket is bound on construction (so ``port=0`` can be read back at once); serve in this
    thread with :meth:`serve_forever` or in a background one with :meth:`start`.

    Args:
        source: Where sessions start from (see :func:`~veritask.serve.open_source`).
        host: Address to bind; loopback unless ``allow_remote``.
        port: Port to bind; 0 picks a free one (read it back from ``port``).
        allow_remote: Allow a non-loopback ``host``. The server has no authentication.
        allowed_hosts: Names clients may use in ``Host`` besides the loopback ones (``name``
            with the bound port, ``name:port``, or ``"*"`` for any; see
            :func:`~veritask.serve.allowed_hosts`). A non-loopback ``host`` is added itself.
        idle_timeout: Seconds after which an unused session is closed; None never expires.
        max_sessions: Open sessions allowed at once.
        max_state_bytes: Largest database a session's writes may leave (None: no cap).
        request_timeout: Seconds a client has to send each request, head and body.
        log_requests: Log every request at INFO level (DEBUG otherwise).

    Raises:
        ValueError: ``host`` is not loopback and ``allow_remote`` is false.
        OSError: The address cannot be bound.
    """

    def __init__(
        self,
        source: EnvSource,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        *,
        allow_remote: bool = False,
        allowed_hosts: Iterable[str] = (),
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        max_state_bytes: int | None = DEFAULT_MAX_STATE_BYTES,
        request_timeout: float = REQUEST_TIMEOUT,
        log_requests: bool = False,
    ) -> None:
        check_bind(host, allow_remote)
        if request_timeout <= 0:
            raise ValueError("request_timeout must be positive")
        self.service = EnvService(
            source,
            idle_timeout=idle_timeout,
            max_sessions=max_sessions,
            max_state_bytes=max_state_bytes,
        )
        bind_host = host.strip("[]")
        family = socket.AF_INET6 if ":" in bind_host else socket.AF_INET
        self._sock = socket.create_server((bind_host, port), family=family, backlog=1024)
        self._address: tuple[str, int] = self._sock.getsockname()[:2]
        names = [*allowed_hosts, *([] if is_loopback(host) else [host])]
        self.allowed_hosts = host_allow_list(self.port, names)
        """The ``Host`` values this server answers."""
        config = uvicorn.Config(
            make_app(self.service, hosts=self.allowed_hosts, log_requests=log_requests),
            http=guarded_protocol(request_timeout),
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


def serve(server: EnvHTTPServer, on_ready: Callable[[str], None] | None = None) -> None:
    """Serve ``server`` in this thread until Ctrl-C or SIGTERM, then shut it down.

    Args:
        server: A bound server (its options are :class:`EnvHTTPServer`'s).
        on_ready: Called with the server's URL before serving starts.
    """
    try:
        if on_ready is not None:
            on_ready(server.url)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
