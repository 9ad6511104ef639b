"""The Hugging Face Hub's format: the options ``export --format hf`` and ``logic export`` share,
and ``import-hf``, which rebuilds a task dataset directory from such a dataset."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from veritask.export import (
    DEFAULT_LICENSE,
    HubFormatError,
    Written,
    export_hf,
    export_logic_hf,
    import_hf,
)
from veritask.task import DatasetError

if TYPE_CHECKING:
    from veritask.logic import Family

_F = TypeVar("_F", bound=Callable[..., Any])
_EXPORT = "veritask export DIR --format hf --out OUT"
_LOGIC_EXPORT = "veritask logic export FILE --format hf --out OUT"
"""The commands a card shows: the paths are left out, so a card names no local folder and
the same input gives the same card wherever it is exported."""


def hf_export_options(func: _F) -> _F:
    """``--push REPO_ID`` and ``--license ID``, for commands that write the Hub's format."""
    func = click.option(
        "--license",
        "license_id",
        default=DEFAULT_LICENSE,
        show_default=True,
        help="Licence id the dataset card names (with --format hf).",
    )(func)
    return click.option(
        "--push",
        default=None,
        metavar="REPO_ID",
        help="Also push to this Hub dataset repo with DatasetDict.push_to_hub (with --format "
        "hf); needs your token in HF_TOKEN or from 'hf auth login'.",
    )(func)


def _quiet() -> None:
    """No progress bars from ``datasets`` (the command prints one line of its own); when it is
    missing, the export names the extra to install."""
    try:
        import datasets
    except ImportError:
        return
    datasets.disable_progress_bars()


def _folder(out: str) -> Path:
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise click.ClickException(f"{out} is a file; --format hf writes a folder")
    return path


def _echo(written: Written, push: str | None) -> None:
    counts = ", ".join(f"{name} {n}" for name, n in written.rows.items())
    pushed = f"; pushed to {push}" if push else ""
    click.echo(f"{counts} -> {written.out} (hf; card {written.card.name}){pushed}")


def export_hf_dir(directory: str, out: str, push: str | None, license_id: str) -> None:
    """``export --format hf``: write the Hub's format (and push when asked)."""
    try:
        _quiet()
        written = export_hf(
            directory, _folder(out), license=license_id, push_to=push, command=_EXPORT
        )
    except (HubFormatError, DatasetError) as exc:
        raise click.ClickException(str(exc)) from None
    _echo(written, push)


def export_logic_dir(
    path: str,
    out: str,
    push: str | None,
    license_id: str,
    families: Mapping[str, Family],
) -> None:
    """``logic export --format hf``: a logic JSONL file in the Hub's format."""
    try:
        _quiet()
        written = export_logic_hf(
            path,
            _folder(out),
            families=families,
            license=license_id,
            push_to=push,
            command=_LOGIC_EXPORT,
        )
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    _echo(written, push)


@click.command("import-hf")
@click.argument("source")
@click.option(
    "--out", type=click.Path(), required=True, help="Dataset directory to write (new or empty)."
)
@click.option(
    "--accept-edits",
    is_flag=True,
    help="Rebuild even tasks that differ from the seal they were exported with ('check' then "
    "judges them).",
)
def import_hf_cmd(source: str, out: str, accept_edits: bool) -> None:
    """Rebuild a task dataset directory from SOURCE, a folder 'export --format hf' wrote or a
    Hub repo id; then 'veritask check' replays every witness on it again."""
    try:
        _quiet()
        done = import_hf(source, out, accept_edits=accept_edits)
    except (HubFormatError, DatasetError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(
        f"{done.tasks} tasks, {done.states} states -> {done.out} (seal {done.seal}); "
        f"run 'veritask check {done.out}'"
    )
    for line in done.edits[:20]:
        click.echo(f"  edited: {line}", err=True)


def register(group: click.Group) -> None:
    """Add this module's commands to the CLI group."""
    group.add_command(import_hf_cmd)
