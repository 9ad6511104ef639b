"""Commands that run agents on task datasets: eval, rollout, export-sft."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from veritask._cli._common import echo_json, executor_options, executor_scope
from veritask.task import DatasetError, check_dataset

_err = Console(stderr=True)


_COUNT: dict[str, Any] = {"type": click.IntRange(min=1), "show_default": True}
"""A positive count option."""


def _roles_options(fn: Any) -> Any:
    options = [
        click.option(
            "--agent",
            default="oracle",
            show_default=True,
            help="oracle | faithful | noop | random | openai:MODEL",
        ),
        click.option(
            "--user", default="scripted", show_default=True, help="scripted | openai:MODEL"
        ),
        click.option("--trials", default=1, help="Trials per task (k of pass^k).", **_COUNT),
        click.option(
            "--seed", type=int, default=0, show_default=True, help="Base seed of the episodes."
        ),
        click.option(
            "--base-url",
            help="OpenAI-compatible endpoint (vLLM, SGLang, ...); else VERITASK_BASE_URL / OPENAI_BASE_URL.",
        ),
        click.option("--concurrency", default=8, help="Episodes at once.", **_COUNT),
        click.option("--max-turns", default=30, help="User turns per episode.", **_COUNT),
        click.option("--limit", type=click.IntRange(min=1), help="Only the first N tasks."),
        click.option(
            "--cache-dir", type=click.Path(file_okay=False), help="Cache model responses here."
        ),
        click.option("--temperature", type=float, help="Sampling temperature for model roles."),
        click.option(
            "--max-errors",
            type=click.IntRange(min=0),
            default=0,
            show_default=True,
            help="Errored episodes (unreachable model, rejected key, timeout...) to tolerate; "
            "they are never scored, and pass^k is over the scored episodes.",
        ),
        click.option(
            "--allow-uncertified",
            is_flag=True,
            help="Run even when the dataset fails 'veritask check' (edited, unsealed or stale).",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return _env_options(fn)


def _env_options(fn: Any) -> Any:
    """``--env-model`` and ``--env-tools``: a simulated or hybrid environment."""
    options = [
        click.option(
            "--env-model",
            help="Simulate the environment with this model (provider spec) instead of running "
            "the SQLite environment; the model also judges each episode (the reward).",
        ),
        click.option(
            "--env-tools",
            metavar="TOOLS",
            help="Hybrid mode (with --env-model): tools beyond the spec (OpenAI tools JSON, seed "
            "trajectories, mcp:CMD ...) answered by the simulator; the spec's tools run on the "
            "SQLite environment and the judge gives the reward.",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return executor_options(_WORKERS(fn))


_WORKERS = click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="With --executor ray: Ray actors, each running --concurrency episodes at once.",
)


def _require_certified(directory: str) -> None:
    """Refuse a dataset that does not pass ``veritask check``: rewards on it mean nothing."""
    try:
        report = check_dataset(directory)
    except DatasetError as exc:
        raise click.ClickException(str(exc)) from None
    if not report.ok:
        first = report.failures[0]
        raise click.ClickException(
            f"{directory} does not pass 'veritask check' ({len(report.failures)} failure(s); "
            f"first: {first['id']}: {first['kind']}: {first['detail']}); "
            "pass --allow-uncertified to run on it anyway"
        )


def _run(
    directory: str, opts: dict[str, Any], out: Path | None, perturbation: str | None = None
) -> Any:
    """Run the episodes; the pipeline's ``RolloutReport`` (scored and errored episodes).
    With ``perturbation``, the agent plays behind that perturbed tool surface."""
    from veritask.pipeline import RunConflict
    from veritask.rollout import RoleError, TaskSource

    if not opts["allow_uncertified"]:
        _require_certified(directory)

    provider_options: dict[str, Any] = {}
    if opts["base_url"]:
        provider_options["base_url"] = opts["base_url"]
    if opts["cache_dir"]:
        provider_options["cache_dir"] = opts["cache_dir"]
    if os.environ.get("VERITASK_API_KEY"):
        provider_options.setdefault("api_key", os.environ["VERITASK_API_KEY"])
    roles = _roles(opts, provider_options, perturbation)
    try:
        roles.check()
        source = TaskSource.load(directory, limit=opts["limit"])
    except (RoleError, DatasetError) as exc:
        raise click.ClickException(str(exc)) from None
    environment = _environment(opts, provider_options)
    total = len(source.packages) * opts["trials"]
    with Progress(
        TextColumn("[bold]episodes"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=_err,
        disable=opts["quiet"],
    ) as bar:
        task = bar.add_task("episodes", total=total)
        scope = executor_scope(opts["executor"], opts["workers"], opts["ray_address"])
        try:
            with scope:
                return _run_batch(source, roles, opts, out, environment, bar, task)
        except RunConflict as exc:
            raise click.ClickException(str(exc)) from None


def _roles(opts: dict[str, Any], provider_options: dict[str, Any], perturbation: str | None) -> Any:
    from veritask.rollout import PerturbedRoles, RoleFactory

    common: dict[str, Any] = {
        "agent": opts["agent"],
        "user": opts["user"],
        "provider_options": provider_options,
        "temperature": opts["temperature"],
    }
    if perturbation is None:
        return RoleFactory(**common)
    return PerturbedRoles(
        **common, perturbation=perturbation, perturb_seed=opts.get("perturb_seed", 0)
    )


def _run_batch(
    source: Any,
    roles: Any,
    opts: dict[str, Any],
    out: Path | None,
    environment: Any,
    bar: Progress,
    task: Any,
) -> Any:
    from veritask.pipeline import run_rollout
    from veritask.rollout import EpisodeLimits

    return asyncio.run(
        run_rollout(
            source,
            roles,
            trials=opts["trials"],
            seed=opts["seed"],
            concurrency=opts["concurrency"],
            out=out,
            limits=EpisodeLimits(max_turns=opts["max_turns"]),
            progress=lambda _t: bar.advance(task),
            environment=environment,
            max_errors=opts["max_errors"],
        )
    )


def _environment(opts: dict[str, Any], provider_options: dict[str, Any]) -> Any:
    """The simulated (or, with ``--env-tools``, hybrid) environment ``--env-model`` names, or
    None for the SQLite one."""
    from veritask._cli.simulate_cmds import env_catalog, env_label

    spec, tools = opts.get("env_model"), opts.get("env_tools")
    label = env_label(spec, tools)
    if label is None or spec is None:
        return None
    from veritask.model import GenerateConfig, get_provider
    from veritask.simulate import hybrid_sessions, simulated_sessions

    try:
        provider = get_provider(spec, **provider_options)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    config = GenerateConfig(temperature=opts["temperature"])
    if tools:
        return label, hybrid_sessions(provider, env_catalog(tools), config)
    return label, simulated_sessions(provider, config)


@click.command("eval")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@_roles_options
@click.option(
    "--out", type=click.Path(dir_okay=False), help="Also keep the trajectories (JSONL; resumable)."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option(
    "--perturb",
    "perturb",
    multiple=True,
    metavar="KIND[,KIND...]",
    help="Also run the agent behind a perturbed tool surface (repeatable; all, rename-tools, "
    "rename-args, reorder-fields, extra-fields, noisy-observations, truncate-observations) "
    "and report pass^k per kind beside the clean run.",
)
@click.option(
    "--perturb-seed", type=int, default=0, show_default=True, help="Seed of the perturbations."
)
def eval_cmd(
    directory: str, out: str | None, as_json: bool, perturb: tuple[str, ...], **opts: Any
) -> None:
    """Run an agent on a task dataset and report pass^k (success: the verified reward is 1).

    Episodes that errored (the model unreachable, the key refused, a timeout...) are never
    scored: they are counted apart, and any beyond --max-errors fail the command. With
    --perturb, the same tasks run again behind each perturbation (OUT gains one file per
    kind, OUT's stem + .KIND) and the report gives each kind's pass^k and drop.
    """
    from veritask.rollout import parse_kinds

    try:
        kinds = parse_kinds(perturb)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--perturb") from None
    opts["quiet"] = as_json
    summary, problem = _evaluate(directory, opts, out, None)
    if kinds and problem is None:
        opts["allow_uncertified"] = True  # checked once, by the clean run
        summary["perturbations"] = {}
        for kind in kinds:
            row, problem = _evaluate(directory, opts, _kind_out(out, kind), kind)
            summary["perturbations"][kind] = _perturbation_row(summary, row, opts["trials"])
            if problem is not None:
                break
    summary["ok"] = problem is None
    if as_json:
        echo_json(summary)
    elif problem is None:
        click.echo(metric_line(summary, opts["agent"]))
        if kinds:
            click.echo(perturbation_table(summary, opts["trials"]))
        _warn_errors(summary)
    if problem is not None:
        raise click.ClickException(problem)


def _kind_out(out: str | None, kind: str) -> str | None:
    """Where the trajectories of one perturbation go: OUT's stem + ``.KIND`` + OUT's suffix."""
    if out is None:
        return None
    path = Path(out)
    return str(path.with_name(f"{path.stem}.{kind}{path.suffix}"))


def _evaluate(
    directory: str, opts: dict[str, Any], out: str | None, kind: str | None
) -> tuple[dict[str, Any], str | None]:
    """One run's summary (pass^k None when it must not be reported) and its problem."""
    from veritask.rollout import summarize

    report = _run(directory, opts, Path(out) if out else None, kind)
    trials = opts["trials"]
    summary = summarize(report.trajectories, trials, report.errors)
    summary["not_run"] = report.not_run
    problem = run_problem(summary, opts["max_errors"])
    if problem is not None:
        summary.update({f"pass^{k}": None for k in range(1, trials + 1)})
    return summary, problem


def _perturbation_row(clean: dict[str, Any], run: dict[str, Any], trials: int) -> dict[str, Any]:
    """A perturbation's pass^k and its drop from the clean run (clean minus perturbed)."""
    row: dict[str, Any] = {k: run[k] for k in ("tasks", "scored", "errors")}
    for k in range(1, trials + 1):
        value, base = run[f"pass^{k}"], clean[f"pass^{k}"]
        row[f"pass^{k}"] = value
        row[f"drop^{k}"] = None if value is None or base is None else round(base - value, 6)
    return row


def perturbation_table(summary: dict[str, Any], trials: int) -> str:
    """The clean run and each perturbation: pass^k and the drop, one row each."""
    head = "".join(f"  pass^{k}   drop" for k in range(1, trials + 1))
    lines = [f"{'perturbation':<24}{head}"]
    rows = {"clean": summary, **summary["perturbations"]}
    for name, row in rows.items():
        cells = ""
        for k in range(1, trials + 1):
            value, drop = row.get(f"pass^{k}"), row.get(f"drop^{k}")
            cells += f"  {_cell(value, 7)}  {_cell(drop, 5) if name != 'clean' else '':>5}"
        lines.append(f"{name:<24}{cells}")
    return "\n".join(lines)


def _cell(value: float | None, width: int) -> str:
    return f"{value:.3f}".rjust(width) if value is not None else "-".rjust(width)


@click.command("rollout")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@_roles_options
@click.option(
    "--out", type=click.Path(dir_okay=False), required=True, help="Trajectories JSONL (resumable)."
)
def rollout_cmd(directory: str, out: str, **opts: Any) -> None:
    """Run an agent on a task dataset and write verified trajectories (JSONL).

    Errored episodes are not written there but listed in OUT.errors.jsonl; a rerun into the
    same OUT retries them. Any beyond --max-errors fail the command.
    """
    from veritask.pipeline import errors_path
    from veritask.rollout import summarize

    opts["quiet"] = False
    report = _run(directory, opts, Path(out))
    summary = summarize(report.trajectories, opts["trials"], report.errors)
    summary["not_run"] = report.not_run
    verified = sum(1 for t in report.trajectories if t.reward == 1.0)
    line = f"{len(report.trajectories)} trajectories in {out} ({verified} verified)"
    if report.errors:
        line += (
            f"; {len(report.errors)} errored episode(s) listed in "
            f"{errors_path(Path(out))} (a rerun retries them)"
        )
    click.echo(line)
    problem = run_problem(summary, opts["max_errors"])
    if problem is not None:
        raise click.ClickException(problem)
    _warn_errors(summary)


@click.command("export-sft")
@click.argument("trajectories", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["hf", "openai", "sharegpt"]),
    required=True,
    help="Row format.",
)
@click.option("--verified-only", is_flag=True, help="Keep only trajectories whose reward is 1.")
@click.option("--out", type=click.Path(dir_okay=False), required=True, help="Output JSONL.")
@click.option(
    "--perturb-schemas",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Also write K variants of each trajectory with tools and parameters renamed and "
    "reordered and observation noise.",
)
@click.option("--perturb-seed", type=int, default=0, show_default=True, help="Variants' seed.")
@click.option(
    "--role",
    type=click.Choice(["assistant", "user"]),
    default="assistant",
    show_default=True,
    help="Whose turns are the targets; user: user-simulator data from verified trajectories "
    "(the hidden profile as system prompt), needs --dataset.",
)
@click.option(
    "--dataset",
    type=click.Path(exists=True, file_okay=False),
    help="The dataset of the trajectories' tasks (for --role user).",
)
def export_sft_cmd(trajectories: str, fmt: str, out: str, **opts: Any) -> None:
    """Export trajectories as SFT data: Hugging Face rows, OpenAI chat JSONL, or ShareGPT.

    With --perturb-schemas K, each trajectory is followed by K schema-perturbed variants
    (seeded and deterministic). With --role user, the rows train a user simulator: the user's
    turns of verified trajectories are the targets.
    """
    from veritask.export import export_sft, packages_by_id, read_trajectories

    role = opts["role"]
    if not Path(trajectories).read_bytes().strip():
        raise click.ClickException(f"{trajectories} is empty: there are no trajectories to export")
    if role == "user" and opts["dataset"] is None:
        raise click.UsageError("--role user needs --dataset (the tasks' hidden user profiles)")
    try:
        packages = packages_by_id(opts["dataset"]) if role == "user" else None
        count = export_sft(
            read_trajectories(trajectories),
            fmt,  # type: ignore[arg-type]
            Path(out),
            verified_only=opts["verified_only"],
            perturb_schemas=opts["perturb_schemas"],
            perturb_seed=opts["perturb_seed"],
            role=role,
            packages=packages,
        )
    except (DatasetError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"{count} rows -> {out} ({fmt}, {role} turns as targets)")


