"""The ``veritask logic`` group: list, generate, report and measure logic task families.

Other modules add commands to the same group through the module-level ``logic`` object.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.table import Table

from veritask._cli import logic_gate_cmds, logic_solvability_cmds
from veritask._cli._common import OUT_FILE, echo_json, executor_options, executor_scope, nonempty
from veritask._cli.hf_cmds import export_logic_dir, hf_export_options
from veritask._cli.logic_gate_cmds import (
    families_dir_option,
    family_by_id,
    sandboxed,
    unsafe_no_sandbox_option,
)

if TYPE_CHECKING:
    from veritask.logic import Family

_console = Console()


@click.group("logic")
def logic() -> None:
    """Logic task families (SSLogic): list, generate datasets, report, measure."""


def _families(name: str, dirs: tuple[str, ...] = ()) -> list[Family]:
    """``all`` -> every family (built-in and file families) sorted by id; else the one named."""
    from veritask.logic import FamilyFileError, all_families

    if name != "all":
        return [family_by_id(name, dirs)]
    try:
        return list(all_families(dirs).values())
    except FamilyFileError as exc:
        raise click.ClickException(str(exc)) from None


@logic.command("list")
@families_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_cmd(families_dirs: tuple[str, ...], as_json: bool) -> None:
    """List the families: built-in ones and family files on the search path.

    One row per family: id, category, number of validators, version, title."""
    rows: list[dict[str, Any]] = [
        {
            "name": f.id,
            "category": f.category,
            "validators": len(f.validators),
            "version": f.version,
            "title": f.title,
        }
        for f in _families("all", families_dirs)
    ]
    if as_json:
        echo_json(rows)
        return
    table = Table("name", "category", "validators", "version", "title")
    for row in rows:
        table.add_row(
            *(str(row[key]) for key in ("name", "category", "validators", "version")), row["title"]
        )
    _console.print(table)


@logic.command("generate")
@click.argument("family")
@click.option(
    "--n",
    "n",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Instances per family.",
)
@click.option("--difficulty", type=click.IntRange(1, 10), help="Every instance at this level.")
@click.option(
    "--mix",
    is_flag=False,
    flag_value="default",
    help="Difficulty buckets with ratios, e.g. 1-3:0.3,4-7:0.5,8-10:0.2 or easy=0.2,hard=0.8;"
    " given alone, the default easy=0.3,medium=0.5,hard=0.2.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Base seed.")
@click.option(
    "--split",
    type=click.Choice(["train", "validation", "test"]),
    default="train",
    show_default=True,
    help="Split (splits never share a question).",
)
@click.option("--out", type=OUT_FILE, required=True, help="Output JSONL.")
@families_dir_option
@unsafe_no_sandbox_option
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="With --executor ray: Ray actors drafting families in parallel (same output bytes).",
)
@executor_options
def generate_cmd(
    family: str,
    n: int,
    difficulty: int | None,
    mix: str | None,
    seed: int,
    split: str,
    out: str,
    families_dirs: tuple[str, ...],
    unsafe_no_sandbox: bool,
    as_json: bool,
    workers: int,
    executor: str,
    ray_address: str | None,
) -> None:
    """Write N instances per family as JSONL.

    FAMILY is a family id or `all`. Duplicate questions are skipped; each line is one instance
    with its category. Give exactly one of --difficulty and --mix."""
    from veritask.logic import (
        DEFAULT_MIX_SPEC,
        FamilyCodeError,
        Mix,
        MixError,
        ProduceError,
        ProduceSettings,
        produce_file,
    )
    from veritask.pipeline import RunConflict

    if (difficulty is None) == (mix is None):
        raise click.UsageError("give exactly one of --difficulty and --mix")
    families = _families(family, families_dirs)
    try:
        parsed = None if mix is None else Mix.parse(DEFAULT_MIX_SPEC if mix == "default" else mix)
        settings = ProduceSettings(n, difficulty=difficulty, mix=parsed, seed=seed, split=split)
        with sandboxed(families, unsafe_no_sandbox), executor_scope(executor, workers, ray_address):
            summary = produce_file(out, families, settings, families_dirs)
    except (MixError, ProduceError, FamilyCodeError, RunConflict) as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        echo_json(
            {
                "path": out,
                "split": split,
                "seed": seed,
                "n": n,
                "difficulty": difficulty,
                "mix": parsed.spec if parsed else None,
                **summary,
            }
        )
        return
    click.echo(
        f"{summary['instances']} instances of {len(summary['families'])} families -> {out}"
        f" ({summary['duplicates_skipped']} duplicate questions and"
        f" {summary['other_split_skipped']} of other splits skipped)"
    )


def _print_report(data: dict[str, Any]) -> None:
    validation, degenerate = data["validation"], data["degenerate"]
    click.echo(
        f"{data['path']}: {data['instances']} instances, {len(data['families'])} families,"
        f" {data['duplicates']['questions']} duplicate questions"
    )
    click.echo(
        f"validation: {validation['checked']} re-generated, {validation['mismatches']}"
        f" mismatches, {validation['errors']} errors, {validation['unverified']} unverified"
    )
    click.echo(
        f"degenerate cells (one answer > {degenerate['max_share']:.0%} beyond noise):"
        f" {len(degenerate['cells'])}; suspect (above it, within noise):"
        f" {len(degenerate['suspect'])}; {degenerate['small_cells']} cells under"
        f" {degenerate['min_cell']} instances not judged"
    )
    text_only = data.get("text_only")
    if text_only is not None:
        click.echo(
            f"text-only: {text_only['checked']} questions solved from their text alone,"
            f" {text_only['undetermined']} undetermined, {text_only['disagreements']}"
            f" disagreements, {text_only['errors']} errors, {text_only['no_solver']} without"
            " a text solver"
        )
        for problem in text_only["problems"]:
            click.echo(f"  {problem}")
    for kind in ("cells", "suspect"):
        for cell in degenerate[kind]:
            click.echo(
                f"  {'degenerate' if kind == 'cells' else 'suspect'} {cell['family']}"
                f" d={cell['difficulty']}: {cell['answer']!r} {cell['count']}/{cell['instances']}"
                f" (95% interval from {cell['share_low']:.0%})"
            )


@logic.command("report")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--max-share",
    type=click.FloatRange(0, 1),
    default=0.3,
    show_default=True,
    help="Flag a (family, difficulty) cell whose top answer exceeds this share.",
)
@click.option(
    "--min-cell",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Cells with fewer instances are not judged.",
)
@families_dir_option
@unsafe_no_sandbox_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def report_cmd(
    path: str,
    max_share: float,
    min_cell: int,
    families_dirs: tuple[str, ...],
    unsafe_no_sandbox: bool,
    as_json: bool,
) -> None:
    """Check a generated JSONL file.

    Counts, duplicate questions, answer distributions with degenerate cells flagged, a
    re-generation of every line whose family is known, and the text-only check: each question
    solved from its text alone by its family's text solver must give the line's answer."""
    from veritask.logic import all_families, read_records, report
    from veritask.logic._textonly import text_only_records

    try:
        families = all_families(families_dirs)
        with sandboxed(families.values(), unsafe_no_sandbox):
            data = report(
                nonempty(path, "logic instances (JSONL)"),
                families=families,
                max_share=max_share,
                min_cell=min_cell,
            )
            data["text_only"] = text_only_records(read_records(path), families)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        echo_json(data)
        return
    _print_report(data)


@logic.command("export")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--format",
    type=click.Choice(["hf"]),
    required=True,
    expose_value=False,
    help="Export format (hf, the one there is, named like export's).",
)
@click.option(
    "--out",
    type=click.Path(),
    required=True,
    help="Output folder (Parquet splits and a dataset card).",
)
@hf_export_options
@families_dir_option
@unsafe_no_sandbox_option
def export_cmd(
    path: str,
    out: str,
    push: str | None,
    license_id: str,
    families_dirs: tuple[str, ...],
    unsafe_no_sandbox: bool,
) -> None:
    """Export a generated JSONL file in the Hugging Face Hub's format (hf): reasoning-gym
    entries (question, answer, metadata), one split per instance split, with a card; every
    line is re-generated first."""
    from veritask.logic import all_families

    try:
        families = all_families(families_dirs)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    with sandboxed(families.values(), unsafe_no_sandbox):
        export_logic_dir(nonempty(path, "logic instances (JSONL)"), out, push, license_id, families)


@logic.command("metrics")
@click.argument("family", default="all")
@families_dir_option
@click.option(
    "--time",
    "with_time",
    is_flag=True,
    help="Also measure each built-in family's validators: mean CPU ms a call at levels 1, 5, 10.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def metrics_cmd(
    family: str, families_dirs: tuple[str, ...], with_time: bool, as_json: bool
) -> None:
    """Complexity metrics of family code: size, cyclomatic and cognitive complexity, Halstead.

    FAMILY is a family id, `all` (the default) or a .py file (measured whole). With --time,
    built-in families also report their validators' measured solve time per level (family
    files are measured statically only: running them needs the sandbox)."""
    from veritask.logic import measure_family, measure_source
    from veritask.logic._halstead import solve_times

    if family.endswith(".py") and Path(family).is_file():
        path = Path(family)
        try:
            rows = [measure_source(path.read_text(encoding="utf-8"), name=path.name).to_json()]
        except SyntaxError as exc:
            raise click.ClickException(f"{path}: {exc}") from None
    else:
        rows = []
        for fam in _families(family, families_dirs):
            row = measure_family(fam).to_json()
            if with_time and not isinstance(getattr(fam, "source", None), str):
                row["solve_ms"] = solve_times(fam)
            rows.append(row)
    if as_json:
        echo_json(rows)
        return
    # short headers keep a family's name on one line at 100 columns; --json has full names
    table = Table(caption="cyclo/cogn: cyclomatic/cognitive complexity; vol/diff: Halstead")
    table.add_column("name", no_wrap=True)
    for header in ("loc", "cyclo", "cogn", "vol", "diff", "loops", "depth", "funcs"):
        table.add_column(header, justify="right")
    table.add_column("patterns")
    if with_time:
        table.add_column("solve ms L1/L5/L10")
    for row in rows:
        solve = row.get("solve_ms")
        extra = ["/".join(f"{v:g}" for v in solve.values()) if solve else "-"] if with_time else []
        table.add_row(
            row["name"],
            str(row["loc"]),
            str(row["cyclomatic"]),
            str(row["cognitive"]),
            f"{row['halstead']['volume']:.0f}",
            f"{row['halstead']['difficulty']:.1f}",
            str(row["loops"]),
            str(row["max_loop_depth"]),
            str(row["functions"]),
            ", ".join(row["patterns"]),
            *extra,
        )
    _console.print(table)


@logic.command("sandbox")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def sandbox_cmd(as_json: bool) -> None:
    """Say whether this kernel can run family files in the OS sandbox.

    Reports the Landlock ABI, seccomp and the active security modules. Exits with status 1
    when the sandbox is unavailable (family files are then refused without
    --unsafe-no-sandbox)."""
    from veritask.logic import sandbox_support

    support = sandbox_support()
    if as_json:
        echo_json(support.to_json())
    else:
        lsm = ",".join(support.lsm) if support.lsm is not None else "unknown (no securityfs)"
        click.echo(
            f"OS sandbox: {'available' if support.available else 'UNAVAILABLE'}\n"
            f"  Landlock ABI {support.landlock_abi}, seccomp {'yes' if support.seccomp else 'no'},"
            f" security modules: {lsm}"
        )
        for problem in support.problems:
            click.echo(f"  - {problem}")
    if not support.available:
        raise SystemExit(1)


logic_gate_cmds.register(logic)
logic_solvability_cmds.register(logic)


def register(group: click.Group) -> None:
    """Add the ``logic`` group to the CLI."""
    group.add_command(logic)
