"""The ``import-tau2`` command: a τ²-bench checkout's domain as a veritask domain."""

from __future__ import annotations

from pathlib import Path

import click
import yaml

from veritask.env import CompiledDomain
from veritask.env._examples import run_spec_examples
from veritask.policy import DomainSpec, dump_spec, write_seed_file
from veritask.policy.tau2 import DOMAINS, import_tau2


def checked_guards(spec: DomainSpec) -> tuple[DomainSpec, list[str]]:
    """The spec with only the guard examples that hold on its own seed, and what was dropped.

    The shipped guards' examples name rows of the test fixture; on another database an example
    may refer to rows that are not there, so each is run on the imported seed and kept only
    when every call behaves as it states.
    """
    failures = run_spec_examples(spec)
    bad = {(f.owner, f.example) for f in failures if f.example is not None}
    if not bad:
        return spec, []
    rules = [
        rule.model_copy(
            update={"examples": [e for i, e in enumerate(rule.examples) if (rule.id, i) not in bad]}
        )
        for rule in spec.rules
    ]
    dropped = [f"{owner} example {i}" for owner, i in sorted(bad, key=str)]
    return spec.model_copy(update={"rules": rules}), dropped


@click.command("import-tau2")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--domain",
    type=click.Choice([*DOMAINS, "telecom"]),
    required=True,
    help="The τ²-bench domain (telecom is refused, with what it lacks).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Directory to write spec.yaml, its seed rows (seed.json) and policy.md into.",
)
@click.option(
    "--guards",
    is_flag=True,
    help="Add the policy's rules the tools do not enforce (refusals, boundary states); "
    "leave off to measure parity.",
)
def import_tau2_cmd(path: Path, domain: str, out: Path, guards: bool) -> None:
    """Import DOMAIN from the τ²-bench checkout at PATH (its db.json, policy and tool texts)."""
    try:
        imported = import_tau2(path, domain, guards=guards)
    except (OSError, ValueError) as exc:
        raise click.ClickException(f"cannot import {domain} from {path}: {exc}") from exc
    spec = imported.spec
    CompiledDomain.from_spec(spec)  # the procedures and rules compile against the tables
    dropped: list[str] = []
    if guards:
        spec, dropped = checked_guards(spec)
    out.mkdir(parents=True, exist_ok=True)
    header = (
        f"τ²-bench {domain}, imported by veritask import-tau2; the seed is the checkout's db.json"
    )
    entry = write_seed_file(spec.seed, out, "seed.json")
    body = dump_spec(spec.model_copy(update={"seed": {}}), header)
    files = yaml.safe_dump({"seed_files": [entry]}, sort_keys=False)
    (out / "spec.yaml").write_text(body + files, encoding="utf-8")
    (out / "policy.md").write_text(imported.policy, encoding="utf-8")
    rows = sum(len(r) for r in spec.seed.values())
    click.echo(
        f"wrote {out / 'spec.yaml'}: {len(spec.procedures)} tools, {len(spec.rules)} guards, "
        f"{len(spec.tables)} tables, {rows} seed rows"
    )
    for name, why in imported.unsupported.items():
        click.echo(f"left out {name}: {why}")
    for example in dropped:
        click.echo(f"dropped {example}: it does not hold on this database")


def register(group: click.Group) -> None:
    """Add ``import-tau2`` to the command group."""
    group.add_command(import_tau2_cmd)
