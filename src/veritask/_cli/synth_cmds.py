"""Commands over task datasets: generate, check, report, export."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, cast

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from veritask._cli._common import (
    OUT_FILE,
    cache_dir_option,
    echo_json,
    executor_options,
    executor_scope,
    model_calls,
    not_a_directory,
    provider_arg,
    reading,
    require_packages,
)
from veritask._cli.hf_cmds import export_hf_dir, hf_export_options
from veritask.rollout import stats_of_files
from veritask.synth import GenerateSummary, generate
from veritask.task import DatasetError, check_dataset, export_tau2, load_prices, report_dataset

_err = Console(stderr=True)
_Mode = Literal["symbolic", "llm"]


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
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Worker processes (LLM mode: units explored concurrently).",
)
@click.option(
    "--explorer",
    type=click.Choice(["symbolic", "llm"]),
    default="symbolic",
    show_default=True,
    help="Who explores: the symbolic Explorer, or a Client and a Consultant model (needs --model).",
)
@click.option(
    "--projector",
    type=click.Choice(["symbolic", "llm"]),
    default=None,
    help="Who writes the task descriptions; default: the same kind as --explorer.",
)
@click.option(
    "--model",
    "model",
    default=None,
    metavar="SPEC",
    help="Provider spec for the LLM roles, e.g. openai:gpt-4o-mini or replay:run.jsonl.",
)
@click.option(
    "--persona",
    is_flag=True,
    help="Write each description as a persona task: an instruction, a motivation, a start-up "
    "query stating one pain point, the rest in a hidden profile (with --projector llm the "
    "model writes it).",
)
@click.option(
    "--archetypes",
    default=None,
    metavar="MIX",
    help="The user archetype mix, e.g. 'edge' (one archetype) or 'mismatch=1,edge=2' "
    "(weights); default: mismatch, entangled, rookie and edge equally.",
)
@click.option(
    "--noise",
    type=click.IntRange(0, 1000),
    default=None,
    help="Near-identical records per catalogue table injected into every origin state "
    "(default: each table's 'noise' in the spec).",
)
@cache_dir_option
@executor_options
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
def generate_cmd(
    domain: str,
    n: int,
    seed: int,
    out: str,
    workers: int,
    explorer: str,
    projector: str | None,
    model: str | None,
    persona: bool,
    archetypes: str | None,
    noise: int | None,
    cache_dir: str | None,
    executor: str,
    ray_address: str | None,
    as_json: bool,
) -> None:
    """Manufacture N certified task packages (resumable: rerun the same command to finish).

    With --explorer llm (or --projector llm) the model --model names plays the roles; --workers
    then counts units explored concurrently, each unit's spending kept (see 'veritask report')."""
    _check_mode(explorer, projector, model)
    not_a_directory(domain)
    provider = provider_arg(model, cache_dir) if model else None
    with (
        _generate_bar(as_json) as bar,
        executor_scope(executor, workers, ray_address),
        model_calls(model),
    ):
        task = bar.add_task("generate", total=n)
        try:
            summary = generate(
                domain,
                n,
                seed,
                out,
                workers=workers,
                progress=lambda k: bar.advance(task, k),
                explorer=cast(_Mode, explorer),
                projector=cast(_Mode | None, projector),
                model=provider,
                persona=persona,
                archetypes=_mix(archetypes),
                noise=noise,
            )
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
    payload = _summary_payload(summary)
    if as_json:
        echo_json(payload)
    else:
        click.echo(
            f"{summary.tasks} packages in {summary.out} ({summary.resumed_units} of {summary.units} units were already done)"
        )
        if summary.tasks and summary.shortfall():
            click.echo(summary.shortfall())
    _refuse_empty(summary, n)


def _generate_bar(hidden: bool) -> Progress:
    """The progress bar of ``generate`` on stderr (``hidden`` with --json)."""
    return Progress(
        TextColumn("[bold]generate"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=_err,
        disable=hidden,
    )


def _refuse_empty(summary: GenerateSummary, n: int) -> None:
    """A run that was asked for packages and made none fails, with the discard reasons."""
    if summary.tasks == 0 and n > 0:
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(summary.discarded.items()))
        raise click.ClickException(
            f"no package could be made (candidates discarded: {reasons or 'none were found'}); "
            "see docs/domain-reference.md, 'Heuristics', for what the synthesizer needs"
        )


