"""``veritask evolve run|status|report``: the self-evolving data engine, and ``veritask curate``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from veritask._cli._common import OUT_FILE, echo_json, model_calls, nonempty, provider_arg, reading


@click.group("evolve")
def evolve_group() -> None:
    """Plan streams that synthesize, verify, roll out, attribute and reflect (AReaL-SEA)."""


@evolve_group.command("run")
@click.option("--domains", required=True, help="Comma-separated built-in domains or spec files.")
@click.option("--plans", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--iterations", type=click.IntRange(min=1), default=3, show_default=True)
@click.option("--candidates", type=click.IntRange(min=1), default=40, show_default=True,
              help="Candidates synthesized per domain, stream and iteration.")  # fmt: skip
@click.option("--batch", type=click.IntRange(min=1), default=8, show_default=True,
              help="Candidates per iteration that go on to verification.")  # fmt: skip
@click.option("--agent", default="faithful", show_default=True,
              help="The assistant (faithful errs by --error-rate; random, oracle, or a provider "
              "spec).")  # fmt: skip
@click.option("--error-rate", type=click.FloatRange(0.0, 1.0), default=0.2, show_default=True,
              help="Share of episodes in which the faithful agent (rollouts and the reference "
              "solver of attribution) makes one error.")  # fmt: skip
@click.option("--error-kinds", default="premature-end,skip-confirmation,wrong-argument",
              show_default=True, help="The errors it makes (comma-separated).")  # fmt: skip
@click.option("--orchestrator",
              help="Provider spec of the orchestrator that versions each stream's workflow "
              "(prompts, stage settings); 'scripted' runs the offline one.")  # fmt: skip
@click.option("--user", default="scripted", show_default=True, help="The user simulator.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--model", help="Provider spec for the model roles (plans, verification, reflection)."
)
@click.option(
    "--synthesis",
    type=click.Choice(["symbolic", "model"]),
    default="symbolic",
    show_default=True,
    help="Who synthesizes candidates: the symbolic generator, or the model's synthesis agent "
    "(read-only exploration, propose_task; needs --model).",
)
@click.option("--no-task-verification", is_flag=True, help="Ablation: roll out every candidate.")
@click.option("--no-reflection", is_flag=True, help="Ablation: keep each stream's first plans.")
@click.option("--out", type=click.Path(file_okay=False), required=True, help="Dataset directory.")
@click.option("--json", "as_json", is_flag=True)
def run_cmd(**opts: Any) -> None:
    """Run (or resume) N plan streams for K iterations; the dataset is their union."""
    from veritask.agent._error_model import ErrorModel, parse_kinds
    from veritask.evolve import EvolveConfig, StreamSettings, Synthesizer, evolve
    from veritask.pipeline import RunConflict
    from veritask.synth import GENERATOR, generate

    try:
        errors = ErrorModel(opts["error_rate"], parse_kinds(opts["error_kinds"]))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--error-kinds") from None
    settings = StreamSettings(
        assistant=opts["agent"],
        user=opts["user"],
        seed=opts["seed"],
        task_verification=not opts["no_task_verification"],
        reflection=not opts["no_reflection"],
        errors=errors,
    )
    config = EvolveConfig(
        domains=tuple(d.strip() for d in opts["domains"].split(",") if d.strip()),
        plans=opts["plans"],
        iterations=opts["iterations"],
        candidates=opts["candidates"],
        batch=opts["batch"],
        settings=settings,
        model=opts["model"],
        synthesis=opts["synthesis"],
        orchestrator=opts["orchestrator"],
    )
    if opts["synthesis"] == "model" and not opts["model"]:
        raise click.UsageError("--synthesis model needs --model")
    model = provider_arg(opts["model"]) if opts["model"] else None
    orchestrator = _orchestrator(opts["orchestrator"])
    synthesizer = Synthesizer(f"symbolic:{GENERATOR}", generate)
    try:
        with model_calls(opts["model"]):
            summary = evolve(
                config, opts["out"], synthesizer, model=model, orchestrator=orchestrator
            )
    except (RunConflict, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    if opts["as_json"]:
        echo_json({"out": str(summary.out), "tasks": summary.tasks, "units": summary.units,
                   "resumed_units": summary.resumed_units, "totals": summary.report["totals"]})  # fmt: skip
        return
    click.echo(f"{summary.tasks} tasks in {summary.out} ({summary.units} units, "
               f"{summary.resumed_units} resumed)")  # fmt: skip


def _orchestrator(spec: str | None) -> Any:
    """The orchestrator's provider: ``scripted`` answers by the offline rules."""
    if spec is None:
        return None
    if spec == "scripted":
        from veritask.evolve import orchestrator_script
        from veritask.model import get_provider

        return get_provider("scripted", script=orchestrator_script)
    return provider_arg(spec)


