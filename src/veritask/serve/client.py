"""A blocking client for veritask's own HTTP environment server (``veritask serve``), on
``httpx`` (the ``http`` extra).

That protocol is deprecated for task datasets: ``veritask serve-openenv`` serves them with
OpenEnv's, played by OpenEnv's ``EnvClient`` / ``MCPToolClient`` or
:class:`veritask.serve.openenv_client.VeritaskOpenEnvClient`. This client keeps working against
``serve`` (seed states and simulated environments still need it). A refusal by the Host guard
(Starlette's ``TrustedHostMiddleware``, a plain-text 400) arrives as an :class:`EnvClientError`
like any other.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit

import httpx


class EnvClientError(Exception):
    """A non-2xx answer from the server."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


def _decode(response: httpx.Response) -> dict[str, Any]:
    """The JSON body; a body that is not a JSON object is wrapped as an error."""
    if not response.content:
        return {}
    try:
        value = response.json()
    except ValueError:
        value = None
    if isinstance(value, dict):
        return value
    text = response.text.strip()
    return {"error": {"code": f"HTTP_{response.status_code}", "message": text}}


class EnvClient:
    """A small blocking client over keep-alive connections (not thread-safe: one per thread).

    httpx's transport sets ``TCP_NODELAY`` on its sockets, so a request is never held back by
    Nagle's algorithm; the server sets it on its end too.

    Args:
        url: The server's ``http://host:port``.
        timeout: Network timeout in seconds.

    Raises:
        ValueError: ``url`` is not ``http://host[:port]``.
    """

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or parts.hostname is None:
            raise ValueError(f"expected http://host:port, got {url!r}")
        self._http = httpx.Client(base_url=url, timeout=timeout)

    def request(
        self, method: str, path: str, body: Mapping[str, Any] | bytes | None = None
    ) -> tuple[int, dict[str, Any]]:
        """Send one request; return (status, decoded JSON body) whatever the status."""
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        response = self._http.request(method, path, content=data, headers=headers)
        return response.status_code, _decode(response)

    def _ok(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> dict[str, Any]:
        status, payload = self.request(method, path, body)
        if not 200 <= status < 300:
            err = payload.get("error") or {}
            raise EnvClientError(status, str(err.get("code")), str(err.get("message")))
        return payload

    def reset(
        self, task_id: str | None = None, seed: int | None = None, session_id: str | None = None
    ) -> dict[str, Any]:
        """``POST /reset``."""
        body = {
            k: v
            for k, v in {"task_id": task_id, "seed": seed, "session_id": session_id}.items()
            if v is not None
        }
        return self._ok("POST", "/reset", body)

    def step(
        self, session_id: str, tool: str, arguments: Mapping[str, Any] | str | None = None
    ) -> dict[str, Any]:
        """``POST /step``."""
        action: dict[str, Any] = {"tool": tool}
        if arguments is not None:
            action["arguments"] = arguments
        return self._ok("POST", "/step", {"session_id": session_id, "action": action})

    def state(self, session_id: str, rows: bool = False) -> dict[str, Any]:
        """``GET /state``."""
        path = f"/state?session_id={quote(session_id)}" + ("&rows=1" if rows else "")
        return self._ok("GET", path)

    def delete(self, session_id: str) -> dict[str, Any]:
        """``DELETE /session/ID``."""
        return self._ok("DELETE", f"/session/{quote(session_id)}")

    def health(self) -> dict[str, Any]:
        """``GET /health``."""
        return self._ok("GET", "/health")

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def __enter__(self) -> EnvClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
