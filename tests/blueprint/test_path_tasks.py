"""Tasks instantiated from the kept tool paths of a fused spec (``tool-graph --tasks``)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from veritask._cli.blueprint_path_tasks import ORIGINS, subsequence
from veritask._cli.main import cli
from veritask.blueprint import fuse_specs
from veritask.domains import load_domain
from veritask.policy import dump_spec
from veritask.task import check_dataset, load_dataset


def test_subsequence_keeps_order() -> None:
    assert subsequence(["a", "c"], ["a", "b", "c"])
    assert not subsequence(["c", "a"], ["a", "b", "c"])
    assert subsequence([], ["a"]) and not subsequence(["a"], [])


def test_fused_travel_clinic_tasks_come_from_kept_paths(tmp_path: Path) -> None:
    fused = tmp_path / "fused.yaml"
    fused.write_text(dump_spec(fuse_specs([load_domain("travel"), load_domain("clinic")]).spec))
    out = tmp_path / "tasks"
    args = [
        "tool-graph",
        str(fused),
        "--max-paths",
        "35",
        "--tasks",
        "6",
        "--tasks-out",
        str(out),
        "--json",
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    made = payload["tasks"]
    assert made["tasks"] == made["from_paths"] == made["certified"] == made["grounded"] > 0
    assert payload["grounding"]["kept"] > 0
    templates = {t["id"]: t["tools"] for t in payload["templates"]}
    packages = load_dataset(out)
    assert check_dataset(out).ok
    recorded = {}
    for part in sorted((out / ORIGINS).glob("unit-*.json")):
        recorded.update(json.loads(part.read_text()))
    assert sorted(recorded) == sorted(p.id for p in packages)
    assert payload["judge"]["templates_passed"] > 0
    for pkg in packages:
        origin = recorded[pkg.id]
        assert origin["tools"] == templates[origin["template"]]
        # the semantic template: its motivation opens the goal, its instruction is grounded
        assert origin["motivation"] and origin["motivation"] in pkg.task.total_goal
        assert "<" not in origin["instruction"] or origin["instruction"].count("<") < len(
            origin["tools"]
        )
        writes = [t for t in origin["tools"] if not t.startswith("query_")]
        done = [c.tool for c in pkg.witness if c.ok and not c.tool.startswith("query_")]
        assert subsequence(writes, done), (pkg.id, writes, done)