@evolve_group.command("status")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True)
def status_cmd(directory: str, as_json: bool) -> None:
    """Units done and pending of an evolve run."""
    from veritask.evolve import status

    try:
        found = status(directory)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        echo_json(found)
        return
    state = "finished" if found["finished"] else f"pending: {', '.join(found['pending'])}"
    click.echo(f"{found['done']}/{found['units']} units done; {state}")


@evolve_group.command("report")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True)
def report_cmd(directory: str, as_json: bool) -> None:
    """Per stream and iteration: candidates, verified, TASK/TRAJECTORY, accepted, plan changes."""
    from veritask.evolve import read_report

    try:
        report = read_report(directory)
    except FileNotFoundError:
        raise click.ClickException(f"{directory} has no finished evolve run") from None
    if as_json:
        echo_json(report)
        return
    click.echo("stream   iter  cand  sel  ver  ok  TASK  TRAJ  acc  plan changes")
    for r in report["iterations"]:
        changed = ", ".join(sorted(r["plan_diff"])) or "-"
        click.echo(
            f"{r['stream']:<8} {r['iteration']:>4} {r['candidates']:>5} {r['selected']:>4} "
            f"{r['verified']:>4} {r['succeeded']:>3} {r['TASK']:>5} {r['TRAJECTORY']:>5} "
            f"{r['accepted']:>4}  {changed}"
        )
    flows = [r for r in report["iterations"] if "workflow" in r]
    if flows:
        click.echo("stream   iter  version  kept  figures / reason / changes")
    for r in flows:
        w = r["workflow"]
        f = w["figures"]
        click.echo(
            f"{r['stream']:<8} {r['iteration']:>4} {w['version']:>8}  {'yes' if w['kept'] else 'no':>4}"
            f"  yield {f['yield']:.3f} gap {f['difficulty_gap']:.3f}; {w['reason']}"
        )
        if w["diff"]:
            click.echo(f"{'':<28}changed: {', '.join(sorted(w['diff']))}")
    click.echo(json.dumps(report["totals"], sort_keys=True))


@click.command("curate")
@click.argument("trajectories", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", type=OUT_FILE, required=True, help="Task ids kept (text).")
@click.option("--json", "as_json", is_flag=True)
def curate_cmd(trajectories: str, out: str, as_json: bool) -> None:
    """Dynamic filter: keep tasks whose pass rate over their group is strictly between 0 and 1."""
    from veritask.export import read_trajectories
    from veritask.reward import filter_groups

    groups: dict[str, list[float]] = {}
    with reading(nonempty(trajectories, "trajectories (JSONL)")):
        for traj in read_trajectories(trajectories):
            groups.setdefault(traj.task_id, []).append(1.0 if traj.reward == 1.0 else 0.0)
    kept = filter_groups(groups).kept
    Path(out).write_text("".join(f"{task_id}\n" for task_id in kept), encoding="utf-8")
    if as_json:
        echo_json({"groups": len(groups), "kept": len(kept), "out": out})
        return
    click.echo(f"{len(kept)} of {len(groups)} tasks kept (0 < pass rate < 1) -> {out}")


def register(group: click.Group) -> None:
    """Add the ``evolve`` group and ``curate`` to the CLI."""
    group.add_command(evolve_group)
    group.add_command(curate_cmd)
