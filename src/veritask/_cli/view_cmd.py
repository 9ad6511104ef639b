"""The ``view`` command: a read-only viewer over a dataset, trajectories or logic instances."""

from __future__ import annotations

from pathlib import Path

import click

from veritask._cli._common import require_packages

DEFAULT_PORT = 8766
"""Port ``veritask view`` listens on unless told otherwise."""


@click.command("view")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Port to listen on (loopback only).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write the pages as a static site here (opens from disk) instead of serving them.",
)
@click.option(
    "--dataset",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The dataset a trajectories file was run on: final diffs, verifier details and task "
    "links [default: the dataset directory the file is in or next to, if it lists its tasks].",
)
@click.option(
    "--gates",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Gate records of a logic file's families (logic gate all --record DIR) "
    "[default: *.gates.json and gates/ next to the file].",
)
@click.option("--check", is_flag=True, help="Replay and ground every task of a dataset (slower).")
def view_cmd(
    path: Path, port: int, out: Path | None, dataset: Path | None, gates: Path | None, check: bool
) -> None:
    """Look at a dataset directory, a trajectories JSONL, a logic JSONL, or an evolve or
    blueprint run directory in a browser."""
    try:
        from veritask._view import Site, ViewError, build_app, open_pages
    except ImportError as exc:  # starlette and jinja2 are in the 'http' extra
        raise click.ClickException(
            f"veritask view needs the 'http' extra (pip install 'veritask[http]'): {exc}"
        ) from None
    if path.is_dir():
        require_packages(path)
    try:
        site = Site(open_pages(path, dataset=dataset, check=check, gates=gates))
    except ViewError as exc:
        raise click.ClickException(str(exc)) from None
    if out is not None:
        pages = site.write(out)
        click.echo(f"{pages} pages in {out} (open {out / 'index.html'})")
        return
    import uvicorn

    click.echo(f"veritask view: http://127.0.0.1:{port}/ (Ctrl-C stops)")
    uvicorn.run(build_app(site), host="127.0.0.1", port=port, log_level="warning")


def register(group: click.Group) -> None:
    """Add ``view`` to the command group."""
    group.add_command(view_cmd)
