"""Transport settings, binding rules and the Host/Origin allow-list shared by the servers.

No HTTP dependency: the HTTP app, the uvicorn server and the MCP server all build on these.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable, Mapping
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
DEFAULT_MAX_STATE_BYTES = 64 << 20
"""Largest database a session may grow to by its writes; a write beyond it is rejected."""
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
"""Host names accepted by default (with the bound port)."""
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


def _split_host(entry: str) -> tuple[str, str | None]:
    """``(name, port)`` of ``name``, ``name:port``, ``[v6]``, ``[v6]:port`` or a bare IPv6."""
    entry = entry.strip().lower()
    if entry.startswith("["):
        name, _, rest = entry.partition("]")
        return name + "]", rest[1:] if rest.startswith(":") else None
    if entry.count(":") > 1:  # a bare IPv6 address has no port
        return f"[{entry}]", None
    name, _, port = entry.partition(":")
    return name, port or None


def allowed_hosts(port: int, extra: Iterable[str] = ()) -> frozenset[str]:
    """The ``Host`` header values a server bound to ``port`` accepts.

    The loopback names with ``port``, plus each ``extra`` entry: ``name`` (with ``port``),
    ``name:port`` as given, or :data:`ANY_HOST` to accept any host. On port 80 a bare name is
    accepted too (a client leaves the default port out).

    Args:
        port: The port the server is bound to.
        extra: More names clients use to reach the server (its public name, an address).
    """
    hosts: set[str] = set()
    for entry in (*LOOPBACK_NAMES, *extra):
        if entry.strip() == ANY_HOST:
            return frozenset({ANY_HOST})
        name, given = _split_host(entry)
        hosts.add(f"{name}:{given or port}")
        if (given or str(port)) == "80":
            hosts.add(name)
    return frozenset(hosts)


def host_error(headers: Mapping[str, str], allowed: frozenset[str]) -> tuple[int, str, str] | None:
    """Why a request's ``Host`` or ``Origin`` is refused, as ``(status, code, message)``.

    A ``Host`` outside ``allowed`` is a 421 (DNS rebinding: a page on another name reaching a
    loopback server); an ``Origin`` whose host is outside ``allowed`` is a 403 (a cross-site
    request from a browser). A request without ``Origin`` (any non-browser client) passes the
    second check; one without ``Host`` (HTTP/1.0) passes the first.

    Args:
        headers: The request's headers (lower-case names).
        allowed: What :func:`allowed_hosts` returned.
    """
    if ANY_HOST in allowed:
        return None
    host = headers.get("host")
    if host is not None and host.lower() not in allowed:
        return 421, "HOST_NOT_ALLOWED", f"Host {host!r} is not served here"
    origin = headers.get("origin")
    if origin is None:
        return None
    parts = urlsplit(origin.lower())
    if parts.scheme in ("http", "https") and parts.netloc in allowed:
        return None
    return 403, "ORIGIN_NOT_ALLOWED", f"cross-site requests from {origin!r} are refused"