def _check_mode(explorer: str, projector: str | None, model: str | None) -> None:
    """A model is given exactly when a role is played by one."""
    llm = explorer == "llm" or projector == "llm"
    if llm and not model:
        raise click.UsageError(
            f"--explorer {explorer}{' --projector ' + projector if projector else ''} calls a "
            "model: add --model SPEC (e.g. --model openai:gpt-4o-mini, or --model "
            "replay:run.jsonl to replay a recording)"
        )
    if model and not llm:
        raise click.UsageError("--model is only used with --explorer llm or --projector llm")


def _summary_payload(summary: GenerateSummary) -> dict[str, Any]:
    """The JSON summary of a generation run."""
    payload: dict[str, Any] = {
        "out": str(summary.out),
        "tasks": summary.tasks,
        "units": summary.units,
        "resumed_units": summary.resumed_units,
        "discarded": summary.discarded,
    }
    if summary.costs is not None:
        payload["costs"] = summary.costs.to_json()
    return payload


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
        counts = payload["lint"]["counts"]
        if counts:
            shown = ", ".join(f"{k} {v}" for k, v in counts.items())
            click.echo(f"lint (a careful reader's findings, not failures): {shown}")
    if payload["failures"]:
        raise SystemExit(1)


def _mix(text: str | None) -> dict[str, float] | None:
    """``edge`` or ``mismatch=1,edge=2`` as archetype weights (a bare name weighs 1)."""
    if not text:
        return None
    out: dict[str, float] = {}
    for part in text.split(","):
        name, _, weight = part.strip().partition("=")
        try:
            out[name.strip()] = float(weight) if weight else 1.0
        except ValueError:
            msg = f"{part!r}: a weight is a number"
            raise click.BadParameter(msg, param_hint="--archetypes") from None
    return out


@click.command("report")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option(
    "--prices",
    default=None,
    metavar="PROMPT,COMPLETION|FILE",
    help="Prices per million tokens for the cost section: two numbers for every module, or a "
    "YAML file mapping module or model names (or 'default') to [prompt, completion].",
)
@click.option(
    "--rollouts",
    "rollouts",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Trajectory files (repeatable) for the rollout statistics section; default: the "
    "dataset's trajectories.jsonl when it has one.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def report_cmd(
    directory: str, prices: str | None, rollouts: tuple[str, ...], as_json: bool
) -> None:
    """Difficulty, tags, boundary density and coverage of a dataset; for LLM-mode datasets also
    what each module cost (turns, tokens, cost, success rate; in total and per package); with
    rollouts, turns, messages, tool calls and errors per episode, per agent."""
    try:
        with reading(prices or "--prices"):
            table = load_prices(prices) if prices else None
        payload = report_dataset(directory, prices=table)
        files = [Path(r) for r in rollouts] or _found_rollouts(Path(directory))
        if files:
            payload["rollouts"] = stats_of_files(files)
    except DatasetError as exc:
        raise _dataset_error(exc) from None
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
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
    cast = payload["cast"]
    click.echo(
        f"cast {cast['users']} users, the largest {cast['max_over_uniform']}x a uniform share  "
        f"texts repeated on another origin {payload['repeated_texts']}"
    )
    same = [r for r in payload["repeats"] if not r["differ"]]
    click.echo(
        f"texts made more than once {len(payload['repeats'])}, "
        f"{len(same)} of them with a shared state pair"
        + "".join(f"\n  {', '.join(r['packages'])}: {r['text'][:70]}" for r in same[:10])
    )
    _echo_cast_and_boundaries(payload)
    _echo_uncovered(payload["uncovered"])
    if "dual_control" in payload:
        dual = payload["dual_control"]
        reasons = ", ".join(f"{k} {v}" for k, v in dual["escalation_reasons"].items()) or "none"
        click.echo(
            f"user-side calls: {dual['user_tool_tasks']} tasks ({dual['user_tool_share']}), "
            f"{dual['user_calls']} calls  hand-offs {dual['escalations']} "
            f"({dual['escalation_share']}; {reasons})  declined {dual['declined_escalations']}"
        )
    if "costs" in payload:
        _echo_costs(payload["costs"])
    if "rollouts" in payload:
        _echo_rollouts(payload["rollouts"])