def metric_line(summary: dict[str, Any], agent: str) -> str:
    """The pass^k line of an acceptable run, saying what was left out when episodes errored."""
    trials = summary["trials"]
    ks = ", ".join(
        f"pass^{k} {summary[f'pass^{k}']:.3f}"
        for k in range(1, trials + 1)
        if summary[f"pass^{k}"] is not None
    )
    line = f"{summary['tasks']} tasks x {trials} trials with agent {agent}: {ks}"
    if summary["errors"]:
        line += f" over {summary['scored']} scored episodes; {summary['errors']} errored (excluded)"
    return line


def run_problem(summary: dict[str, Any], max_errors: int) -> str | None:
    """Why the run's metric must not be reported (one line), or None when it may be: more
    errored episodes than tolerated (the run then stopped starting episodes: ``not_run``), or
    none scored at all."""
    errors, episodes = summary["errors"], summary["episodes"]
    if errors == 0 or (errors <= max_errors and summary["scored"] > 0):
        return None
    tail = f"{errors} of {episodes} episodes errored"
    if summary.get("not_run"):
        tail += f", {summary['not_run']} more not run (a rerun runs them)"
    if errors <= max_errors:
        tail += ", none was scored"
    else:
        tail += f", --max-errors is {max_errors}"
    return f"{describe_failure(summary['first_error'])} [{tail}]"


