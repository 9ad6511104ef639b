"""``veritask simulate``: tool catalogues, the trajectory checker, simulated environments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from veritask._cli._common import echo_json


@click.group("simulate")
def simulate_group() -> None:
    """SimAgent on veritask: catalogues, checking with repair, simulated environments."""


def _catalog(ref: str | None) -> Any:
    from veritask.simulate import load_catalog

    if ref is None:
        return None
    try:
        return load_catalog(ref)
    except (ValueError, OSError) as exc:
        raise click.ClickException(f"--tools {ref}: {exc}") from None


@simulate_group.command("tools")
@click.argument("source")
@click.option("--json", "as_json", is_flag=True, help="Print the normalized catalogue as JSON.")
def tools_cmd(source: str, as_json: bool) -> None:
    """Print the tool catalogue SOURCE describes.

    SOURCE is a built-in domain or spec file, an OpenAI tools JSON file, a file of seed
    trajectories (.jsonl / .txt), or 'mcp:COMMAND ARGS...' (an MCP server over stdio).
    """
    catalog = _catalog(source)
    if as_json:
        echo_json(catalog.to_json())
        return
    for tool in catalog.tools.values():
        marks = [p.name + ("*" if p.required else "") for p in tool.params]
        click.echo(f"{tool.name}({', '.join(marks)})")


@simulate_group.command("check")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--tools",
    "tools_ref",
    help="Tool catalogue (domain, spec, OpenAI tools JSON, trajectories, mcp:CMD); "
    "default: each row's own tools.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    help="Repaired file (default: FILE with .checked before its suffix).",
)
@click.option("--think-in-text", is_flag=True, help="Allow <think> in assistant text turns too.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def check_cmd(
    file: str, tools_ref: str | None, out: str | None, think_in_text: bool, as_json: bool
) -> None:
    """Check a trajectory file strictly and repair what can be repaired deterministically.

    Writes the repaired file (clean rows byte for byte, repaired rows rebuilt in their own
    format), OUT.rejected.jsonl (rejected rows with reasons) and OUT.issues.jsonl (every
    repair and rejection), and reports counts per error class.
    """
    from veritask.simulate import CheckOptions, check_file, sidecar

    path = Path(file)
    target = Path(out) if out else path.with_name(f"{path.stem}.checked{path.suffix}")
    summary = check_file(
        path, _catalog(tools_ref), target, CheckOptions(think_in_text=think_in_text)
    )
    report = {
        **summary.to_json(),
        "out": str(target),
        "rejected_out": str(sidecar(target, "rejected")),
        "issues_out": str(sidecar(target, "issues")),
    }
    if as_json:
        echo_json(report)
        return
    click.echo(
        f"{summary.rows} rows: {summary.clean} clean, {summary.repaired} repaired, "
        f"{summary.rejected} rejected -> {target}"
    )
    for name, count in report["classes"].items():
        if count["found"]:
            click.echo(
                f"  {name}: {count['found']} ({count['repaired']} repaired, {count['rejected']} not)"
            )


def register(group: click.Group) -> None:
    """Add the ``simulate`` group to the CLI."""
    group.add_command(simulate_group)
