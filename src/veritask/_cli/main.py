"""The ``veritask`` command group."""

from __future__ import annotations

import click

from veritask import __version__
from veritask._cli import (
    architect_cmd,
    blueprint_cmds,
    blueprint_run_cmds,
    dataset_cmds,
    env_cmds,
    evolve_cmds,
    hf_cmds,
    logic_cmds,
    openenv_cmd,
    rollout_cmds,
    serve_http,
    serve_mcp,
    simulate_cmds,
    synth_cmds,
    tau2_cmds,
    view_cmd,
)
from veritask._cli._lastresort import PipeSafeGroup, run


@click.group(cls=PipeSafeGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="veritask")
def cli() -> None:
    """veritask: policy-compiled environments and certified, verifiable agent tasks."""


env_cmds.register(cli)
synth_cmds.register(cli)
dataset_cmds.register(cli)
rollout_cmds.register(cli)
serve_mcp.register(cli)
serve_http.register(cli)
openenv_cmd.register(cli)
logic_cmds.register(cli)
architect_cmd.register(cli)
simulate_cmds.register(cli)
blueprint_cmds.register(cli)
blueprint_run_cmds.register(cli)
evolve_cmds.register(cli)
view_cmd.register(cli)
tau2_cmds.register(cli)
hf_cmds.register(cli)


def main() -> None:
    """Entry point of the ``veritask`` script: the command group behind the last-resort
    handler (see :func:`veritask._cli._lastresort.run`)."""
    run(cli)


if __name__ == "__main__":
    main()
