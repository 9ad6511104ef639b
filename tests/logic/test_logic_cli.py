"""The ``veritask logic`` commands: --json keys, option rules, files written."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.logic import builtin_families


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["logic", *args])
    return result.exit_code, result.output


def test_list_json() -> None:
    code, out = run("list", "--json")
    assert code == 0
    rows = json.loads(out)
    assert [r["name"] for r in rows] == sorted(builtin_families())
    assert all(set(r) == {"name", "category", "validators", "version", "title"} for r in rows)
    chain = next(r for r in rows if r["name"] == "arithmetic_chain")
    assert chain["category"] == "symbolic" and chain["validators"] == 2
    code, out = run("list")
    assert code == 0 and "arithmetic_chain" in out


def test_generate_json_and_default_mix(tmp_path: Path) -> None:
    out = tmp_path / "ds.jsonl"
    code, text = run(
        "generate",
        "weekday_shift",
        "--n",
        "20",
        "--mix",
        "--seed",
        "3",
        "--out",
        str(out),
        "--json",
    )
    assert code == 0, text
    summary = json.loads(text)
    assert set(summary) == {
        "path",
        "split",
        "seed",
        "n",
        "difficulty",
        "mix",
        "instances",
        "duplicates_skipped",
        "other_split_skipped",
        "families",
    }
    assert summary["mix"] == "easy:0.3,medium:0.5,hard:0.2" and summary["difficulty"] is None
    assert summary["instances"] == 20 and summary["duplicates_skipped"] == 0
    fam = summary["families"]["weekday_shift"]
    assert set(fam) == {"instances", "duplicates_skipped", "other_split_skipped", "difficulties"}
    assert sum(fam["difficulties"].values()) == 20
    lines = out.read_text().splitlines()
    assert len(lines) == 20 and json.loads(lines[0])["category"] == "temporal"


def test_generate_is_byte_identical_and_mix_spec_is_parsed(tmp_path: Path) -> None:
    def gen(name: str, *extra: str) -> bytes:
        path = tmp_path / name
        code, text = run("generate", "arithmetic_chain", "--n", "10", "--out", str(path), *extra)
        assert code == 0, text
        return path.read_bytes()

    default = gen("a.jsonl", "--mix")
    assert gen("b.jsonl", "--mix", "1-3:0.3,4-7:0.5,8-10:0.2") == default
    assert gen("c.jsonl", "--mix", "--seed", "1") != default
    fixed = gen("d.jsonl", "--difficulty", "9", "--split", "test")
    assert {json.loads(line)["difficulty"] for line in fixed.splitlines()} == {9}


def test_generate_option_errors(tmp_path: Path) -> None:
    out = str(tmp_path / "x.jsonl")
    code, text = run("generate", "weekday_shift", "--n", "5", "--out", out)
    assert code == 2 and "exactly one of --difficulty and --mix" in text
    code, text = run("generate", "weekday_shift", "--difficulty", "2", "--mix", "--out", out)
    assert code == 2
    code, text = run("generate", "weekday_shift", "--mix", "easy=0.5", "--out", out)
    assert code == 1 and "mix ratios sum to 0.5, not 1" in text
    code, text = run("generate", "nope", "--difficulty", "2", "--out", out)
    assert code == 1 and "unknown family 'nope'" in text
    assert not Path(out).exists()


def test_report_json(tmp_path: Path) -> None:
    out = tmp_path / "ds.jsonl"
    assert run("generate", "all", "--n", "3", "--difficulty", "5", "--out", str(out))[0] == 0
    code, text = run("report", str(out), "--json")
    assert code == 0, text
    data = json.loads(text)
    assert set(data) == {
        "path",
        "instances",
        "difficulties",
        "splits",
        "families",
        "duplicates",
        "degenerate",
        "validation",
        "text_only",
    }
    assert data["instances"] == 3 * len(builtin_families())
    text_only = data["text_only"]
    assert text_only["checked"] == data["instances"] and text_only["no_solver"] == 0
    assert text_only["undetermined"] == text_only["disagreements"] == text_only["errors"] == 0
    assert data["validation"]["checked"] == data["instances"]
    assert data["validation"]["mismatches"] == 0
    assert set(data["degenerate"]) == {"max_share", "min_cell", "small_cells", "cells", "suspect"}
    code, text = run("report", str(out), "--min-cell", "2", "--max-share", "0.5")
    assert code == 0 and "re-generated" in text and "text-only:" in text
    (tmp_path / "bad.jsonl").write_text("{}\n")
    code, text = run("report", str(tmp_path / "bad.jsonl"), "--json")
    assert code == 1 and "not an instance record" in text


def test_metrics_json(tmp_path: Path) -> None:
    code, text = run("metrics", "grid_path_count", "--json")
    assert code == 0, text
    rows = json.loads(text)
    assert len(rows) == 1
    assert set(rows[0]) == {
        "name",
        "scope",
        "loc",
        "cyclomatic",
        "cyclomatic_by_function",
        "loops",
        "max_loop_depth",
        "functions",
        "patterns",
        "cognitive",
        "cognitive_by_function",
        "halstead",
    }
    assert rows[0]["name"] == "grid_path_count" and "dynamic_programming" in rows[0]["patterns"]
    code, text = run("metrics", "--json")
    assert code == 0 and len(json.loads(text)) == len(builtin_families())
    source = tmp_path / "evolved.py"
    source.write_text("def f(xs):\n    return sorted(xs)\n")
    code, text = run("metrics", str(source), "--json")
    assert code == 0
    row = json.loads(text)[0]
    assert row.pop("halstead")["volume"] == 33.0  # 11 tokens, vocabulary 8
    assert row | {"cyclomatic_by_function": None} == {
        "name": "evolved.py",
        "scope": "module",
        "loc": 2,
        "cyclomatic": 1,
        "cyclomatic_by_function": None,
        "loops": 0,
        "max_loop_depth": 0,
        "functions": 1,
        "patterns": ["sorting"],
        "cognitive": 0,
        "cognitive_by_function": {"f": 0},
    }


def test_metrics_time_measures_builtin_validators() -> None:
    code, text = run("metrics", "row_ordering", "--time", "--json")
    assert code == 0, text
    solve = json.loads(text)[0]["solve_ms"]
    assert set(solve) == {"1", "5", "10"} and all(v > 0 for v in solve.values())


def test_generate_refuses_other_settings_into_the_same_file(tmp_path: Path) -> None:
    out = str(tmp_path / "a.jsonl")
    assert run("generate", "all", "--n", "3", "--difficulty", "5", "--out", out)[0] == 0
    first = Path(out).read_bytes()
    assert run("generate", "all", "--n", "3", "--difficulty", "5", "--out", out)[0] == 0
    assert Path(out).read_bytes() == first
    code, text = run(
        "generate", "all", "--n", "3", "--difficulty", "5", "--seed", "2", "--out", out
    )
    assert code == 1 and "config differs in seed: was 0, now 2" in text


def test_an_interrupted_family_run_resumes_to_the_same_bytes(tmp_path: Path) -> None:
    from veritask.logic import FamilyStage, ProduceSettings, all_families, produce_file
    from veritask.pipeline import pending

    families = list(all_families().values())[:4]
    settings = ProduceSettings(6, difficulty=3, seed=1)
    produce_file(tmp_path / "whole.jsonl", families, settings)
    out = tmp_path / "killed.jsonl"
    stage = FamilyStage(families, settings, out.with_name(out.name + ".parts"))
    for unit in pending(stage)[:2]:
        stage.run(unit)
    resumed = FamilyStage(families, settings, stage.parts)
    assert [u.params[0] for u in pending(resumed)] == [2, 3]
    summary = produce_file(out, families, settings)
    assert summary["instances"] == 24
    assert out.read_bytes() == (tmp_path / "whole.jsonl").read_bytes()
