"""Trajectory fusion: validated single-service paths joined by a motivation, pruned ex ante,
kept only when the fused witness executes, certifies and grounds."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from click.testing import CliRunner

from veritask._cli.blueprint_path_tasks import ORIGINS
from veritask._cli.main import cli
from veritask.blueprint import fuse_specs
from veritask.blueprint._trajectory_fusion import fuse_trajectories, registry
from veritask.domains import load_domain
from veritask.policy import build_tools
from veritask.synth import fused_services
from veritask.task import check_dataset, load_dataset


def test_pairs_with_an_unvalidated_segment_are_pruned_ex_ante() -> None:
    specs = [load_domain("mock"), load_domain("gym")]
    fusion = fuse_specs(specs)
    full = [registry(spec, seed=0) for spec in specs]
    trajectories, counts = fuse_trajectories(fusion.spec, full, fusion.person, seed=0)
    assert counts["candidates"] == counts["pruned_ex_ante"] + counts["unmapped"] + len(trajectories)
    assert trajectories and counts["unmapped"] == 0
    tools = build_tools(fusion.spec)
    for t in trajectories:
        assert all(name in tools for name in t.tools)
        (sa, ida), (sb, idb) = t.segments
        ra, rb = (next(r for r in full if r.service == s) for s in (sa, sb))
        assert ra.kept[ida].motivation in t.motivation  # the motivation joins both
        assert sa != sb and ida in ra.kept and idb in rb.kept
    # a registry that lost a path: every pair with it is pruned before anything runs
    lost = trajectories[0].segments[0][1]
    first = next(r for r in full if r.service == trajectories[0].segments[0][0])
    smaller = replace(first, kept={k: v for k, v in first.kept.items() if k != lost})
    registries = [smaller if r is first else r for r in full]
    again, fewer = fuse_trajectories(fusion.spec, registries, fusion.person, seed=0)
    assert all(lost not in dict(t.segments).values() for t in again)
    assert fewer["pruned_ex_ante"] > counts["pruned_ex_ante"] and len(again) < len(trajectories)


def test_fuse_makes_tasks_from_fused_trajectories(tmp_path: Path) -> None:
    """One CLI run (about 10 s on a loaded machine: two registries, then fused scenes)."""
    out, fused = tmp_path / "tasks", tmp_path / "fused.yaml"
    args = ["fuse", "mock", "clinic", "--out", str(fused), "--tasks", "6"]
    args += ["--tasks-out", str(out), "--max-pairs", "12", "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    made = json.loads(result.output)["tasks"]
    assert made["fused"] > 0 and made["pruned_ex_ante"] > 0
    assert made["tasks"] == made["from_fused"] == made["certified"] == made["grounded"] > 0
    assert check_dataset(out).ok
    recorded: dict[str, dict[str, object]] = {}
    for part in sorted((out / ORIGINS).glob("unit-*.json")):
        recorded.update(json.loads(part.read_text()))
    spec = load_domain(str(fused))
    services = fused_services(spec)
    assert services is not None
    for pkg in load_dataset(out):
        origin = recorded[pkg.id]
        assert [s for s, _ in origin["segments"]] in (["mock", "clinic"], ["clinic", "mock"])  # type: ignore[union-attr]
        assert str(origin["motivation"]) in pkg.task.total_goal
        written = {
            services.tables.get(build_tools(spec)[c.tool].table) for c in pkg.witness if c.ok
        }
        assert {"mock", "clinic"} <= written
