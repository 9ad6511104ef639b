"""The HTTP server: the ASGI app of :mod:`veritask.serve.app` served by uvicorn.

One event loop serves every connection; connections are kept alive between requests for up to
:data:`~veritask.serve.CONNECTION_TIMEOUT` seconds, and request heads are limited to
:data:`~veritask.serve.MAX_HEAD_BYTES` (uvicorn's own settings, and the app for a head that
arrived whole). The server binds loopback by default and refuses a non-loopback address unless
``allow_remote=True``: there is no authentication, only unguessable session ids. Requests must
name an allowed host (the loopback names, plus ``allowed_hosts``, on any port) in ``Host`` and,
from a browser, ``Origin`` (:func:`~veritask.serve._hosts.guard_hosts`).

The server listens the way every veritask server does (:mod:`veritask.serve._listen`): a
deadline on receiving each request (:data:`~veritask.serve.REQUEST_TIMEOUT`, from the
connection's opening or the request's first byte to its last), a cap on open connections
(:data:`~veritask.serve.MAX_CONNECTIONS`, a JSON 503 beyond), a JSON 400 for bytes that are not
HTTP, and accepts that back off, logging one line a second, when file descriptors run out.

Every accepted connection gets ``TCP_NODELAY``. uvicorn writes a response's head and body in two
``send`` calls; with Nagle's algorithm on, the body waits for the client to acknowledge the head,
and the client delays that acknowledgement (up to 40 ms on Linux), so each sequential request took
about 45 ms on loopback. asyncio sets the option itself only on sockets created with
``IPPROTO_TCP``, and ``socket.create_server`` (the listening socket here) creates them with
protocol 0, so the protocol sets it (see ``docs/design/0020-server-hardening.md``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from veritask.serve._listen import (
    GuardedServer,
    bind,
    guarded_config,
    guarded_protocol,
    set_nodelay,
)
from veritask.serve._net import (
    DEFAULT_HOST,
    DEFAULT_MAX_STATE_BYTES,
    DEFAULT_PORT,
    MAX_CONNECTIONS,
    REQUEST_TIMEOUT,
    check_bind,
    host_names,
    is_loopback,
)
from veritask.serve._service import DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_SESSIONS, EnvService
from veritask.serve._source import EnvSource
from veritask.serve.app import make_app


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
            or ``name:port``, the port ignored, or ``"*"`` for any; see
            :func:`~veritask.serve.host_names`). A non-loopback ``host`` is added itself.
        idle_timeout: Seconds after which an unused session is closed; None never expires.
        max_sessions: Open sessions allowed at once.
        max_state_bytes: Largest database a session's writes may leave (None: no cap).
        request_timeout: Seconds a client has to send each request, head and body.
        max_connections: Connections open at once; one more is answered 503 and closed.
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
        max_connections: int = MAX_CONNECTIONS,
        log_requests: bool = False,
    ) -> None:
        check_bind(host, allow_remote)
        guarded_protocol(request_timeout, max_connections)  # refuses bad limits before binding
        self.service = EnvService(
            source,
            idle_timeout=idle_timeout,
            max_sessions=max_sessions,
            max_state_bytes=max_state_bytes,
        )
        self._sock = bind(host, port)
        self._address: tuple[str, int] = self._sock.getsockname()[:2]
        names = [*allowed_hosts, *([] if is_loopback(host) else [host])]
        self.allowed_hosts = host_names(names)
        """The host names this server answers (on any port)."""
        config = guarded_config(
            make_app(self.service, hosts=self.allowed_hosts, log_requests=log_requests),
            request_timeout=request_timeout,
            max_connections=max_connections,
            ws="none",
            lifespan="on",
            server_header=False,
            headers=[("Server", "veritask")],
        )
        self._server = GuardedServer(config)
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


__all__ = ["EnvHTTPServer", "guarded_protocol", "serve", "set_nodelay"]
