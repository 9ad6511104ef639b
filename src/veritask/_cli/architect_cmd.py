"""``veritask architect``: a natural-language seed in, a verified domain spec out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from veritask._cli._common import (
    OUT_FILE,
    cache_dir_option,
    echo_json,
    model_advice,
    model_calls,
    model_named,
    provider_arg,
    reading,
)
from veritask.model import ModelProvider, ProviderError, RecordingProvider
from veritask.pipeline import RunConflict
from veritask.synth import (
    ArchitectError,
    ArchitectReport,
    ArchitectResult,
    SeedError,
    default_run_dir,
    load_seed,
    run_architect,
)


def _provider(model: str, record: str | None, cache_dir: str | None) -> ModelProvider:
    provider = provider_arg(model, cache_dir)
    return RecordingProvider(provider, record) if record else provider


def _architect_failure(exc: ArchitectError, model: str) -> str:
    """The failure line; a failed model call also names the model, its endpoint and a fix."""
    if isinstance(exc.__cause__, ProviderError):
        return f"{exc} ({model_named(model)}: {model_advice(model)})"
    return str(exc)


def _payload(report: ArchitectReport, out: str | None) -> dict[str, Any]:
    return {"out": out, **report.to_json()}


def _write_report(path: str | None, payload: dict[str, Any]) -> None:
    if path:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", "utf-8")


def _summary_lines(report: ArchitectReport) -> list[str]:
    lines = []
    for stage in report.stages:
        errors = [len(r.errors) for r in stage.rounds]
        verdict = "accepted in round" if stage.passed else "rejected after rounds"
        resumed = " [resumed]" if stage.stage in report.resumed else ""
        lines.append(
            f"  {stage.stage:<7} {verdict} {stage.rounds_used}/{stage.max_rounds} "
            f"(errors per round: {errors}){resumed}"
        )
    total = report.cost.total()
    lines.append(
        f"  cost: {total.calls} model call(s), {total.prompt_tokens} prompt + "
        f"{total.completion_tokens} completion tokens, {total.cost:.4f}"
    )
    return lines


def _write_artifacts(directory: str | None, result: ArchitectResult) -> None:
    if directory:
        root = Path(directory)
        root.mkdir(parents=True, exist_ok=True)
        for name, text in result.artifacts().items():
            (root / name).write_text(text, encoding="utf-8")


@click.command("architect")
@click.argument("seed", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--model",
    "model",
    required=True,
    help="Provider spec: openai:MODEL (endpoint and key from the environment), replay:PATH, "
    "or any registered scheme.",
)
@click.option("--out", type=OUT_FILE, required=True, help="Write the spec YAML here.")
@click.option(
    "--rounds",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Check-Fix-Verify rounds per stage.",
)
@click.option("--report", type=OUT_FILE, help="Write the JSON report here.")
@click.option(
    "--record",
    type=OUT_FILE,
    help="Append every model exchange to this JSONL file (rerun it with --model replay:PATH).",
)
@click.option(
    "--artifacts",
    type=click.Path(file_okay=False),
    help="Write the accepted stage artifacts (plan, wiki, tables, rules) to this directory.",
)
@click.option(
    "--run-dir",
    type=click.Path(file_okay=False),
    help="Keep each accepted stage here; a rerun resumes after the last one [default: OUT.run].",
)
@cache_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report.")
def architect_cmd(
    seed: str,
    model: str,
    out: str,
    rounds: int,
    report: str | None,
    record: str | None,
    artifacts: str | None,
    run_dir: str | None,
    cache_dir: str | None,
    as_json: bool,
) -> None:
    """Compile a natural-language SEED into a verified domain spec with an LLM.

    Four stages (complexity plan, wiki policy, tables, rules and effects), each checked and sent
    back for fixing up to --rounds times. The spec is written only when it compiles in SQLite and
    every rule's examples behave as declared.

    Each accepted stage is kept in the run directory (--run-dir, default OUT.run): a killed run
    rerun with the same settings resumes after the last accepted stage without asking the model
    again; a rerun with other settings (seed, model, rounds) is refused.
    """
    try:
        with reading(seed):
            loaded = load_seed(seed)
    except SeedError as exc:
        raise click.ClickException(str(exc)) from None
    provider = _provider(model, record, cache_dir)
    where = run_dir or default_run_dir(out)
    try:
        with model_calls(model):
            result = run_architect(loaded, provider, rounds=rounds, run_dir=where, model=model)
    except RunConflict as exc:
        raise click.ClickException(str(exc)) from None
    except ArchitectError as exc:
        payload = _payload(exc.report, None)
        _write_report(report, payload)
        if as_json:
            echo_json(payload)
        else:
            click.echo("\n".join(_summary_lines(exc.report)), err=True)
        raise click.ClickException(_architect_failure(exc, model)) from None
    result.write(out)
    _write_artifacts(artifacts, result)
    payload = _payload(result.report, out)
    _write_report(report, payload)
    if as_json:
        echo_json(payload)
        return
    spec = result.spec
    click.echo(
        f"{out}: {spec.name} ({len(spec.tables)} tables, {len(spec.rules)} rules, "
        f"{len(spec.effects)} effects, {len(spec.transactions)} transactions)"
    )
    click.echo("\n".join(_summary_lines(result.report)))


def register(group: click.Group) -> None:
    """Add this module's commands to the CLI group."""
    group.add_command(architect_cmd)
