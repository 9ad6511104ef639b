"""Schema-perturbation augmentation: consistent renaming, checker-clean variants, determinism."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.export import to_openai_row
from veritask.pipeline import run_batch
from veritask.rollout import RoleFactory, TaskSource
from veritask.simulate import (
    NOISE_KEY,
    SchemaVariant,
    catalog_from_json,
    check_turns,
    perturb_trajectory,
    read_row,
)
from veritask.simulate._perturb import variant_rng
from veritask.synth import generate
from veritask.task import Trajectory


@pytest.fixture(scope="module")
def trajectories(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("perturb")
    generate("travel", 6, 4, root / "travel")
    trajs = asyncio.run(run_batch(TaskSource.load(root / "travel"), RoleFactory(agent="oracle")))
    path = root / "t.jsonl"
    path.write_text("".join(t.model_dump_json() + "\n" for t in trajs))
    return path


def _export(src: Path, out: Path, seed: int) -> bytes:
    args = ["export-sft", str(src), "--format", "openai", "--out", str(out)]
    result = CliRunner().invoke(cli, [*args, "--perturb-schemas", "3", "--perturb-seed", str(seed)])
    assert result.exit_code == 0, result.output
    return out.read_bytes()


def test_the_same_seed_gives_the_same_bytes(trajectories: Path, tmp_path: Path) -> None:
    first = _export(trajectories, tmp_path / "a.jsonl", 7)
    assert first == _export(trajectories, tmp_path / "b.jsonl", 7)
    assert first != _export(trajectories, tmp_path / "c.jsonl", 8)
    originals = trajectories.read_text().count("\n")
    assert first.count(b"\n") == originals * 4


def test_every_variant_passes_the_checker_against_its_own_catalogue(
    trajectories: Path, tmp_path: Path
) -> None:
    rows = [json.loads(x) for x in _export(trajectories, tmp_path / "v.jsonl", 3).splitlines()]
    calls = 0
    for row in rows:
        result = check_turns(read_row(row).turns, catalog_from_json(row["tools"]))
        assert result.status == "clean", result.issues
        calls += sum(len(m.get("tool_calls") or []) for m in row["messages"])
    assert calls > 0


def _names(traj: Trajectory) -> set[str]:
    return {t["function"]["name"] for t in traj.tools}


def test_renaming_is_consistent_between_schemas_calls_and_observations(
    trajectories: Path,
) -> None:
    traj = next(
        Trajectory.model_validate_json(x) for x in trajectories.open() if '"tool_calls"' in x
    )
    variant = perturb_trajectory(traj, 5, 1)
    change = SchemaVariant(traj.tools, variant_rng(traj, 5, 1))
    assert _names(variant) == {change.tools[n] for n in _names(traj)}
    assert not _names(variant) & _names(traj)
    order = [t["function"]["name"] for t in variant.tools]
    assert order != [change.tools[t["function"]["name"]] for t in traj.tools]
    for old, new in zip(traj.messages, variant.messages, strict=True):
        for a, b in zip(old.get("tool_calls") or [], new.get("tool_calls") or [], strict=True):
            assert b["function"]["name"] == change.tools[a["function"]["name"]]
            args = json.loads(a["function"]["arguments"])
            renamed = {change.params[k]: v for k, v in args.items()}
            assert json.loads(b["function"]["arguments"]) == renamed
        if old["role"] == "tool":
            payload = json.loads(new["content"])
            assert NOISE_KEY in payload
            del payload[NOISE_KEY]
            assert payload == change._rename(json.loads(old["content"]))
    text = json.dumps(variant.messages) + json.dumps(variant.tools)
    for name in _names(traj):
        assert not re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text)
    schema = variant.tools[0]["function"]["parameters"]
    assert set(schema["required"]) <= set(schema["properties"])
    assert all(p in change.params.values() for p in schema["properties"])
    assert read_row(to_openai_row(variant)).turns
