"""``veritask view``: a static site from each kind of path; clean errors for others."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from veritask._cli.main import cli


def test_out_writes_a_site_for_each_kind(
    dataset: Path,
    trajectories: Path,
    logic_file: Path,
    gate_records: Path,
    evolve_run: Path,
    blueprint_run: Path,
    tmp_path: Path,
) -> None:
    for name, args in {
        "ds": [str(dataset)],
        "traj": [str(trajectories), "--dataset", str(dataset)],
        "logic": [str(logic_file), "--gates", str(gate_records)],
        "evolve": [str(evolve_run)],
        "blueprint": [str(blueprint_run)],
    }.items():
        out = tmp_path / name
        result = CliRunner().invoke(cli, ["view", *args, "--out", str(out)])
        assert result.exit_code == 0, result.output
        assert (out / "index.html").exists() and (out / "static" / "filter.js").exists()


def test_paths_it_cannot_show_are_clean_errors(dataset: Path, tmp_path: Path) -> None:
    other = tmp_path / "notes.jsonl"
    other.write_text('{"hello": 1}\n')
    result = CliRunner().invoke(cli, ["view", str(other), "--out", str(tmp_path / "x")])
    assert result.exit_code == 1 and "neither trajectories nor logic" in result.output
    result = CliRunner().invoke(cli, ["view", str(dataset / "states"), "--out", str(tmp_path)])
    assert result.exit_code == 1 and "manifest.jsonl" in result.output
    result = CliRunner().invoke(cli, ["view", str(dataset), "--gates", str(tmp_path)])
    assert result.exit_code == 1 and "--gates goes with a logic file" in result.output
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "\n")  # nested past the JSON parser's depth
    result = CliRunner().invoke(cli, ["view", str(deep), "--out", str(tmp_path / "y")])
    assert result.exit_code == 1 and "the first line is not JSON" in result.output
