"""The ``serve-mcp`` command: expose a domain's environment as an MCP server."""

from __future__ import annotations

from pathlib import Path

import click

from veritask._cli._common import spec_arg, state_file
from veritask._cli._listen_options import allow_remote_option, allowed_host_option, limit_options
from veritask._cli.simulate_cmds import env_opener, env_options
from veritask.serve import check_bind


@click.command("serve-mcp")
@click.argument("domain")
@click.option(
    "--state",
    "state",
    type=click.Path(exists=True, dir_okay=False),
    help="Start from this SQLite state (default: the domain's seed state).",
)
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio: one client over stdin/stdout; http: streamable HTTP at /mcp.",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind with --transport http (keep loopback unless you mean to expose it).",
)
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=8765,
    show_default=True,
    help="Port to bind with --transport http.",
)
@allow_remote_option
@allowed_host_option
@limit_options("With --transport http: ")
@env_options
def serve_mcp_cmd(
    domain: str,
    state: str | None,
    transport: str,
    host: str,
    port: int,
    allow_remote: bool,
    allowed_hosts: tuple[str, ...],
    request_timeout: float,
    max_connections: int,
    env_model: str | None,
    env_tools: str | None,
) -> None:
    """Serve DOMAIN's tools over the Model Context Protocol (needs the `mcp` package).

    Every call acts on one environment that lives as long as the server; policy violations come
    back as tool errors carrying {code, message, violated_rule, hint}. Over HTTP the server
    binds loopback unless --allow-remote, and answers only requests naming an allowed Host
    (and, from a browser, an allowed Origin). With --env-model the environment is simulated
    by the model (from the tool specification and the start state's rows); adding --env-tools
    serves those tools too, simulated, beside the spec's real ones (hybrid).
    """
    if transport == "http":
        try:
            check_bind(host, allow_remote)
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
    spec = spec_arg(domain)
    try:
        from veritask.serve import mcp_server
    except ImportError as exc:
        raise click.ClickException(
            f"serve-mcp needs the MCP SDK ({exc}); install it with: pip install 'veritask[mcp]'"
        ) from None
    state_path = Path(state) if state and state_file(state) else None  # checked: one line
    opener = env_opener(env_model, env_tools)
    try:
        if transport == "stdio":
            # stdout is the protocol channel: print nothing there.
            mcp_server.run_stdio(spec, state_path, opener=opener)
            return
        shown = f"[{host}]" if ":" in host else host
        click.echo(
            f"serving {spec.name} over MCP at http://{shown}:{port}{mcp_server.HTTP_PATH}",
            err=True,
        )
        mcp_server.run_http(
            spec,
            state_path,
            host=host,
            port=port,
            allow_remote=allow_remote,
            allowed_hosts=allowed_hosts,
            opener=opener,
            request_timeout=request_timeout,
            max_connections=max_connections,
        )
    except KeyboardInterrupt:
        pass


def register(group: click.Group) -> None:
    """Add this module's commands to the CLI group."""
    group.add_command(serve_mcp_cmd)
