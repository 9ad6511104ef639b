"""The ``veritask blueprint`` group: run the AgentSkiller DAG stage by stage, show its status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from veritask._cli._common import cache_dir_option, echo_json, model_calls, provider_arg, reading
from veritask._cli.blueprint_path_tasks import path_tasks
from veritask.blueprint import (
    STAGES,
    BlueprintDag,
    StageNotReady,
    dag_status,
    load_seeds,
    report_lines,
    stage_report,
)
from veritask.pipeline import RunConflict
from veritask.synth import generate
from veritask.task import check_dataset

_STAGE = click.Choice(STAGES)


FALLBACKS = ("none", "symbolic")


def checked_counts(out: Path) -> dict[str, int]:
    """What ``check`` finds in a dataset: certified, grounded and spoiler-free packages."""
    check = check_dataset(out)
    return {
        "certified": check.certified,
        "grounded": check.grounded,
        "spoiler_free": check.spoiler_free,
    }


def path_service_tasks(
    spec_path: Path, paths: list[dict[str, Any]], n: int, seed: int, out: Path
) -> dict[str, Any]:
    """The ``tasks`` stage's work: tasks instantiated from the service's kept paths
    (:func:`path_tasks`), then ``check``. Only what the finished dataset shows is returned, so
    the artifact's bytes do not depend on a kill."""
    made = path_tasks(spec_path, paths, n, seed, out)
    return {
        "tasks": made["tasks"],
        "from_paths": made["from_paths"],
        "fallback": 0,
        **checked_counts(out),
        "origins": made["origins"],
    }


def with_symbolic_fallback(
    spec_path: Path, paths: list[dict[str, Any]], n: int, seed: int, out: Path
) -> dict[str, Any]:
    """:func:`path_service_tasks`, and the symbolic generator for the tasks the kept paths did
    not give (``--fallback symbolic``), into ``OUT/fallback``; counts are summed."""
    made = path_service_tasks(spec_path, paths, n, seed, out)
    missing = n - int(made["tasks"])
    if missing <= 0:
        return made
    extra = out / "fallback"
    summary = generate(str(spec_path), missing, seed, extra)
    checked = checked_counts(extra)
    return {
        **made,
        "tasks": made["tasks"] + summary.tasks,
        "fallback": summary.tasks,
        **{k: made[k] + v for k, v in checked.items()},
    }


def generate_service_tasks(
    spec_path: Path,
    paths: list[dict[str, Any]],  # noqa: ARG001
    n: int,
    seed: int,
    out: Path,
) -> dict[str, Any]:
    """The symbolic generator alone on one service (kept paths unused), then ``check``."""
    summary = generate(str(spec_path), n, seed, out)
    return {
        "tasks": summary.tasks,
        "from_paths": 0,
        "fallback": summary.tasks,
        **checked_counts(out),
    }


@click.group("blueprint")
def blueprint_group() -> None:
    """Seed topics -> domains -> entities -> entity graph -> blueprints -> compiled services
    -> grounded template paths -> certified tasks."""


@blueprint_group.command("run")
@click.argument("seeds", type=click.Path(exists=True, dir_okay=False))
@click.option("--model", "model", required=True, help="Model spec (openai:NAME, replay:PATH).")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Run directory.")
@click.option("--until", "until", type=_STAGE, help="Stop after this stage.")
@click.option("--from", "start", type=_STAGE, help="Start at this stage (earlier ones complete).")
@click.option("--concurrency", type=click.IntRange(min=1), default=4, show_default=True)
@click.option(
    "--fallback",
    type=click.Choice(FALLBACKS),
    default="none",
    show_default=True,
    help="tasks stage: fill what the kept paths do not give with the symbolic generator.",
)
@cache_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print the stage report as JSON.")
def run_cmd(
    seeds: str,
    model: str,
    out: str,
    until: str | None,
    start: str | None,
    concurrency: int,
    fallback: str,
    cache_dir: str | None,
    as_json: bool,
) -> None:
    """Run the DAG into OUT (a rerun resumes: done units are never run again, and model calls
    of a cut unit are answered from the run's cache). Prints the stage report."""
    with reading(seeds):
        config = load_seeds(seeds)
    provider = provider_arg(model)
    progress = None if as_json else (lambda line: click.echo(line, err=True))
    dag = BlueprintDag(
        out,
        config,
        provider,
        model,
        concurrency=concurrency,
        cache=cache_dir,
        progress=progress,
        make_tasks=with_symbolic_fallback if fallback == "symbolic" else path_service_tasks,
    )
    try:
        with model_calls(model):
            dag.run(start, until)
    except (RunConflict, StageNotReady) as exc:
        raise click.ClickException(str(exc)) from None
    report = stage_report(out)
    total = dag.ledger.total()
    report["this_run"] = {"model_calls": total.calls, "cached_calls": total.cached_calls}
    if as_json:
        echo_json(report)
        return
    for line in report_lines(report):
        click.echo(line)
    click.echo(f"this run: {total.calls} model call(s), {total.cached_calls} from the cache")


@blueprint_group.command("status")
@click.argument("out", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print JSON (stages and report).")
def status_cmd(out: str, as_json: bool) -> None:
    """Show each stage's progress and the report of the complete ones."""
    rows = dag_status(out)
    if not any(row["state"] != "waiting" for row in rows):
        raise click.ClickException(f"{out} holds no blueprint run (see 'veritask blueprint run')")
    report = stage_report(out)
    if as_json:
        echo_json({"stages": rows, "report": report})
        return
    for row in rows:
        units = "" if row["units"] is None else f" {row['done']}/{row['units']} units"
        click.echo(f"{row['stage']:<11} {row['state']}{units}")
    for line in report_lines(report):
        click.echo(line)


def register(group: click.Group) -> None:
    """Attach this module's commands to the CLI group."""
    group.add_command(blueprint_group)
