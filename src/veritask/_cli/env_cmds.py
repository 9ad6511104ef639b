"""Commands over domains and environments: domains, schema, policy, tools, call, diff, seed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from veritask._cli._common import (
    OUT_FILE,
    echo_json,
    nonempty,
    not_a_directory,
    reading,
    spec_arg,
    state_file,
)
from veritask.domains import builtin_domains, load_domain, spec_path
from veritask.env import (
    CompiledDomain,
    DatabaseError,
    Environment,
    ExampleFailure,
    Layout,
    RowError,
    Snapshot,
    diff,
    example_coverage,
    run_spec_examples,
    sql_culprits,
)
from veritask.policy import (
    DomainSpec,
    SpecError,
    SpecIssue,
    SpecLines,
    build_tools,
    compile_sql,
    import_sql,
    load_spec_with_lines,
    render_wiki,
)

_console = Console()


@click.command("domains")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def domains_cmd(as_json: bool) -> None:
    """List the built-in domains with their table, tool and rule counts."""
    rows: list[dict[str, Any]] = []
    for name in builtin_domains():
        spec = load_domain(name)
        rows.append(
            {
                "name": name,
                "tables": len(spec.tables),
                "tools": len(build_tools(spec)),
                "rules": len(spec.rules),
            }
        )
    if as_json:
        echo_json(rows)
        return
    table = Table("name", "tables", "tools", "rules", "description")
    for row in rows:
        table.add_row(
            str(row["name"]),
            str(row["tables"]),
            str(row["tools"]),
            str(row["rules"]),
            load_domain(row["name"]).description,
        )
    _console.print(table)


@click.command("schema")
@click.argument("domain")
def schema_cmd(domain: str) -> None:
    """Print the SQL (tables and triggers) a domain compiles to."""
    click.echo(compile_sql(spec_arg(domain)).full, nl=False)


@click.command("policy")
@click.argument("domain")
def policy_cmd(domain: str) -> None:
    """Print the wiki policy (markdown) of a domain."""
    click.echo(render_wiki(spec_arg(domain)), nl=False)


@click.command("tools")
@click.argument("domain")
@click.option("--json", "as_json", is_flag=True, help="Print the OpenAI tool schemas as JSON.")
def tools_cmd(domain: str, as_json: bool) -> None:
    """List a domain's tools (OpenAI function-tool schemas with --json)."""
    tools = build_tools(spec_arg(domain))
    if as_json:
        echo_json([t.openai_schema() for t in tools.values()])
        return
    table = Table("tool", "kind", "table", "arguments")
    for t in tools.values():
        args = ", ".join(n + ("*" if p.required else "") for n, p in t.params.items())
        table.add_row(t.name, t.kind, t.table, args)
    _console.print(table)


@click.command("call")
@click.argument("domain")
@click.argument("tool")
@click.argument("args", default="{}")
@click.option(
    "--state",
    "state",
    type=click.Path(exists=True, dir_okay=False),
    help="Start from this SQLite state.",
)
@click.option("--save", "save", type=OUT_FILE, help="Write the resulting state here.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def call_cmd(
    domain: str, tool: str, args: str, state: str | None, save: str | None, as_json: bool
) -> None:
    """Call one TOOL of DOMAIN with JSON ARGS; prints the result or the structured error."""
    spec = spec_arg(domain)
    env = Environment(spec, state_file(state)) if state else Environment(spec)
    result = env.call(tool, args)
    if save:
        env.save(save)
    if as_json:
        echo_json(result.to_json())
    else:
        status = (
            "[green]ok[/green]"
            if result.ok
            else f"[red]{result.error.code if result.error else 'error'}[/red]"
        )
        _console.print(f"{tool}: {status}")
        _console.print_json(json.dumps(result.to_json(), default=str))
    if not result.ok:
        raise SystemExit(1)


def _layout(domain: str | None, path: str) -> Layout:
    if domain:
        return CompiledDomain.from_spec(spec_arg(domain)).layout
    return Layout.from_file(path)


