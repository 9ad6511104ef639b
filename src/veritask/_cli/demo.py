"""``make demo``: certified task synthesis on the built-in travel domain, offline.

It generates a small dataset (resumable: rerunning finishes or reuses it), checks every package by
replaying its witness, reports the dataset's shape, and prints one task as the user simulator and
the grader would see it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from veritask.domains import load_domain
from veritask.synth import generate
from veritask.task import check_dataset, load_dataset, report_dataset

console = Console()
OUT = Path("out/demo-travel")
N = 200


def _summary_table(check: dict[str, object], report: dict[str, object]) -> Table:
    table = Table("measure", "value", title="travel: check + report")
    for key in ("tasks", "certified", "grounded", "spoiler_free", "duplicates"):
        table.add_row(key, str(check[key]))
    for key in (
        "difficulty",
        "boundary_density",
        "rule_coverage",
        "tool_coverage",
        "mean_witness_calls",
        "refusal_share",
    ):
        table.add_row(key, json.dumps(report[key]))
    table.add_row("tags", json.dumps(report["tags"]))
    return table


def script_path() -> str:
    """The ``veritask`` script of the running interpreter, as a new shell in this directory runs it.

    ``make demo`` runs without activating the virtualenv, so a bare ``veritask`` may not be on
    the PATH of the shell that reads the hint; the script beside ``sys.executable`` is. The path
    is relative to the working directory when it lies under it (``.venv/bin/veritask``).
    """
    script = Path(sys.executable).parent / "veritask"
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)


def next_hint() -> str:
    """The commands the demo suggests next, runnable as printed from the working directory."""
    cmd = script_path()
    return (
        f"next: {cmd} check {OUT}; {cmd} report {OUT}; "
        f"{cmd} export {OUT} --format tau2 --out tasks.json"
    )


def main() -> None:
    """Generate, check and report a travel dataset, then show one task."""
    spec = load_domain("travel")
    console.rule(
        "[bold]veritask demo: certified tasks from the corporate travel domain (LOGIGEN Appendix A)"
    )
    console.print(
        f"domain [bold]{spec.name}[/bold]: {len(spec.tables)} tables, {len(spec.rules)} rules, {len(spec.effects)} effects"
    )
    summary = generate("travel", N, 0, OUT)
    console.print(
        f"generated {summary.tasks} packages into {OUT} ({summary.resumed_units}/{summary.units} units reused)"
    )
    check = check_dataset(OUT).to_json()
    report = report_dataset(OUT)
    console.print(_summary_table(check, report))
    packages = load_dataset(OUT)
    pkg = next((p for p in packages if p.difficulty == "L3" and "waterfall" in p.tags), packages[0])
    console.print(
        Panel(pkg.task_description, title=f"{pkg.id}: {pkg.difficulty} {', '.join(pkg.tags)}")
    )
    lines = []
    for call in pkg.witness:
        verdict = (
            "ok"
            if call.ok
            else f"REJECTED {call.error['code'] if call.error else ''} ({call.error['violated_rule'] if call.error else ''})"
        )
        lines.append(f"{call.tool}({json.dumps(call.args)}) -> {verdict}")
    console.print(Panel("\n".join(lines), title="witness episode (replayed by `veritask check`)"))
    console.print(next_hint(), soft_wrap=True)
    if check["certified"] != check["tasks"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