def _echo_cast_and_boundaries(payload: dict[str, Any]) -> None:
    """The archetype mix and the boundary-seeded packages per kind and per rule category."""
    arch = payload["archetypes"]
    mix = ", ".join(f"{a} {arch['counts'][a]} ({arch['shares'][a]:.0%})" for a in arch["counts"])
    click.echo(f"archetypes (non-refusal) {mix}  built {arch['built']}/{payload['tasks']}")
    bounds = payload["boundaries"]
    for part in ("kind", "category"):
        counts = bounds[f"{part}s" if part == "kind" else "categories"]
        shown = ", ".join(f"{k} {v}" for k, v in counts.items()) or "none"
        click.echo(f"boundary-seeded by {part}: {shown}")


def _found_rollouts(directory: Path) -> list[Path]:
    """The dataset's own trajectories file, when it has a non-empty one."""
    path = directory / "trajectories.jsonl"
    return [path] if path.is_file() and path.stat().st_size else []


def _echo_rollouts(stats: dict[str, Any]) -> None:
    """One line per agent: episodes, then mean / median / p90 of each measure, then errors."""
    for agent, block in stats["agents"].items():
        measures = "  ".join(
            f"{m.replace('_', ' ')} {block[m]['mean']:.2f}/{block[m]['median']:g}/{block[m]['p90']:g}"
            for m in ("turns", "messages", "tool_calls")
        )
        errors = block["errors"]
        click.echo(
            f"rollouts {agent}: {block['episodes']} episodes  {measures} (mean/median/p90)  "
            f"errored {errors['errored_episodes']}  rejected calls {errors['rejected_calls']}"
        )


def _echo_uncovered(missing: dict[str, dict[str, dict[str, str]]]) -> None:
    """One line per rule or write tool a domain left uncovered, with why."""
    for domain, kinds in missing.items():
        for kind, items in kinds.items():
            for name, reason in items.items():
                # a tool reserved for the system is left out of tool coverage (no task can
                # call it); a rule the spec rules out still counts in rule coverage
                left_out = kind == "tools" and reason.startswith("unreachable by construction")
                note = " (not counted in tool coverage)" if left_out else ""
                click.echo(f"uncovered {kind[:-1]} {domain}/{name}: {reason}{note}")


def _echo_costs(costs: dict[str, Any]) -> None:
    """The cost section as a table in the layout of LOGIGEN's Table 5."""
    click.echo(
        f"costs (explorer {costs['explorer']}, projector {costs['projector']}, "
        f"model {costs['model']})"
    )
    click.echo(
        f"  {'module':<12}{'success':>9}{'turns/pkg':>11}{'prompt/pkg':>13}"
        f"{'compl./pkg':>12}{'cost/pkg':>12}{'total cost':>12}"
    )
    rows = [*costs["modules"].items(), ("total", costs["total"])]
    for name, row in rows:
        rate = row["success_rate"]
        per = row["per_package"]
        click.echo(
            f"  {name:<12}{'-' if rate is None else f'{rate:.1%}':>9}{per['turns']:>11.2f}"
            f"{per['prompt_tokens']:>13,.0f}{per['completion_tokens']:>12,.0f}"
            f"{per['cost']:>12.4f}{row['cost']:>12.4f}"
        )


@click.command("export")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option(
    "--format", "fmt", type=click.Choice(["tau2", "hf"]), required=True, help="Export format."
)
@click.option(
    "--out",
    type=click.Path(),
    required=True,
    help="Output file (tau2) or folder (hf: Parquet configs and a card).",
)
@hf_export_options
def export_cmd(directory: str, fmt: str, out: str, push: str | None, license_id: str) -> None:
    """Export a dataset (tau2: tau2-bench Task JSON; hf: the Hugging Face Hub's format, which
    datasets.load_dataset loads and 'veritask import-hf' rebuilds)."""
    require_packages(directory)
    if fmt == "hf":
        export_hf_dir(directory, out, push, license_id)
        return
    if push:
        raise click.UsageError("--push is only used with --format hf")
    ctx = click.get_current_context()
    out_param = next(p for p in ctx.command.params if p.name == "out")
    out = OUT_FILE.convert(out, out_param, ctx)
    try:
        count = export_tau2(directory, Path(out))
    except DatasetError as exc:
        raise _dataset_error(exc) from None
    click.echo(f"{count} tasks -> {out} ({fmt})")


def register(group: click.Group) -> None:
    """Add this module's commands to the CLI group."""
    for cmd in (generate_cmd, check_cmd, report_cmd, export_cmd):
        group.add_command(cmd)