@click.command("diff")
@click.argument("a", type=click.Path(exists=True, dir_okay=False))
@click.argument("b", type=click.Path(exists=True, dir_okay=False))
@click.option("--domain", help="Domain whose technical keys to ignore (default: read from A).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def diff_cmd(a: str, b: str, domain: str | None, as_json: bool) -> None:
    """Rows added and removed between two states (LOGIGEN's DIFF)."""
    origin, target = state_file(a), state_file(b)
    try:
        layout = _layout(domain, a)
        result = diff(Snapshot(origin, layout), Snapshot(target, layout))
    except DatabaseError as exc:  # a SQLite header over a damaged file
        raise click.ClickException(f"{a} or {b} is not a usable SQLite database: {exc}") from None
    if as_json:
        echo_json(result.to_json())
        return
    _console.print(f"distance: {result.distance}")
    for name, td in result.tables.items():
        for row in td.removed:
            _console.print(f"[red]- {name} {row}[/red]")
        for row in td.added:
            _console.print(f"[green]+ {name} {row}[/green]")


@click.command("seed")
@click.argument("domain")
@click.argument("out", type=OUT_FILE)
def seed_cmd(domain: str, out: str) -> None:
    """Write a domain's seed state to a SQLite file."""
    Path(out).write_bytes(CompiledDomain.from_spec(spec_arg(domain)).seed)
    click.echo(out)


@click.command("import-sql")
@click.argument("ddl", type=click.Path(exists=True, dir_okay=False))
@click.option("--name", required=True, help="Domain name for the imported spec.")
@click.option("--out", type=OUT_FILE, help="Write the spec YAML here (default: stdout).")
def import_sql_cmd(ddl: str, name: str, out: str | None) -> None:
    """Import a domain spec from raw SQLite DDL and triggers."""
    import yaml

    try:
        with reading(ddl):
            spec = import_sql(
                Path(nonempty(ddl, "SQLite DDL")).read_text(encoding="utf-8"), name=name, source=ddl
            )
    except SpecError as exc:
        raise click.ClickException(str(exc)) from None
    text = yaml.safe_dump(
        spec.model_dump(mode="json", exclude_defaults=True), sort_keys=False, allow_unicode=True
    )
    if out:
        Path(out).write_text(text, encoding="utf-8")
        click.echo(out)
    else:
        click.echo(text, nl=False)


@click.command("validate")
@click.argument("spec")
@click.option(
    "--examples",
    is_flag=True,
    help="Also run every rule and effect example (quota limits at N-1 and N included).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def validate_cmd(spec: str, examples: bool, as_json: bool) -> None:
    """Validate a spec file and check that it compiles in SQLite.

    With --examples, every rule and effect example also runs from the seed state, and each
    failure is reported with the YAML line of the call (or example) at fault.
    """
    loaded, lines = _spec_with_lines(spec)
    try:
        compiled = CompiledDomain.from_spec(loaded)
    except RowError as exc:  # a seed row: name its line and field, as the loader does
        loc = ("seed", exc.table, exc.index)
        issue = SpecIssue(lines.source, lines.line(loc), _field(loc), exc.reason)
        raise click.ClickException(str(SpecError([issue]))) from None
    except (ValueError, DatabaseError) as exc:
        raise click.ClickException(_build_failure(spec, loaded, lines, exc)) from None
    _refuse_ungenerable(loaded, lines)
    counts = (
        f"{len(loaded.tables)} tables, {len(loaded.rules)} rules, {len(loaded.effects)} effects"
    )
    failures = example_coverage(loaded) + run_spec_examples(compiled) if examples else []
    ran = sum(len(r.examples) for r in loaded.rules) + sum(len(e.examples) for e in loaded.effects)
    if as_json:
        echo_json(_validate_json(loaded, lines, failures, ran if examples else None))
    elif not failures:
        extra = f"; {ran} examples ran" if examples else ""
        click.echo(f"ok: {loaded.name} ({counts}{extra})")
    else:
        for failure in failures:
            click.echo(_failure_line(lines, failure))
        click.echo(f"failed: {loaded.name} ({len(failures)} of the example checks)", err=True)
    if failures:
        sys.exit(1)


def _refuse_ungenerable(loaded: DomainSpec, lines: SpecLines) -> None:
    """A spec that validates but could not generate a single task is refused, by field."""
    from veritask.synth import generation_problems

    problems = generation_problems(loaded)
    if problems:
        issues = [
            SpecIssue(lines.source, lines.line(loc), _field(loc), why) for loc, why in problems
        ]
        raise click.ClickException(str(SpecError(issues)))


def _build_failure(spec: str, loaded: DomainSpec, lines: SpecLines, exc: Exception) -> str:
    """Why a spec that validated does not compile, traced to the rule, effect or table."""
    found = sql_culprits(loaded)
    if not found:
        return f"{spec}: {exc}"
    issues = [SpecIssue(lines.source, lines.line(loc), _field(loc), why) for loc, why in found]
    return str(SpecError(issues))


def _field(loc: tuple[str | int, ...]) -> str:
    return "".join(
        f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(loc)
    )


def _spec_with_lines(spec: str) -> tuple[DomainSpec, SpecLines]:
    not_a_directory(spec)
    try:
        return load_spec_with_lines(spec_path(spec))
    except (SpecError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None


def _failure_line(lines: SpecLines, failure: ExampleFailure) -> str:
    line = lines.line(failure.loc)
    kind = (
        {"rules": "rule ", "effects": "effect "}.get(str(failure.loc[0]), "") if failure.loc else ""
    )
    where = f"{lines.source}:{line}" if line is not None else lines.source
    return f"{where}: {kind}{failure.where}: {failure.check}: {failure.message}"


def _validate_json(
    spec: DomainSpec, lines: SpecLines, failures: list[ExampleFailure], ran: int | None
) -> dict[str, Any]:
    return {
        "ok": not failures,
        "name": spec.name,
        "tables": len(spec.tables),
        "rules": len(spec.rules),
        "effects": len(spec.effects),
        "examples": ran,
        "failures": [
            {**f.to_json(), "file": lines.source, "line": lines.line(f.loc)} for f in failures
        ],
    }


def register(group: click.Group) -> None:
    """Add this module's commands to the CLI group."""
    for cmd in (
        domains_cmd,
        schema_cmd,
        policy_cmd,
        tools_cmd,
        call_cmd,
        diff_cmd,
        seed_cmd,
        import_sql_cmd,
        validate_cmd,
    ):
        group.add_command(cmd)
