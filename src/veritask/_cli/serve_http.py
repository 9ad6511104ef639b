"""The ``serve`` command: veritask's own HTTP environment server (reset / step / state).

Deprecated for task datasets: ``serve-openenv`` serves them with OpenEnv's protocol (one HTTP
protocol, which OpenEnv's clients speak). ``serve`` stays for what only it does: a domain's seed
state without tasks, and simulated environments (``--env-model``).
"""

from __future__ import annotations

import logging
from typing import Any

import click

from veritask._cli._listen_options import (
    allow_remote_option,
    allowed_host_option,
    bind_options,
    limit_options,
)
from veritask._cli.simulate_cmds import env_options, simulated_source
from veritask.serve import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_SESSIONS,
    DEFAULT_MAX_STATE_BYTES,
    open_source,
    require_http,
)

DEPRECATED = (
    "warning: `veritask serve` speaks veritask's own HTTP protocol and is deprecated for"
    " datasets; use `veritask serve-openenv DIR` (OpenEnv's protocol: EnvClient, MCPToolClient,"
    " veritask.serve.openenv_client). Existing clients of this server keep working."
)


def _served_source(domain_or_dir: str, env_model: str | None, env_tools: str | None) -> Any:
    """The source ``serve`` plays (needs the http extra), with the deprecation line for a
    dataset served without a simulated environment."""
    try:
        require_http()
    except ImportError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        source = simulated_source(open_source(domain_or_dir), env_model, env_tools)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    if source.mode == "dataset" and env_model is None:
        click.echo(DEPRECATED, err=True)
    return source


@click.command("serve")
@click.argument("domain_or_dir")
@bind_options
@allow_remote_option
@click.option(
    "--idle-timeout",
    type=click.FloatRange(min=0),
    default=DEFAULT_IDLE_TIMEOUT,
    show_default=True,
    help="Close sessions unused for this many seconds (0: never).",
)
@click.option(
    "--max-sessions",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_SESSIONS,
    show_default=True,
    help="Sessions open at once; /reset answers 503 beyond.",
)
@allowed_host_option
@click.option(
    "--max-state-bytes",
    type=click.IntRange(min=0),
    default=DEFAULT_MAX_STATE_BYTES,
    show_default=True,
    help="Largest database a session's writes may leave; a write beyond is refused (0: no cap).",
)
@limit_options()
@click.option("--log-requests", is_flag=True, help="Log every request to stderr.")
@env_options
def serve_cmd(
    domain_or_dir: str,
    host: str,
    port: int,
    allow_remote: bool,
    allowed_hosts: tuple[str, ...],
    idle_timeout: float,
    max_sessions: int,
    max_state_bytes: int,
    request_timeout: float,
    max_connections: int,
    log_requests: bool,
    env_model: str | None,
    env_tools: str | None,
) -> None:
    """Serve DOMAIN_OR_DIR over HTTP: POST /reset, POST /step, GET /state, DELETE /session/ID.

    Deprecated for datasets: use serve-openenv (OpenEnv's protocol).

    DOMAIN_OR_DIR is a domain (every session starts from its seed state) or a dataset directory
    (every session starts from a task's origin; steps are rewarded by proximity to its target).
    Each session has its own database; sessions never share state. Requests must name the
    server by a loopback name (or an --allowed-host) and, from a browser, come from it.

    With --env-model every session is a simulated environment (the model answers each call; no
    database, so no distance, reward or digest); adding --env-tools makes it hybrid.
    """
    source = _served_source(domain_or_dir, env_model, env_tools)
    # needs the http extra, checked by _served_source
    from veritask.serve.server import EnvHTTPServer, serve

    if log_requests:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    tasks = len(source.task_ids())
    what = f"{source.name} ({tasks} tasks)" if source.mode == "dataset" else source.name
    try:
        server = EnvHTTPServer(
            source,
            host,
            port,
            allow_remote=allow_remote,
            allowed_hosts=allowed_hosts,
            idle_timeout=idle_timeout or None,
            max_sessions=max_sessions,
            max_state_bytes=max_state_bytes or None,
            request_timeout=request_timeout,
            max_connections=max_connections,
            log_requests=log_requests,
        )
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"cannot bind {host}:{port}: {exc}") from None
    serve(server, lambda url: click.echo(f"serving {what} at {url} (Ctrl-C to stop)", err=True))


def register(group: click.Group) -> None:
    """Add this module's commands to the CLI group."""
    group.add_command(serve_cmd)
