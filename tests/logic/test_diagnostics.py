"""Diagnostics aggregated across evolve runs (``logic diagnostics``)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.logic import EvolutionResult, RoundRecord
from veritask.logic._diagnostics import aggregate_runs, problem_kind


def _run(seed: str, outcomes: list[tuple[str, str, list[str]]], cost: float) -> dict:
    rounds = [
        RoundRecord(round=i + 1, stage=stage, outcome=outcome, problems=problems)  # type: ignore[arg-type]
        for i, (stage, outcome, problems) in enumerate(outcomes)
    ]
    result = EvolutionResult(seed_family=seed)
    result.rounds = rounds
    result.accepted = outcomes[-1][1] == "accepted"
    result.costs = {"total": {"turns": len(rounds), "cost": cost}}
    return result.to_json()


RUNS = [
    _run(
        "arithmetic_chain",
        [
            ("propose", "rejected", ["d=3 #4: validators disagree", "1200 us per instance"]),
            ("refine", "rejected", ["d=7 #1: validators disagree"]),
            ("refine", "accepted", []),
        ],
        0.5,
    ),
    _run("weekday_shift", [("propose", "accepted", [])], 0.25),
    _run("weekday_shift", [("propose", "error", ["d=1 #0: validators disagree"])], 0.0),
]


def test_problem_kind_drops_the_instance_and_numbers() -> None:
    assert problem_kind("d=3 #4: answer 17 is 40% of d=2") == "answer N is N% of d=N"


def test_aggregate_runs_counts_acceptance_stages_problems_and_cost() -> None:
    data = aggregate_runs(RUNS)
    assert (data["runs"], data["accepted"], data["rounds"]) == (3, 2, 5)
    assert data["acceptance_rate"] == 0.6667
    assert data["rounds_to_accept"] == {"mean": 2.0, "median": 2.0}
    assert data["by_stage"] == {
        "propose": {"accepted": 1, "error": 1, "rejected": 1},
        "refine": {"accepted": 1, "rejected": 1},
    }
    assert data["by_seed"]["weekday_shift"] == {"runs": 2, "accepted": 1}
    assert data["problems"][0] == {"kind": "validators disagree", "rounds": 3, "runs": 2}
    assert data["problems"][1]["kind"] == "N us per instance"
    assert data["cost"] == 0.75


def test_diagnostics_command_reads_run_directories(tmp_path: Path) -> None:
    for i, run in enumerate(RUNS):
        (tmp_path / f"run{i}" / "seed").mkdir(parents=True)
        (tmp_path / f"run{i}" / "seed" / "result.json").write_text(json.dumps(run))
    result = CliRunner().invoke(cli, ["logic", "diagnostics", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["files"] == 3 and data["accepted"] == 2
    text = CliRunner().invoke(cli, ["logic", "diagnostics", str(tmp_path)]).output
    assert "3 runs, 2 accepted (66.7%)" in text and "validators disagree" in text
    (tmp_path / "bad.json").write_text("{}")
    bad = CliRunner().invoke(cli, ["logic", "diagnostics", str(tmp_path / "bad.json")])
    assert bad.exit_code != 0 and "not an evolve result" in bad.output
