"""Servers over veritask environments: HTTP (reset / step / state sessions) and MCP.

This package imports no transport library: the session service, its sources and the binding
rules live here; the transports are modules of their own, each needing its extra:

- :mod:`veritask.serve.app`: the ASGI application (Starlette; ``http`` extra),
- :mod:`veritask.serve.server`: :class:`~veritask.serve.server.EnvHTTPServer` and
  :func:`~veritask.serve.server.serve` (uvicorn; ``http`` extra),
- :mod:`veritask.serve.client`: :class:`~veritask.serve.client.EnvClient` (httpx; ``http``
  extra),
- :mod:`veritask.serve.mcp_server`: the Model Context Protocol server (``mcp`` extra).
"""

from veritask.serve._net import (
    ANY_HOST,
    CONNECTION_TIMEOUT,
    DEFAULT_HOST,
    DEFAULT_MAX_STATE_BYTES,
    DEFAULT_PORT,
    HTTP_INSTALL_HINT,
    LOOPBACK_NAMES,
    MAX_BODY_BYTES,
    MAX_CONNECTIONS,
    MAX_HEAD_BYTES,
    MAX_JSON_DEPTH,
    REQUEST_TIMEOUT,
    check_bind,
    host_names,
    is_loopback,
    origin_allowed,
    require_http,
)
from veritask.serve._service import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_SESSIONS,
    Action,
    EnvService,
    ResetRequest,
    StepRequest,
    state_digest,
    state_rows,
)
from veritask.serve._source import (
    DatasetSource,
    DomainSource,
    EnvSource,
    OpenerSource,
    RequestError,
    TaskStart,
    open_source,
)

__all__ = [
    "ANY_HOST",
    "CONNECTION_TIMEOUT",
    "DEFAULT_HOST",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_MAX_STATE_BYTES",
    "DEFAULT_PORT",
    "HTTP_INSTALL_HINT",
    "LOOPBACK_NAMES",
    "MAX_BODY_BYTES",
    "MAX_CONNECTIONS",
    "MAX_HEAD_BYTES",
    "MAX_JSON_DEPTH",
    "REQUEST_TIMEOUT",
    "Action",
    "DatasetSource",
    "DomainSource",
    "EnvService",
    "EnvSource",
    "OpenerSource",
    "RequestError",
    "ResetRequest",
    "StepRequest",
    "TaskStart",
    "check_bind",
    "host_names",
    "is_loopback",
    "open_source",
    "origin_allowed",
    "require_http",
    "state_digest",
    "state_rows",
]
