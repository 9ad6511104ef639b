"""Transport settings and binding rules shared by the servers (no HTTP dependency)."""

from __future__ import annotations

import ipaddress
import socket

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
MAX_BODY_BYTES = 1 << 20
"""Largest request body accepted; a larger ``Content-Length`` is answered 413."""
MAX_HEAD_BYTES = 64 << 10
"""Largest request line plus headers accepted."""
CONNECTION_TIMEOUT = 300
"""Seconds a keep-alive connection may sit idle between requests before it is closed."""
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
