"""Commands over tool graphs and fused domains: tool-graph, fuse."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from veritask._cli._common import OUT_FILE, echo_json, spec_arg
from veritask._cli.blueprint_fusion_tasks import fused_trajectory_tasks
from veritask._cli.blueprint_path_tasks import path_tasks
from veritask._cli.blueprint_run_cmds import checked_counts
from veritask.blueprint import (
    Fusion,
    FusionError,
    build_tool_graph,
    check_tool_graph,
    enumerate_paths,
    example_failures,
    fuse_specs,
    graph_to_json,
    task_template,
)
from veritask.blueprint._dag_paths import with_templates
from veritask.blueprint._ground import FilterReport, Mode, ground_paths
from veritask.blueprint._semantic import judged_templates
from veritask.blueprint._toolgraph import TaskTemplate
from veritask.blueprint._trajectory_fusion import DEFAULT_MAX_PAIRS
from veritask.domains import spec_path
from veritask.policy import DomainSpec, SpecError, dump_spec
from veritask.synth import fused_services


@click.command("tool-graph")
@click.argument("domain")
@click.option("--min-len", type=click.IntRange(min=1), default=2, show_default=True)
@click.option("--max-len", type=click.IntRange(min=1), default=4, show_default=True)
@click.option(
    "--max-paths", type=click.IntRange(min=1), default=200, show_default=True, help="Path cap."
)
@click.option("--out", type=OUT_FILE, help="Save the graph (node-link JSON).")
@click.option(
    "--ground",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Ground each path this many times and execute it (execution filtering).",
)
@click.option(
    "--mode",
    type=click.Choice(["auto", "sampling", "creation"]),
    default="auto",
    show_default=True,
    help="Grounding mode; auto: creation for a fused spec, else sampling.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Grounding seed.")
@click.option(
    "--tasks",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Instantiate this many certified tasks from the kept paths (needs --tasks-out).",
)
@click.option("--tasks-out", type=click.Path(file_okay=False), help="Dataset directory of --tasks.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (graph, checks, templates).")
def tool_graph_cmd(
    domain: str,
    min_len: int,
    max_len: int,
    max_paths: int,
    out: str | None,
    ground: int,
    mode: str,
    seed: int,
    tasks: int,
    tasks_out: str | None,
    as_json: bool,
) -> None:
    """Build a domain's tool dependency graph, check its topology, enumerate task templates;
    with --ground, ground and execute every path and report the kept share; with --tasks,
    instantiate certified tasks from the kept paths (each records the path it came from).

    Exits with status 1 when a topology check fails."""
    spec = spec_arg(domain)
    graph = build_tool_graph(spec)
    issues = check_tool_graph(graph)
    paths = enumerate_paths(graph, min_len, max_len, max_paths)
    templates = [task_template(spec, graph, p) for p in paths]
    data = graph_to_json(graph)
    if out:
        Path(out).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    payload: dict[str, Any] = {
        "domain": spec.name,
        "nodes": graph.number_of_nodes(),
        "edges": graph.number_of_edges(),
        "source": graph.graph["source"],
        "checks": {
            check: [i.message for i in issues if i.check == check]
            for check in ("single_source", "reachability", "acyclicity")
        },
        "paths": len(paths),
        "templates": [
            {**t.to_json(), "semantic": sem.to_json(), "judge": verdict.to_json()}
            for t, (sem, verdict) in zip(
                templates, judged_templates(spec, templates, seed), strict=True
            )
        ],
        "graph": data,
    }
    if tasks and not tasks_out:
        raise click.UsageError("--tasks needs --tasks-out")
    if ground or tasks:
        chosen: Mode = "creation" if fused_services(spec) else "sampling"
        if mode != "auto":
            chosen = "creation" if mode == "creation" else "sampling"
        report = ground_paths(spec, templates, chosen, seed, max(ground, 1))
        payload["grounding"] = report.to_json()
        if tasks and tasks_out:
            payload |= _path_tasks(domain, spec, templates, report, tasks, seed, Path(tasks_out))
    if as_json:
        echo_json(payload)
    else:
        _print_summary(payload)
    if issues:
        raise SystemExit(1)


def _path_tasks(
    domain: str,
    spec: DomainSpec,
    templates: list[TaskTemplate],
    report: FilterReport,
    n: int,
    seed: int,
    out: Path,
) -> dict[str, Any]:
    """``judge`` (the kept paths' templates judged) and ``tasks`` (made from those passed)."""
    kept = {o.template for o in report.outcomes if o.kept}
    skeletons = [t for t in templates if t.id in kept]
    judged = with_templates({}, judged_templates(spec, skeletons, seed))
    made = path_tasks(spec_path(domain), judged["kept_paths"], n, seed, out)
    return {
        "judge": {k: judged[k] for k in ("templates_judged", "templates_passed")},
        "tasks": {**made, **checked_counts(out)},
    }


def _print_summary(payload: dict[str, Any]) -> None:
    click.echo(
        f"{payload['domain']}: {payload['nodes']} tools, {payload['edges']} edges,"
        f" source {payload['source']}"
    )
    for check, messages in payload["checks"].items():
        click.echo(f"  {check}: {'ok' if not messages else '; '.join(messages)}")
    for edge in payload["graph"]["edges"]:
        label = ",".join(edge["kinds"])
        detail = ", ".join(edge["args"] or edge["rules"]) or "soft"
        click.echo(f"  {edge['source']} -> {edge['target']} [{label}: {detail}]")
    if "grounding" in payload:
        g = payload["grounding"]
        click.echo(
            f"  grounding ({g['mode']}): {g['grounded']} of {g['paths']} instances grounded,"
            f" {g['kept']} kept ({g['kept_share']:.1%}), {g['filtered']} filtered: "
            + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in g["failures"].items())
        )
    if "judge" in payload:
        j = payload["judge"]
        click.echo(f"  templates: {j['templates_passed']} of {j['templates_judged']} judged kept")
    if "tasks" in payload:
        t = payload["tasks"]
        click.echo(
            f"  tasks: {t['tasks']} made, {t['from_paths']} from kept paths,"
            f" {t['certified']} certified, {t['grounded']} grounded"
        )
    click.echo(f"  {payload['paths']} paths; first templates:")
    for template in payload["templates"][:5]:
        click.echo(f"    {' -> '.join(template['tools'])}")
        semantic, judge = template["semantic"], template["judge"]
        click.echo(f"      motivation: {semantic['motivation']}")
        click.echo(f"      request: {semantic['text']}")
        click.echo(f"      judge: {judge['mean']:.1f} ({'kept' if judge['passed'] else 'dropped'})")


