"""The read-only HTTP app: GET pages of a site, nothing else."""

from __future__ import annotations

from collections.abc import Sequence

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from veritask._view._site import STATIC_FILES, Site, static_file
from veritask.serve._hosts import OriginCheck

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")
"""Host names the app answers to: a page from another site cannot reach it by DNS rebinding."""
_TYPES = {".css": "text/css", ".js": "text/javascript"}


def build_app(site: Site, *, allowed_hosts: Sequence[str] = LOOPBACK_HOSTS) -> Starlette:
    """A Starlette app serving ``site``'s pages and static files on GET (and HEAD) only.

    Args:
        site: The pages to serve.
        allowed_hosts: Host header values accepted (others get 400).
    """

    async def page(request: Request) -> Response:
        path = request.path_params.get("path") or "index.html"
        if path.startswith("static/"):
            name = path.removeprefix("static/")
            if name not in STATIC_FILES:
                return Response("not found", status_code=404)
            return Response(static_file(name), media_type=_TYPES[name[name.rfind(".") :]])
        html = site.render(path, dict(request.query_params))
        if html is None:
            return HTMLResponse("<h1>not found</h1>", status_code=404)
        return HTMLResponse(html)

    return Starlette(
        routes=[Route("/", page, methods=["GET"]), Route("/{path:path}", page, methods=["GET"])],
        middleware=[  # the servers' one Host/Origin guard (veritask.serve._hosts.guard_hosts)
            Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts)),
            Middleware(OriginCheck, names=list(allowed_hosts)),
        ],
    )
