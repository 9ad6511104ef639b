"""Certified synthesis end to end: replay, do-nothing distance, determinism, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment, Snapshot
from veritask.pipeline import InProcessExecutor, RunConflict, pending
from veritask.synth import generate, replay
from veritask.synth._generate import MANIFEST
from veritask.synth._unit import SceneStage
from veritask.task import DatasetDir, check_dataset, load_dataset, report_dataset

DOMAINS = ["mock", "travel", "retail", "clinic", "registrar", "gym"]


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("synth")
    out = {}
    for domain in DOMAINS:
        out[domain] = root / domain
        generate(domain, 40, 3, out[domain])
    return out


@pytest.mark.parametrize("domain", DOMAINS)
def test_check_certifies_every_package(datasets: dict[str, Path], domain: str) -> None:
    report = check_dataset(datasets[domain]).to_json()
    assert report["tasks"] == 40
    assert report["certified"] == 40 and report["spoiler_free"] == 40
    assert report["duplicates"] == 0 and report["failures"] == []


@pytest.mark.parametrize("domain", DOMAINS)
def test_witness_replays_and_noop_is_not_a_solution(datasets: dict[str, Path], domain: str) -> None:
    spec = load_domain(domain)
    compiled = CompiledDomain.from_spec(spec)
    env = Environment(compiled)
    ds = DatasetDir(datasets[domain])
    for pkg in load_dataset(ds.root):
        origin, target = (
            ds.read_state(pkg.origin),
            Snapshot(ds.read_state(pkg.target), compiled.layout),
        )
        assert replay(env, origin, pkg.witness), pkg.id
        assert env.distance(target) == 0, pkg.id
        env.restore(origin)  # the do-nothing episode
        if pkg.refusal:
            assert pkg.target == pkg.origin and env.distance(target) == 0
        else:
            assert env.distance(target) > 0, f"{pkg.id}: doing nothing already solves it"
        assert pkg.spec_hash == spec.spec_hash()


@pytest.mark.parametrize("domain", DOMAINS)
def test_packages_are_consistent(datasets: dict[str, Path], domain: str) -> None:
    spec = load_domain(domain)
    tool_names = {f"{k}_{t.name}" for t in spec.tables for k in ("query", "insert", "update")}
    for pkg in load_dataset(datasets[domain]):
        rejected = [c.error["violated_rule"] for c in pkg.witness if not c.ok and c.error]
        assert pkg.boundary_hits == len(rejected)
        assert pkg.rules_exercised == sorted(set(rejected))
        assert pkg.task_description == pkg.task.render()
        assert not any(name in pkg.task_description for name in tool_names)
        assert pkg.difficulty in ("L1", "L2", "L3") and pkg.tags
        assert ("refusal" in pkg.tags) == pkg.refusal


def test_report_keys(datasets: dict[str, Path]) -> None:
    report = report_dataset(datasets["travel"])
    assert set(report) == {
        "tasks",
        "difficulty",
        "tags",
        "boundary_density",
        "rule_coverage",
        "tool_coverage",
        "mean_witness_calls",
        "refusal_share",
        "repeats",
        "repeated_texts",
        "cast",
        "uncovered",
        "archetypes",
        "boundaries",
    }
    assert set(report["difficulty"]) == {"L1", "L2", "L3"}
    assert 0 < report["boundary_density"] <= 1


def test_same_seed_same_bytes(tmp_path: Path, datasets: dict[str, Path]) -> None:
    generate("travel", 40, 3, tmp_path / "again")
    assert (tmp_path / "again" / "manifest.jsonl").read_bytes() == (
        datasets["travel"] / "manifest.jsonl"
    ).read_bytes()
    generate("travel", 16, 4, tmp_path / "other")
    first = (tmp_path / "other" / "manifest.jsonl").read_text().splitlines()[0]
    assert first != (datasets["travel"] / "manifest.jsonl").read_text().splitlines()[0]


def test_resume_skips_finished_units(tmp_path: Path, datasets: dict[str, Path]) -> None:
    out = tmp_path / "resume"
    generate("travel", 40, 3, out)
    ds = DatasetDir(out)
    ds.part_path(2).unlink()
    ds.manifest.unlink()
    summary = generate("travel", 40, 3, out)
    assert summary.resumed_units == summary.units - 1
    assert ds.manifest.read_bytes() == (datasets["travel"] / "manifest.jsonl").read_bytes()


def test_kill_9_then_rerun_gives_the_same_manifest(
    tmp_path: Path, datasets: dict[str, Path]
) -> None:
    out = tmp_path / "killed"
    code = f"from veritask.synth import generate; generate('travel', 40, 3, {str(out)!r})"
    proc = subprocess.Popen([sys.executable, "-c", code])
    parts = out / "parts"
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        if parts.exists() and any(p.suffix == ".jsonl" for p in parts.iterdir()):
            os.kill(proc.pid, signal.SIGKILL)
            break
    proc.wait()
    generate("travel", 40, 3, out)
    assert (out / "manifest.jsonl").read_bytes() == (
        datasets["travel"] / "manifest.jsonl"
    ).read_bytes()


def test_a_different_run_in_the_same_directory_is_refused(tmp_path: Path) -> None:
    generate("mock", 8, 1, tmp_path / "d")
    with pytest.raises(ValueError, match="different run"):
        generate("mock", 8, 2, tmp_path / "d")


@pytest.mark.parametrize(
    ("args", "field"),
    [(("mock", 16, 1), "n"), (("mock", 8, 2), "seed"), (("travel", 8, 1), "domain")],
)
def test_a_rerun_with_another_config_names_what_differs(
    tmp_path: Path, args: tuple[str, int, int], field: str
) -> None:
    generate("mock", 8, 1, tmp_path / "d")
    with pytest.raises(RunConflict) as caught:
        generate(*args, tmp_path / "d")
    assert field in caught.value.fields and f"{field}: was" in str(caught.value)
    assert "different run" in str(caught.value)


def test_an_interrupted_stage_resumes_to_the_same_manifest(tmp_path: Path) -> None:
    """A run that stops after two units (a kill without the sleep) and a rerun give the bytes of
    an uninterrupted run, and the rerun only runs the units that were missing."""
    generate("mock", 40, 5, tmp_path / "whole")
    out = tmp_path / "killed"

    class Killed(RuntimeError):
        pass

    stage = SceneStage("mock", 5, 40, out)
    seen: list[int] = []
    with pytest.raises(Killed):
        for result in InProcessExecutor().map(stage, pending(stage)):
            seen.append(result.unit)
            if len(seen) == 2:
                raise Killed
    summary = generate("mock", 40, 5, out)
    assert summary.resumed_units == 2 and summary.units == 4
    assert (out / "manifest.jsonl").read_bytes() == (tmp_path / "whole/manifest.jsonl").read_bytes()


def test_a_directory_from_before_run_manifests_is_adopted_or_refused(tmp_path: Path) -> None:
    out = tmp_path / "old"
    generate("mock", 8, 1, out)
    (out / MANIFEST).unlink()
    assert generate("mock", 8, 1, out).resumed_units == 1
    (out / MANIFEST).unlink()
    with pytest.raises(RunConflict, match="seed: was 1, now 2"):
        generate("mock", 8, 2, out)


def test_a_spec_given_by_path_is_named_by_its_name_and_stays_checkable(tmp_path: Path) -> None:
    """Ids, ``domain`` fields and run.json use the spec's ``name``; the dataset keeps a copy of
    the spec, so check, report and eval find the domain after the spec file is gone."""
    text = (Path(__file__).parents[2] / "src/veritask/domains/mock/spec.yaml").read_text()
    spec_file = tmp_path / "somewhere" / "library.yaml"
    spec_file.parent.mkdir()
    spec_file.write_text(text.replace("name: mock\n", "name: minilib\n", 1))
    out = tmp_path / "ds"
    generate(str(spec_file), 12, 1, out)
    packages = load_dataset(out)
    assert packages and all(p.domain == "minilib" for p in packages)
    assert all(p.id.startswith("minilib-s1-") for p in packages)
    run = DatasetDir(out).read_run()
    assert run is not None and (run["domain"], run["spec"]) == ("minilib", "spec.yaml")
    assert (out / "spec.yaml").read_text() == spec_file.read_text()
    spec_file.unlink()
    assert check_dataset(out).ok
    assert report_dataset(out)["tasks"] == len(packages)
    result = CliRunner().invoke(cli, ["eval", str(out), "--agent", "oracle", "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["pass^1"] == 1.0
    # the same spec under another path resumes the same run
    again = tmp_path / "elsewhere.yaml"
    again.write_text((out / "spec.yaml").read_text())
    assert generate(str(again), 12, 1, out).resumed_units == 2
