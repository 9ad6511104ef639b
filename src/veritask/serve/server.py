"""The HTTP server: the ASGI app of :mod:`veritask.serve.app` served by uvicorn.

One event loop serves every connection; connections are kept alive between requests for up to
:data:`~veritask.serve.CONNECTION_TIMEOUT` seconds, and request heads are limited to
:data:`~veritask.serve.MAX_HEAD_BYTES` (both through uvicorn's own settings). The server binds
loopback by default and refuses a non-loopback address unless ``allow_remote=True``: there is no
authentication, only unguessable session ids. A request uvicorn cannot parse as HTTP gets
uvicorn's own ``400`` answer and the connection is closed.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

import uvicorn

from veritask.serve._net import (
    CONNECTION_TIMEOUT,
    DEFAULT_HOST,
    DEFAULT_PORT,
    MAX_HEAD_BYTES,
    check_bind,
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
        idle_timeout: Seconds after which an unused session is closed; None never expires.
        max_sessions: Open sessions allowed at once.
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
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        log_requests: bool = False,
    ) -> None:
        check_bind(host, allow_remote)
        self.service = EnvService(source, idle_timeout=idle_timeout, max_sessions=max_sessions)
        config = uvicorn.Config(
            make_app(self.service, log_requests=log_requests),
            http="h11",
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
        bind_host = host.strip("[]")
        family = socket.AF_INET6 if ":" in bind_host else socket.AF_INET
        self._sock = socket.create_server((bind_host, port), family=family, backlog=1024)
        self._address: tuple[str, int] = self._sock.getsockname()[:2]
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


def serve(
    source: EnvSource,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    allow_remote: bool = False,
    idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    log_requests: bool = False,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve ``source`` over HTTP in this thread until Ctrl-C or SIGTERM.

    Args:
        source: Where sessions start from (see :func:`~veritask.serve.open_source`).
        host: Address to bind; loopback unless ``allow_remote``.
        port: Port to bind; 0 picks a free one.
        allow_remote: Allow a non-loopback ``host``. The server has no authentication.
        idle_timeout: Seconds after which an unused session is closed; None never expires.
        max_sessions: Open sessions allowed at once.
        log_requests: Log every request at INFO level.
        on_ready: Called with the server's URL once the socket is bound.

    Raises:
        ValueError: ``host`` is not loopback and ``allow_remote`` is false.
        OSError: The address cannot be bound.
    """
    server = EnvHTTPServer(
        source,
        host,
        port,
        allow_remote=allow_remote,
        idle_timeout=idle_timeout,
        max_sessions=max_sessions,
        log_requests=log_requests,
    )
    try:
        if on_ready is not None:
            on_ready(server.url)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
