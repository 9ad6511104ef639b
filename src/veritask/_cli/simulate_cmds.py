"""``veritask simulate``: tool catalogues, the trajectory checker, simulated environments."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from veritask._cli._common import (
    OUT_FILE,
    cache_dir_option,
    echo_json,
    first_line,
    model_calls,
    nonempty,
    not_a_directory,
    provider_arg,
    reading,
    require_packages,
)


@click.group("simulate")
def simulate_group() -> None:
    """SimAgent on veritask: catalogues, checking with repair, simulated environments."""


def env_catalog(ref: str) -> Any:
    """The catalogue ``--env-tools`` names (a clean CLI error when it cannot be read)."""
    return _catalog(ref)


def _catalog(ref: str | None) -> Any:
    from veritask.simulate import load_catalog

    if ref is None:
        return None
    not_a_directory(ref)
    try:
        return load_catalog(ref)
    except (ValueError, OSError, RecursionError) as exc:
        raise click.ClickException(f"--tools {ref}: {first_line(exc)}") from None


ENV_MODEL_HELP = (
    "Simulate the environment with this model (provider spec): it answers every tool call "
    "(with --env-tools, only the calls beyond the spec)."
)
ENV_TOOLS_HELP = (
    "Hybrid mode: tools beyond the spec (OpenAI tools JSON, seed trajectories, mcp:CMD ...) "
    "answered by the --env-model simulator; the spec's tools run on the SQLite environment."
)


def env_options(fn: Any) -> Any:
    """``--env-model`` and ``--env-tools`` for the commands that serve an environment."""
    fn = click.option("--env-tools", "env_tools", metavar="TOOLS", help=ENV_TOOLS_HELP)(fn)
    return click.option("--env-model", "env_model", metavar="MODEL", help=ENV_MODEL_HELP)(fn)


def env_label(env_model: str | None, env_tools: str | None) -> str | None:
    """How runs and servers name the environment (None for the SQLite one).

    Raises:
        click.UsageError: ``--env-tools`` without ``--env-model``.
    """
    if env_tools and not env_model:
        raise click.UsageError("--env-tools needs --env-model (the simulator of those tools)")
    if not env_model:
        return None
    return f"hybrid:{env_model}:{env_tools}" if env_tools else f"simulated:{env_model}"


def env_opener(
    env_model: str | None, env_tools: str | None, cache_dir: str | None = None
) -> Callable[..., Any] | None:
    """Opens the simulated (or hybrid) session a server serves, or None for the SQLite one.

    The opener takes ``(domain, origin, package=None, target=None)``.
    """
    if env_label(env_model, env_tools) is None or env_model is None:
        return None
    from veritask.simulate import open_simulated

    provider = provider_arg(env_model, cache_dir)
    extra = _catalog(env_tools)

    def open_session(domain: Any, origin: bytes, package: Any = None, target: Any = None) -> Any:
        return open_simulated(provider, domain, origin, package=package, target=target, extra=extra)

    return open_session


def simulated_source(source: Any, env_model: str | None, env_tools: str | None) -> Any:
    """``source`` with every session simulated (or hybrid), or ``source`` itself without
    ``--env-model``."""
    opener = env_opener(env_model, env_tools)
    label = env_label(env_model, env_tools)
    if opener is None or label is None:
        return source
    from veritask.serve import OpenerSource

    def open_start(start: Any) -> Any:
        target = start.target.data if start.target is not None else None
        return opener(start.domain, start.origin, start.package, target)

    return OpenerSource(source, open_start, label)


@simulate_group.command("tools")
@click.argument("source")
@click.option("--json", "as_json", is_flag=True, help="Print the normalized catalogue as JSON.")
def tools_cmd(source: str, as_json: bool) -> None:
    """Print the tool catalogue SOURCE describes.

    SOURCE is a built-in domain or spec file, an OpenAI tools JSON file, a file of seed
    trajectories (.jsonl / .txt), or 'mcp:COMMAND ARGS...' (an MCP server over stdio).
    """
    catalog = _catalog(source)
    if not catalog.tools:
        raise click.ClickException(f"{source} describes no tools")
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
    type=OUT_FILE,
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
    with reading(nonempty(file, "trajectory rows")):
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


@simulate_group.command("fidelity")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--model", "model", required=True, help="Provider spec of the simulator and judge.")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N tasks.")
@click.option("--out", type=OUT_FILE, help="Per-task records (JSONL; resumable).")
@click.option("--concurrency", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--temperature", type=float, help="Sampling temperature of the simulator.")
@click.option(
    "--replay",
    "replays",
    type=click.Choice(["witness", "faithful"]),
    multiple=True,
    help="Trajectories to replay (repeatable; default: the certified witnesses and the "
    "faithful agent's episodes).",
)
@cache_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def fidelity_cmd(
    directory: str,
    model: str,
    limit: int | None,
    out: str | None,
    concurrency: int,
    temperature: float | None,
    replays: tuple[str, ...],
    cache_dir: str | None,
    as_json: bool,
) -> None:
    """Replay DIRECTORY's certified witnesses and the faithful agent's episodes through a
    simulated environment and the real one side by side; report agreement per tool, per replay
    and overall (whole call, accept/reject, error code, rule, fields, values), and the judge's
    precision and recall of "success" against the certified outcome."""
    from veritask.model import GenerateConfig
    from veritask.pipeline import RunConflict
    from veritask.rollout import TaskSource
    from veritask.simulate import REPLAYS, run_fidelity
    from veritask.task import DatasetError

    require_packages(directory)
    try:
        source = TaskSource.load(directory, limit=limit)
    except DatasetError as exc:
        raise click.ClickException(str(exc)) from None
    provider = provider_arg(model, cache_dir)
    try:
        with model_calls(model):
            report = run_fidelity(
                source,
                provider,
                model=model,
                config=GenerateConfig(temperature=temperature),
                out=Path(out) if out else None,
                concurrency=concurrency,
                replays=replays or REPLAYS,
            )
    except RunConflict as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        echo_json(report)
        return
    _print_fidelity(report)


@simulate_group.command("synthesize")
@click.argument("seeds", type=click.Path(exists=True, dir_okay=False))
@click.option("--tools", "tools_ref", required=True, help="Tool catalogue the trajectories use.")
@click.option("--model", "model", required=True, help="Provider spec of the synthesizing model.")
@click.option("--n", "n", type=click.IntRange(min=1), required=True, help="Answers to ask for.")
@click.option("--out", type=click.Path(file_okay=False), required=True, help="Output directory.")
@click.option("--temperature", type=float, default=1.0, show_default=True)
@click.option("--top-p", type=float, help="Nucleus sampling mass.")
@click.option("--no-judge", is_flag=True, help="Skip the model-judged consistency filter.")
@click.option("--max-repeats", type=click.IntRange(min=1), default=2, show_default=True)
@click.option("--concurrency", type=click.IntRange(min=1), default=4, show_default=True)
@cache_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def synthesize_cmd(seeds: str, tools_ref: str, model: str, out: str, **opts: Any) -> None:
    """Synthesize new tasks and whole trajectories from SEEDS (a trajectory file in any
    supported format): parse, check and repair, filter, and write OUT/records.jsonl (every
    answer, resumable), OUT/trajectories.jsonl (accepted), OUT/sft.{hf,openai,sharegpt}.jsonl
    and OUT/costs.json (the ledger, with the cost per accepted trajectory)."""
    from veritask.pipeline import RunConflict
    from veritask.simulate import load_seeds, run_synthesis

    root = Path(out)
    try:
        with model_calls(model):
            run = run_synthesis(
                load_seeds(Path(seeds)),
                _catalog(tools_ref),
                provider_arg(model, opts["cache_dir"]),
                n=opts["n"],
                model=model,
                options=_synth_options(opts),
                out=root / "records.jsonl",
                concurrency=opts["concurrency"],
            )
    except (RunConflict, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    report = {**run.report, "out": str(root)}
    _write_synthesis(root, run)
    if opts["as_json"]:
        echo_json(report)
        return
    click.echo(
        f"{report['units']} answers: {report['accepted']} accepted, {report['rejected']} "
        f"rejected {report['rejected_by']}; cost per accepted {report['cost_per_accepted']}"
    )


def _synth_options(opts: dict[str, Any]) -> Any:
    from veritask.model import GenerateConfig
    from veritask.simulate import SynthOptions

    config = GenerateConfig(temperature=opts["temperature"], top_p=opts["top_p"])
    return SynthOptions(config=config, judge=not opts["no_judge"], max_repeats=opts["max_repeats"])


def _write_synthesis(root: Path, run: Any) -> None:
    from veritask._util import atomic_write_text
    from veritask.export import FORMATS, export_sft

    lines = "".join(t.model_dump_json() + "\n" for t in run.trajectories)
    atomic_write_text(root / "trajectories.jsonl", lines)
    for fmt in FORMATS:
        export_sft(run.trajectories, fmt, root / f"sft.{fmt}.jsonl")  # type: ignore[arg-type]
    costs = {
        "ledger": run.report["ledger"],
        "accepted": run.report["accepted"],
        "cost_per_accepted": run.report["cost_per_accepted"],
    }
    atomic_write_text(root / "costs.json", json.dumps(costs, indent=2, sort_keys=True) + "\n")


def _print_fidelity(report: dict[str, Any]) -> None:
    from veritask.simulate import ASPECTS

    def cell(entry: dict[str, Any]) -> str:
        rate = entry["rate"]
        return "   -  " if rate is None else f"{rate:6.3f}"

    click.echo(f"{report['tasks']} tasks, {report['calls']} calls")
    click.echo(f"{'':28} {'calls':>5} " + " ".join(f"{_SHORT[a]:>6}" for a in ASPECTS))
    rows = [
        ("overall", {"calls": report["calls"], **report["overall"]}),
        *((f"replay {name}", row) for name, row in report["per_replay"].items()),
        *report["per_tool"].items(),
    ]
    for name, row in rows:
        click.echo(f"{name:28} {row['calls']:>5} " + " ".join(cell(row[a]) for a in ASPECTS))
    faithful = report["faithful"]
    if faithful is not None:
        click.echo(f"faithful agent: {faithful['solved']}/{faithful['episodes']} solved")
    judge = report["judge"]
    for name, row in [("all", judge), *judge["per_episode"].items()]:
        click.echo(
            f"judge {name:10} precision {_num(row['precision'])} recall {_num(row['recall'])} "
            f"agreement {_num(row['agreement'])} over {row['judged']} episodes"
        )


_SHORT = {
    "call": "call",
    "accept_reject": "accept",
    "error_code": "code",
    "rule": "rule",
    "fields": "fields",
    "values": "values",
}


def _num(value: float | None) -> str:
    return "  -  " if value is None else f"{value:.3f}"


def register(group: click.Group) -> None:
    """Add the ``simulate`` group to the CLI."""
    group.add_command(simulate_group)
