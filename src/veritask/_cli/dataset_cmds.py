"""Commands that move and compact dataset directories: pack, unpack, compact."""

from __future__ import annotations

import click

from veritask._cli._common import OUT_FILE, require_packages
from veritask.task import DatasetError, compact_dataset, pack_dataset, unpack_dataset


@click.command("pack")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option(
    "--out",
    type=OUT_FILE,
    default=None,
    help="Archive file; default DIRECTORY.vtpack.",
)
def pack_cmd(directory: str, out: str | None) -> None:
    """Write a dataset directory as one archive file (same directory, same bytes)."""
    target = out or directory.rstrip("/") + ".vtpack"
    require_packages(directory)
    try:
        count = pack_dataset(directory, target)
    except DatasetError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"{count} files -> {target}")


@click.command("unpack")
@click.argument("archive", type=click.Path(exists=True, dir_okay=False))
@click.argument("directory", type=click.Path(file_okay=False))
def unpack_cmd(archive: str, directory: str) -> None:
    """Restore a dataset directory from an archive written by 'veritask pack'."""
    try:
        count = unpack_dataset(archive, directory)
    except (DatasetError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"{count} files -> {directory}")


@click.command("compact")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
def compact_cmd(directory: str) -> None:
    """Store an older dataset's targets as deltas from their origins (in place; the manifest,
    seal and certificates are unchanged)."""
    require_packages(directory)
    try:
        count = compact_dataset(directory)
    except DatasetError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"{count} targets stored as deltas in {directory}")


def register(group: click.Group) -> None:
    """Add this module's commands to the CLI group."""
    for cmd in (pack_cmd, unpack_cmd, compact_cmd):
        group.add_command(cmd)
