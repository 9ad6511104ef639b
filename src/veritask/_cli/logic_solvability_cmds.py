"""``veritask logic solvability`` (a model's pass@k per difficulty level of a family) and
``veritask logic diagnostics`` (figures aggregated across evolve runs)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import click

from veritask._cli._common import cache_dir_option, echo_json, model_calls, provider_arg
from veritask._cli.logic_gate_cmds import (
    families_dir_option,
    family_by_id,
    sandboxed,
    unsafe_no_sandbox_option,
)


def _ints(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a comma-separated list of integers") from None


@click.command("solvability")
@click.argument("family_id", metavar="FAMILY")
@click.option("--model", required=True, help="Model spec (e.g. openai:MODEL, scripted:...).")
@click.option("--levels", default="1,2,3,4,5,6,7,8,9,10", show_default=True, help="Levels.")
@click.option("--per-level", type=click.IntRange(min=1), default=5, show_default=True)
@click.option(
    "--n", type=click.IntRange(min=1), default=4, show_default=True, help="Answers per instance."
)
@click.option("--k", "ks", default="1", show_default=True, help="k values, comma-separated (<= n).")
@families_dir_option
@cache_dir_option
@unsafe_no_sandbox_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def solvability_cmd(
    family_id: str,
    model: str,
    levels: str,
    per_level: int,
    n: int,
    ks: str,
    families_dirs: tuple[str, ...],
    cache_dir: str | None,
    unsafe_no_sandbox: bool,
    as_json: bool,
) -> None:
    """Measure a model's pass@k at each difficulty level of FAMILY (its solvability curve).

    Each level's instances are answered --n times from the question alone; answers are scored
    strictly and pass@k is the unbiased estimate, averaged over the level's instances."""
    from veritask.logic._solvability import solvability

    family = family_by_id(family_id, families_dirs)
    provider = provider_arg(model, cache_dir)
    try:
        with sandboxed([family], unsafe_no_sandbox), model_calls(model):
            report = asyncio.run(
                solvability(
                    family,
                    provider,
                    levels=_ints(levels),
                    per_level=per_level,
                    n=n,
                    ks=_ints(ks),
                )
            )
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    data: dict[str, Any] = report.to_json()
    if as_json:
        echo_json(data)
        return
    click.echo(f"{data['family']}: {n} answers per instance, {per_level} instances per level")
    for level, row in data["levels"].items():
        figures = "  ".join(f"{k} {v:.3f}" for k, v in row.items() if k.startswith("pass@"))
        click.echo(f"  level {level:>2}: {figures}  ({row['correct']}/{row['asked']} right)")


@click.command("diagnostics")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def diagnostics_cmd(paths: tuple[str, ...], top: int, as_json: bool) -> None:
    """Aggregate diagnostics across evolve runs: acceptance, rounds, frequent problems, cost.

    PATHS are run directories (searched for result.json) or result.json files."""
    from veritask.logic._diagnostics import aggregate_files

    try:
        data = aggregate_files([Path(p) for p in paths], top)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        echo_json(data)
        return
    click.echo(
        f"{data['runs']} runs, {data['accepted']} accepted ({data['acceptance_rate']:.1%}), "
        f"{data['rounds']} rounds, cost {data['cost']}"
    )
    for stage, outcomes in data["by_stage"].items():
        click.echo(f"  {stage}: " + ", ".join(f"{k} {v}" for k, v in outcomes.items()))
    for row in data["problems"]:
        click.echo(f"  {row['rounds']:>4} rounds / {row['runs']:>3} runs  {row['kind']}")


def register(group: click.Group) -> None:
    """Add ``solvability`` and ``diagnostics`` to the ``logic`` group."""
    group.add_command(solvability_cmd)
    group.add_command(diagnostics_cmd)
