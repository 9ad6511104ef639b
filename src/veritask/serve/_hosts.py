"""One Host/Origin guard for every server: Starlette's ``TrustedHostMiddleware`` plus an Origin
check.

The servers bind loopback and have no authentication, so two browser attacks matter: DNS
rebinding (a page on ``evil.example`` whose name resolves to 127.0.0.1 reaches the server with
``Host: evil.example``) and cross-site requests (a page on another site posting to
``http://127.0.0.1:PORT`` with ``Origin: https://evil.example``). The first is what Starlette's
``TrustedHostMiddleware`` refuses (400); it compares the host name only, so a server answers on
whatever port it is bound to, even when it was not told the port (an app started by
``uvicorn --port 9000`` or by OpenEnv's tooling). Starlette has no middleware for the second:
its ``CORSMiddleware`` only withholds the response headers and still runs the request, so
:class:`OriginCheck` refuses a request whose ``Origin`` names another host (403, JSON) before
the application sees it. A request without ``Origin`` (every non-browser client) passes.

``docs/design/0050-openenv-protocol.md`` says why one guard serves ``serve``, MCP over HTTP,
the OpenEnv app and the viewer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from veritask.serve._net import ANY_HOST, host_names, origin_allowed

__all__ = ["OriginCheck", "guard_hosts"]


class OriginCheck:
    """Refuse a request whose ``Origin`` names a host outside ``names``: HTTP gets a 403 with
    ``{"error": {"code": "ORIGIN_NOT_ALLOWED", "message"}}``, a WebSocket handshake is closed
    (1008) before the application accepts it.

    Args:
        app: The application.
        names: The accepted host names (what :func:`host_names` returns).
    """

    def __init__(self, app: ASGIApp, names: Sequence[str]) -> None:
        self.app = app
        self.names = list(names)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, or refuse it."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        origin = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"origin"), None)
        if origin_allowed(origin, self.names):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008})
            return
        message = f"cross-site requests from {origin!r} are refused"
        body = json.dumps({"error": {"code": "ORIGIN_NOT_ALLOWED", "message": message}}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", b"%d" % len(body)),
            (b"connection", b"close"),
        ]
        await send({"type": "http.response.start", "status": 403, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def guard_hosts(app: ASGIApp, extra: Iterable[str] = ()) -> ASGIApp:
    """``app`` behind ``TrustedHostMiddleware`` (a foreign ``Host`` gets 400) and
    :class:`OriginCheck` (a foreign ``Origin`` gets 403), accepting the loopback names and
    ``extra`` on any port; ``extra`` holding :data:`ANY_HOST` leaves ``app`` unguarded."""
    names = host_names(extra)
    if ANY_HOST in names:
        return app
    return TrustedHostMiddleware(OriginCheck(app, names), allowed_hosts=names, www_redirect=False)