_ROLE_FLAG = {"agent": "--agent", "user": "--user", "environment": "--env-model"}


def describe_failure(record: dict[str, Any]) -> str:
    """One line for people: what failed, where, and what to do."""
    url, kind = record.get("base_url"), record.get("kind")
    where = f"the model at {url}" if url else f"the {record.get('role', 'agent')}'s model"
    if kind == "connection":
        reason = record.get("reason") or "connection failed"
        return f"could not reach {where} ({reason}); check --base-url or start the server"
    if kind == "auth":
        return (
            f"{where} refused the API key; set VERITASK_API_KEY or OPENAI_API_KEY "
            f"({record['message']})"
        )
    if kind == "not_found":
        return f"{where} has no model {record.get('model')!r} (404); check the model name in " + (
            f"{_ROLE_FLAG.get(record.get('role') or '', '--agent')} and --base-url"
        )
    if kind == "timeout":
        return f"{where} did not answer in time; check the server or lower --concurrency"
    return f"the {record.get('role')} failed ({kind}): {record['message']}"


def _warn_errors(summary: dict[str, Any]) -> None:
    """Name the first tolerated error on stderr."""
    if summary["errors"]:
        first = summary["first_error"]
        _err.print(
            f"{summary['errors']} episode(s) errored and were not scored; first "
            f"({first['task_id']} trial {first['trial']}): {describe_failure(first)}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


def register(group: click.Group) -> None:
    """Add this module's commands to the CLI group."""
    for cmd in (eval_cmd, rollout_cmd, export_sft_cmd):
        group.add_command(cmd)
