"""``veritask logic solvability``: a model's pass@k per difficulty level of a family."""

from __future__ import annotations

import asyncio
from typing import Any

import click

from veritask._cli._common import cache_dir_option, echo_json, provider_arg
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
        with sandboxed([family], unsafe_no_sandbox):
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


def register(group: click.Group) -> None:
    """Add ``solvability`` to the ``logic`` group."""
    group.add_command(solvability_cmd)