@click.command("fuse")
@click.argument("domains", nargs=-1, required=True)
@click.option("--out", type=OUT_FILE, required=True, help="Fused spec.yaml.")
@click.option("--person", default="persons", show_default=True, help="Name of the person table.")
@click.option("--name", default=None, help="Name of the fused domain (default: a_b).")
@click.option(
    "--tasks",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Make this many tasks from fused trajectories (needs --tasks-out).",
)
@click.option("--tasks-out", type=click.Path(file_okay=False), help="Dataset directory of --tasks.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of --tasks.")
@click.option(
    "--max-pairs",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_PAIRS,
    show_default=True,
    help="Candidate trajectory pairs per ordered pair of services.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the fusion report as JSON.")
def fuse_cmd(
    domains: tuple[str, ...],
    out: str,
    person: str,
    name: str | None,
    tasks: int,
    tasks_out: str | None,
    seed: int,
    max_pairs: int,
    as_json: bool,
) -> None:
    """Fuse two or more domains into one spec: namespaced tables, one shared person table,
    harmonized rules. The fused spec is validated and every example is run before it is saved.
    With --tasks, pairs of validated single-service paths are fused (a joining motivation,
    pruned ex ante when a segment is not validated) and instantiated on the fused spec; only
    witnesses that execute, certify and ground are kept."""
    if tasks and not tasks_out:
        raise click.UsageError("--tasks needs --tasks-out")
    sources = [spec_arg(d) for d in domains]
    try:
        fusion = fuse_specs(sources, person=person, name=name)
    except (FusionError, SpecError) as exc:
        raise click.ClickException(f"fusion refused: {exc}") from None
    failures = example_failures(fusion.spec)
    if failures:
        raise click.ClickException("fused examples fail:\n" + "\n".join(failures[:20]))
    header = f"Fused from {', '.join(fusion.services)} by veritask fuse; edit the sources instead."
    Path(out).write_text(dump_spec(fusion.spec, header))
    report = {**fusion.to_json(), "examples": "all pass", "out": out}
    if tasks and tasks_out:
        report["tasks"] = fused_trajectory_tasks(
            sources, fusion, Path(out), tasks, seed, Path(tasks_out), max_pairs
        )
    if as_json:
        echo_json(report)
        return
    _print_fusion(report, fusion)


def _print_fusion(report: dict[str, Any], fusion: Fusion) -> None:
    click.echo(
        f"{report['name']}: {report['tables']} tables, {report['rules']} rules,"
        f" {report['effects']} effects, {report['persons']} persons -> {report['out']}"
    )
    for decision in fusion.decisions:
        click.echo(
            f"  {decision.kind}: kept {decision.kept}, dropped {decision.dropped} ({decision.reason})"
        )
    for conflict in fusion.conflicts:
        bridge = f"; bridge rule {conflict.bridge}" if conflict.bridge else ""
        click.echo(
            f"  conflict ({conflict.kind}) on {conflict.column}: {conflict.rules[0]}"
            f" [{conflict.requirements[0]}] vs {conflict.rules[1]} [{conflict.requirements[1]}]"
            + bridge
        )
    for note in fusion.notes:
        click.echo(f"  note: {note}")
    if "tasks" in report:
        t = report["tasks"]
        click.echo(
            f"  trajectories: {t['candidates']} candidate pairs, {t['pruned_ex_ante']} pruned ex"
            f" ante, {t['fused']} fused; tasks: {t['tasks']} of {t['asked']} made from"
            f" {t['trajectories_used']} trajectories, {t['certified']} certified,"
            f" {t['grounded']} grounded"
        )


def register(group: click.Group) -> None:
    """Attach this module's commands to the CLI group."""
    group.add_command(tool_graph_cmd)
    group.add_command(fuse_cmd)
