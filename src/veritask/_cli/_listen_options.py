"""The listening options every server command shares (bind address, remote access, allowed
Host names, request timeout, connection cap), declared once so their names, types, defaults and
help texts cannot drift apart between ``serve``, ``serve-openenv`` and ``serve-mcp``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from veritask.serve._net import DEFAULT_HOST, DEFAULT_PORT, MAX_CONNECTIONS, REQUEST_TIMEOUT

F = TypeVar("F", bound=Callable[..., Any])


def bind_options(func: F) -> F:
    """``--host`` (loopback by default) and ``--port`` (0: any free port)."""
    func = click.option(
        "--port",
        type=click.IntRange(0, 65535),
        default=DEFAULT_PORT,
        show_default=True,
        help="Port to bind (0: any free port).",
    )(func)
    return click.option("--host", default=DEFAULT_HOST, show_default=True, help="Address to bind.")(
        func
    )


def allow_remote_option(func: F) -> F:
    """``--allow-remote``: permit a non-loopback ``--host``."""
    return click.option(
        "--allow-remote",
        is_flag=True,
        help="Allow a non-loopback --host. The server has no authentication.",
    )(func)


def allowed_host_option(func: F) -> F:
    """``--allowed-host`` (repeatable), passed as ``allowed_hosts``."""
    return click.option(
        "--allowed-host",
        "allowed_hosts",
        multiple=True,
        metavar="NAME[:PORT]",
        help="Another Host name clients use (repeatable; '*' accepts any). Loopback names are in.",
    )(func)


def limit_options(prefix: str = "") -> Callable[[F], F]:
    """``--request-timeout`` and ``--max-connections``; ``prefix`` opens their help texts
    (for options that apply to one transport only)."""

    def decorate(func: F) -> F:
        func = click.option(
            "--max-connections",
            type=click.IntRange(min=1),
            default=MAX_CONNECTIONS,
            show_default=True,
            help=f"{prefix}Connections open at once; one more is answered 503 and closed.",
        )(func)
        return click.option(
            "--request-timeout",
            type=click.FloatRange(min=0, min_open=True),
            default=REQUEST_TIMEOUT,
            show_default=True,
            help=f"{prefix}Seconds a client has to send each request; slower connections are"
            " closed.",
        )(func)

    return decorate
