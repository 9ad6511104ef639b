"""The ``import-tau2`` command: a τ²-bench checkout's domain as a veritask domain."""

from __future__ import annotations

from pathlib import Path

import click

from veritask.env import CompiledDomain
from veritask.policy import dump_spec
from veritask.policy.tau2 import DOMAINS, import_tau2


@click.command("import-tau2")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--domain", type=click.Choice(DOMAINS), required=True, help="The τ²-bench domain.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Directory to write spec.yaml and policy.md into.",
)
def import_tau2_cmd(path: Path, domain: str, out: Path) -> None:
    """Import DOMAIN from the τ²-bench checkout at PATH (its db.json, policy and tool texts)."""
    try:
        imported = import_tau2(path, domain)
    except (OSError, ValueError) as exc:
        raise click.ClickException(f"cannot import {domain} from {path}: {exc}") from exc
    CompiledDomain.from_spec(imported.spec)  # the procedures compile against the tables
    out.mkdir(parents=True, exist_ok=True)
    header = (
        f"τ²-bench {domain}, imported by veritask import-tau2; the seed is the checkout's db.json"
    )
    (out / "spec.yaml").write_text(dump_spec(imported.spec, header), encoding="utf-8")
    (out / "policy.md").write_text(imported.policy, encoding="utf-8")
    rows = sum(len(r) for r in imported.spec.seed.values())
    click.echo(
        f"wrote {out / 'spec.yaml'}: {len(imported.spec.procedures)} tools, "
        f"{len(imported.spec.tables)} tables, {rows} seed rows"
    )
    for name, why in imported.unsupported.items():
        click.echo(f"left out {name}: {why}")


def register(group: click.Group) -> None:
    """Add ``import-tau2`` to the command group."""
    group.add_command(import_tau2_cmd)
