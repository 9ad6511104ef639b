"""The ``serve-openenv`` command: a dataset's tasks as an OpenEnv environment (OpenEnv's HTTP
and WebSocket protocol, plus its MCP endpoint), on loopback unless told otherwise."""

from __future__ import annotations

import click

from veritask._cli._common import reading, require_packages
from veritask._cli._listen_options import (
    allow_remote_option,
    allowed_host_option,
    bind_options,
    limit_options,
)

OPENENV_INSTALL_HINT = "pip install 'veritask[openenv]'"
DEFAULT_MAX_ENVS = 256


def _check_dataset(dataset: str) -> None:
    """Refuse a directory that is not a dataset with at least one task, in one line.

    Raises:
        click.ClickException: ``dataset`` is not such a directory.
    """
    from veritask.rollout import TaskSource
    from veritask.task import DatasetError

    require_packages(dataset)
    with reading(dataset):
        try:
            TaskSource.load(dataset, limit=1)
        except DatasetError as exc:
            raise click.ClickException(str(exc)) from None


@click.command("serve-openenv")
@click.argument("dataset", metavar="DATASET_DIR", type=click.Path(exists=True, file_okay=False))
@bind_options
@allow_remote_option
@allowed_host_option
@click.option(
    "--max-sessions",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_ENVS,
    show_default=True,
    help="WebSocket sessions (one environment each) open at once.",
)
@limit_options()
def serve_openenv_cmd(
    dataset: str,
    host: str,
    port: int,
    allow_remote: bool,
    allowed_hosts: tuple[str, ...],
    max_sessions: int,
    request_timeout: float,
    max_connections: int,
) -> None:
    """Serve DATASET_DIR's tasks as an OpenEnv environment.

    OpenEnv's routes: a session per WebSocket at /ws (reset / step / state), /mcp for OpenEnv's
    MCPToolClient, HTTP /reset and /step (stateless, as in OpenEnv), /schema, /metadata and
    /health. Clients: OpenEnv's EnvClient and MCPToolClient, or
    veritask.serve.openenv_client.VeritaskOpenEnvClient. Needs the openenv extra.
    """
    _check_dataset(dataset)
    try:
        from veritask.serve.openenv_app import openenv_server
    except ImportError as exc:
        raise click.ClickException(
            f"serve-openenv needs the openenv package ({exc}); install it with:"
            f" {OPENENV_INSTALL_HINT}"
        ) from None
    try:
        server, sock = openenv_server(
            dataset,
            host=host,
            port=port,
            allow_remote=allow_remote,
            allowed_host=allowed_hosts,
            max_concurrent_envs=max_sessions,
            request_timeout=request_timeout,
            max_connections=max_connections,
        )
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"cannot bind {host}:{port}: {exc}") from None
    bound_host, bound_port = sock.getsockname()[:2]
    click.echo(f"serving {dataset} at http://{bound_host}:{bound_port} (Ctrl-C to stop)", err=True)
    try:
        server.run([sock])
    finally:
        sock.close()


def register(group: click.Group) -> None:
    """Add this module's commands to the CLI group."""
    group.add_command(serve_openenv_cmd)
