"""Commands over task datasets: generate, check, report, export."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from veritask._cli._common import echo_json
from veritask.synth import generate
from veritask.task import DatasetError, check_dataset, export_tau2, report_dataset

_err = Console(stderr=True)


@click.command("generate")
@click.option("--domain", required=True, help="Built-in domain name or path to a spec.yaml.")
@click.option(
    "--n", "n", type=click.IntRange(min=1), required=True, help="Number of task packages."
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Run seed; the same seed gives the same manifest.",
)
@click.option("--out", type=click.Path(file_okay=False), required=True, help="Dataset directory.")
@click.option(
    "--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Worker processes."
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
def generate_cmd(domain: str, n: int, seed: int, out: str, workers: int, as_json: bool) -> None:
    """Manufacture N certified task packages (resumable: rerun the same command to finish)."""
    with Progress(
        TextColumn("[bold]generate"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=_err,
        disable=as_json,
    ) as bar:
        task = bar.add_task("generate", total=n)
        try:
            summary = generate(
                domain, n, seed, out, workers=workers, progress=lambda k: bar.advance(task, k)
            )
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
    payload = {
        "out": str(summary.out),
        "tasks": summary.tasks,
        "units": summary.units,
        "resumed_units": summary.resumed_units,
        "discarded": summary.discarded,
    }
    if as_json:
        echo_json(payload)
    else:
        click.echo(
            f"{summary.tasks} packages in {summary.out} ({summary.resumed_units} of {summary.units} units were already done)"
        )


def _dataset_error(exc: DatasetError) -> click.ClickException:
    return click.ClickException(str(exc))


@click.command("check")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def check_cmd(directory: str, as_json: bool) -> None:
    """Replay every witness on s_origin, diff against s_target, run the spoiler check."""
    try:
        report = check_dataset(directory)
    except DatasetError as exc:
        raise _dataset_error(exc) from None
    payload = report.to_json()
    if as_json:
        echo_json(payload)
    else:
        click.echo(
            f"tasks {payload['tasks']}  certified {payload['certified']}  spoiler-free {payload['spoiler_free']}  "
            f"duplicates {payload['duplicates']}  failures {len(payload['failures'])}"
        )
        for failure in payload["failures"][:20]:
            click.echo(f"  {failure['id']}: {failure['kind']}: {failure['detail']}")
    if payload["failures"]:
        raise SystemExit(1)


@click.command("report")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def report_cmd(directory: str, as_json: bool) -> None:
    """Difficulty, tags, boundary density and coverage of a dataset."""
    try:
        payload = report_dataset(directory)
    except DatasetError as exc:
        raise _dataset_error(exc) from None
    if as_json:
        echo_json(payload)
        return
    click.echo(f"tasks {payload['tasks']}  difficulty {payload['difficulty']}")
    click.echo(
        f"boundary density {payload['boundary_density']}  rule coverage {payload['rule_coverage']}  "
        f"tool coverage {payload['tool_coverage']}  mean witness calls {payload['mean_witness_calls']}  "
        f"refusal share {payload['refusal_share']}"
    )
    click.echo("tags " + ", ".join(f"{k} {v}" for k, v in payload["tags"].items()))


@click.command("export")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--format", "fmt", type=click.Choice(["tau2"]), required=True, help="Export format.")
@click.option("--out", type=click.Path(dir_okay=False), required=True, help="Output file.")
def export_cmd(directory: str, fmt: str, out: str) -> None:
    """Export a dataset (tau2: tau2-bench Task JSON)."""
    try:
        count = export_tau2(directory, Path(out))
    except DatasetError as exc:
        raise _dataset_error(exc) from None
    click.echo(f"{count} tasks -> {out} ({fmt})")


def register(group: click.Group) -> None:
    """Add this module's commands to the CLI group."""
    for cmd in (generate_cmd, check_cmd, report_cmd, export_cmd):
        group.add_command(cmd)
