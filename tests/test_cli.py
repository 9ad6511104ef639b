"""The CLI contract: command names and --json keys."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

from click.testing import CliRunner

from veritask._cli.main import cli

README = Path(__file__).parents[1] / "README.md"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_domains_json() -> None:
    code, out = run("domains", "--json")
    assert code == 0
    rows = json.loads(out)
    mock = next(r for r in rows if r["name"] == "mock")
    assert set(mock) == {"name", "tables", "tools", "rules"}
    assert mock == {"name": "mock", "tables": 3, "tools": 5, "rules": 6}
    assert {r["name"] for r in rows} >= {"mock", "travel"}


def test_schema_is_sql_sqlite_accepts() -> None:
    code, out = run("schema", "mock")
    assert code == 0 and "CREATE TRIGGER" in out
    sqlite3.connect(":memory:").executescript(out)


def test_policy_is_markdown() -> None:
    code, out = run("policy", "mock")
    assert code == 0 and out.startswith("# ") and "loans" in out


def test_tools_json() -> None:
    code, out = run("tools", "mock", "--json")
    tools = json.loads(out)
    assert code == 0
    assert [t["function"]["name"] for t in tools] == [
        "query_members",
        "query_books",
        "query_loans",
        "insert_loans",
        "update_loans",
    ]


def test_call_ok_save_and_state(tmp_path: Path) -> None:
    state = tmp_path / "s.sqlite"
    code, out = run(
        "call",
        "mock",
        "insert_loans",
        '{"member_id": "m_ana", "book_id": "b_dune", "due_step": 4}',
        "--save",
        str(state),
        "--json",
    )
    payload = json.loads(out)
    assert code == 0 and set(payload) == {"ok", "result", "error", "state_changed"}
    assert payload["ok"] and payload["state_changed"] and payload["error"] is None
    code, out = run(
        "call", "mock", "query_loans", '{"member_id": "m_ana"}', "--state", str(state), "--json"
    )
    assert json.loads(out)["result"]["total"] == 1


def test_call_error_is_structured() -> None:
    code, out = run(
        "call",
        "mock",
        "insert_loans",
        '{"member_id": "m_lapsed", "book_id": "b_dune", "due_step": 4}',
        "--json",
    )
    payload = json.loads(out)
    assert code == 1
    assert payload["ok"] is False and payload["state_changed"] is False
    assert payload["error"] == {
        "code": "PREREQ_FAIL",
        "message": "Member does not exist or is not active.",
        "violated_rule": "MEMBER_ACTIVE",
        "hint": "Check the member id; lapsed members cannot borrow.",
    }


def test_diff_json(tmp_path: Path) -> None:
    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    run("seed", "mock", str(a))
    run(
        "call",
        "mock",
        "update_loans",
        '{"id": 1, "status": "RETURNED", "return_step": 5, "late_fee": 0}',
        "--state",
        str(a),
        "--save",
        str(b),
        "--json",
    )
    code, out = run("diff", str(a), str(b), "--json")
    payload = json.loads(out)
    assert code == 0 and set(payload) == {"distance", "tables"}
    assert payload["distance"] == 6
    assert set(payload["tables"]["loans"]) == {"added", "removed"}
    code, out = run("diff", str(a), str(b), "--domain", "mock", "--json")
    assert json.loads(out) == payload


def test_bad_spec_is_a_clean_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: x\nwiki: {title: t, persona: p}\ntables:\n  - {name: t, tier: nope, access: read-only, columns: [{name: id, type: TEXT}]}\n"
    )
    result = CliRunner().invoke(cli, ["schema", str(bad)])
    assert result.exit_code != 0
    assert f"{bad}:4: tables[0].tier" in result.output


def test_every_command_is_documented() -> None:
    text = README.read_text()
    documented = set(re.findall(r"veritask ([a-z][a-z0-9-]+)", text))
    missing = set(cli.commands) - documented
    assert not missing, f"README does not document: {sorted(missing)}"


def test_generate_check_report_export(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    code, text = run(
        "generate", "--domain", "mock", "--n", "12", "--seed", "5", "--out", str(out), "--json"
    )
    assert code == 0
    summary = json.loads(text)
    assert summary["tasks"] == 12 and set(summary) == {
        "out",
        "tasks",
        "units",
        "resumed_units",
        "discarded",
    }
    code, text = run("check", str(out), "--json")
    check = json.loads(text)
    assert code == 0 and set(check) == {
        "tasks",
        "certified",
        "spoiler_free",
        "grounded",
        "duplicates",
        "failures",
        "lint",
    }
    assert set(check["lint"]) == {"counts", "findings"}
    assert check["certified"] == check["spoiler_free"] == check["grounded"] == 12
    code, text = run("report", str(out), "--json")
    report = json.loads(text)
    assert set(report) == {
        "tasks",
        "difficulty",
        "tags",
        "boundary_density",
        "rule_coverage",
        "tool_coverage",
        "mean_witness_calls",
        "refusal_share",
        "repeated_texts",
        "repeats",
        "cast",
        "uncovered",
        "archetypes",
        "boundaries",
    }
    code, text = run("export", str(out), "--format", "tau2", "--out", str(tmp_path / "t.json"))
    assert code == 0 and len(json.loads((tmp_path / "t.json").read_text())) == 12
    code, text = run(
        "generate", "--domain", "mock", "--n", "12", "--seed", "5", "--out", str(out), "--json"
    )
    assert json.loads(text)["resumed_units"] == json.loads(text)["units"]


def test_check_of_a_broken_dataset_fails_cleanly(tmp_path: Path) -> None:
    (tmp_path / "manifest.jsonl").write_text("{not json\n")
    result = CliRunner().invoke(cli, ["check", str(tmp_path), "--json"])
    assert result.exit_code != 0 and "manifest.jsonl:1" in result.output


def test_eval_rollout_export_sft(tmp_path: Path) -> None:
    data = tmp_path / "ds"
    run("generate", "--domain", "mock", "--n", "10", "--seed", "2", "--out", str(data), "--json")
    code, text = run("eval", str(data), "--agent", "oracle", "--trials", "2", "--json")
    summary = json.loads(text)
    assert code == 0 and set(summary) == {
        *("tasks", "trials", "pass^1", "pass^2", "per_task"),
        *("episodes", "scored", "errors", "first_error", "not_run", "ok"),
    }
    assert (summary["scored"], summary["errors"], summary["first_error"]) == (20, 0, None)
    assert summary["pass^1"] == summary["pass^2"] == 1.0
    assert set(summary["per_task"][0]) >= {"id", "successes", "trials", "rewards"}
    traj = tmp_path / "t.jsonl"
    code, text = run("rollout", str(data), "--agent", "noop", "--out", str(traj))
    assert code == 0 and len(traj.read_text().splitlines()) == 10
    code, text = run(
        "export-sft",
        str(traj),
        "--format",
        "openai",
        "--verified-only",
        "--out",
        str(tmp_path / "sft.jsonl"),
    )
    refusals = sum(
        1
        for line in (data / "manifest.jsonl").read_text().splitlines()
        if json.loads(line)["refusal"]
    )
    assert code == 0 and len((tmp_path / "sft.jsonl").read_text().splitlines()) == refusals
