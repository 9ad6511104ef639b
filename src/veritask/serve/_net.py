"""Transport settings, binding rules, the loopback names and the bounds on what a client may
send, shared by the servers (the Host/Origin guard itself is :mod:`veritask.serve._hosts`).

No HTTP dependency: the HTTP app, the uvicorn server, the MCP server and the OpenEnv app all
build on these (``veritask.serve._listen`` puts them on uvicorn).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
MAX_BODY_BYTES = 1 << 20
"""Largest request body accepted; a larger ``Content-Length`` is answered 413."""
MAX_HEAD_BYTES = 64 << 10
"""Largest request line plus headers accepted."""
CONNECTION_TIMEOUT = 300
"""Seconds a keep-alive connection may sit idle between requests before it is closed."""
REQUEST_TIMEOUT = 10.0
"""Seconds a client has to send a whole request (head and body), counted from the connection's
opening or the request's first byte; a slower connection is closed."""
MAX_CONNECTIONS = 1000
"""Connections a server keeps open at once; one more is answered 503 and closed on arrival."""
MAX_JSON_DEPTH = 64
"""Deepest nesting of arrays and objects accepted in a request body or message."""
LOG_INTERVAL = 1.0
"""Seconds between two log lines of the same kind of failure (see :class:`LogLimiter`)."""
DEFAULT_MAX_STATE_BYTES = 64 << 20
"""Largest database a session may grow to by its writes; a write beyond it is rejected."""
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
"""Host names always accepted, on any port (see :mod:`veritask.serve._hosts`)."""
ANY_HOST = "*"
"""An allow-list entry that turns the Host and Origin checks off."""
HTTP_INSTALL_HINT = "pip install 'veritask[http]'"


def require_http() -> None:
    """Check that the HTTP extra (starlette and uvicorn) is installed.

    Raises:
        ImportError: One of them is missing; the message names :data:`HTTP_INSTALL_HINT`.
    """
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"the HTTP server needs starlette and uvicorn ({exc}); install them with:"
            f" {HTTP_INSTALL_HINT}"
        ) from exc


def is_loopback(host: str) -> bool:
    """True when every address ``host`` names is a loopback address (``""`` is all interfaces)."""
    host = host.strip("[]")
    if not host:
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0]).is_loopback for i in infos)


def check_bind(host: str, allow_remote: bool) -> None:
    """Refuse a non-loopback ``host`` unless ``allow_remote``: the servers have no authentication.

    Raises:
        ValueError: ``host`` is not loopback and ``allow_remote`` is false.
    """
    if not allow_remote and not is_loopback(host):
        raise ValueError(
            f"refusing to bind non-loopback host {host!r}: the server has no authentication;"
            " pass allow_remote (--allow-remote) to expose it"
        )


def _name(entry: str) -> str:
    """The host name of ``name``, ``name:port``, ``[v6]``, ``[v6]:port`` or a bare IPv6."""
    entry = entry.strip().lower()
    if entry.startswith("["):
        return entry.partition("]")[0] + "]"
    if entry.count(":") > 1:  # a bare IPv6 address has no port
        return f"[{entry}]"
    return entry.partition(":")[0]


def host_names(extra: Iterable[str] = ()) -> list[str]:
    """The host names a server accepts: the loopback names plus each ``extra`` entry's name
    (a port given with it is ignored: the bound port is the one clients reach), or
    ``[ANY_HOST]`` when an entry is :data:`ANY_HOST`."""
    names = list(LOOPBACK_NAMES)
    for entry in extra:
        if entry.strip() == ANY_HOST:
            return [ANY_HOST]
        name = _name(entry)
        if name and name not in names:
            names.append(name)
    return names


def origin_allowed(origin: str | None, names: Sequence[str]) -> bool:
    """True when a request may carry ``origin``: none, or an http(s) URL on one of ``names``."""
    if origin is None or ANY_HOST in names:
        return True
    parts = urlsplit(origin.strip().lower())
    return parts.scheme in ("http", "https") and _name(parts.netloc) in names


class TooDeep(ValueError):
    """A JSON text nests arrays and objects deeper than allowed."""

    def __init__(self, limit: int, what: str = "request body") -> None:
        super().__init__(f"{what} nests deeper than {limit}")
        self.limit = limit


def nests_deeper(value: Any, limit: int) -> bool:
    """True when ``value`` (decoded JSON) has arrays and objects nested deeper than ``limit``.

    Iterative, so a value of any depth is measured without recursion; it stops at the first
    container past ``limit``.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def loads_bounded(
    text: str | bytes, limit: int = MAX_JSON_DEPTH, what: str = "request body", **options: Any
) -> Any:
    """``json.loads`` that refuses nesting deeper than ``limit`` with :class:`TooDeep`.

    Python's decoder recurses once per level and raises ``RecursionError`` (not a
    ``ValueError``) past about a thousand; that becomes :class:`TooDeep` too, so a caller that
    handles ``ValueError`` answers every bad body the same way.

    Raises:
        TooDeep: The text nests deeper than ``limit``.
        ValueError: The text is not JSON (``UnicodeDecodeError`` included).
    """
    try:
        value = json.loads(text, **options)
    except RecursionError:
        raise TooDeep(limit, what) from None
    if isinstance(value, dict | list) and nests_deeper(value, limit):
        raise TooDeep(limit, what)
    return value


class LogLimiter:
    """At most one log line per ``interval`` seconds for each kind of failure.

    A failure that repeats (an accept failing for want of file descriptors, a client flood)
    would otherwise write one line, or one traceback, each time. Lines past the first in an
    interval are counted instead, and the next line written for that kind ends with
    ``(N similar messages suppressed)``. Thread-safe.

    Args:
        logger: Where lines go.
        interval: Seconds between two lines of one kind.
        clock: A monotonic clock in seconds (a test passes its own).
    """

    def __init__(
        self,
        logger: logging.Logger,
        interval: float = LOG_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger
        self.interval = interval
        self._clock = clock
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}
        self._lock = threading.Lock()

    def log(self, kind: str, level: int, message: str, *args: object) -> bool:
        """Log ``message % args`` (one line, no traceback) unless ``kind`` was logged within
        the interval; True when the line was written."""
        now = self._clock()
        with self._lock:
            last = self._last.get(kind)
            if last is not None and now - last < self.interval:
                self._suppressed[kind] = self._suppressed.get(kind, 0) + 1
                return False
            self._last[kind] = now
            suppressed = self._suppressed.pop(kind, 0)
        if suppressed:
            message += " (%d similar messages suppressed)"
            args = (*args, suppressed)
        self.logger.log(level, message, *args)
        return True

    def suppressed(self, kind: str) -> int:
        """Lines of ``kind`` counted but not yet reported."""
        with self._lock:
            return self._suppressed.get(kind, 0)
