"""Grounding and execution filtering of template paths: every instance is counted once, kept
instances replay on a fresh environment, failures are classified, runs are deterministic, and
creation mode writes the rows a path needs inside the savepoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.blueprint import build_tool_graph, enumerate_paths, fuse_specs, task_template
from veritask.blueprint._ground import classify, ground_paths
from veritask.domains import builtin_domains, load_domain
from veritask.env import CompiledDomain, Environment, ToolError
from veritask.policy import DomainSpec, dump_spec


def _templates(spec: DomainSpec) -> list[Any]:
    graph = build_tool_graph(spec)
    return [task_template(spec, graph, p) for p in enumerate_paths(graph)]


def test_classify_by_hand() -> None:
    assert classify(ToolError("PREREQ_FAIL", "m", "R1")) == "policy_violation"
    assert classify(ToolError("CHECK_VIOLATION", "m")) == "invalid_entity_data"
    assert classify(ToolError("NOT_FOUND", "m")) == "invalid_entity_data"
    assert classify(ToolError("MISSING_ARGUMENT", "m")) == "invalid_entity_data"
    assert classify(ToolError("DATABASE_ERROR", "m")) == "spec_bug"
    assert classify(ToolError("UNKNOWN_ARGUMENT", "m")) == "spec_bug"
    assert classify(None) == "spec_bug"


@pytest.mark.parametrize("domain", builtin_domains())
def test_every_instance_is_counted_and_kept_ones_replay(domain: str) -> None:
    spec = load_domain(domain)
    templates = _templates(spec)
    report = ground_paths(spec, templates, "sampling", seed=3, per_path=2)
    assert report.paths == 2 * len(templates)
    assert report.grounded == report.kept + sum(report.failures.values())
    assert report.kept > 0 and report.grounded >= 0.9 * report.paths
    again = ground_paths(spec, templates, "sampling", seed=3, per_path=2)
    assert again.to_json(outcomes=True) == report.to_json(outcomes=True)
    env = Environment(CompiledDomain.from_spec(spec))
    origin = env.image()
    for outcome in [o for o in report.outcomes if o.grounded]:
        env.restore(origin)
        results = [env.call(c["tool"], c["args"]).ok for c in outcome.calls]
        assert all(results) == outcome.kept, outcome
        if outcome.kept:
            assert [c["tool"] for c in outcome.calls if not c["setup"]] == outcome.tools


def test_creation_mode_writes_needed_rows_in_a_savepoint() -> None:
    spec = fuse_specs([load_domain("travel"), load_domain("clinic")]).spec
    report = ground_paths(spec, _templates(spec), "creation", seed=0, per_path=3)
    setups = [o for o in report.outcomes if any(c["setup"] for c in o.calls)]
    assert setups  # users without rows in a service got them written first
    assert all(c["tool"].startswith("insert_") for o in setups for c in o.calls if c["setup"])
    sampling = ground_paths(spec, _templates(spec), "sampling", seed=0, per_path=3)
    assert not any(c["setup"] for o in sampling.outcomes for c in o.calls)


def test_cli_tool_graph_grounds_in_the_mode_of_the_spec(tmp_path: Path) -> None:
    fused = tmp_path / "fused.yaml"
    fused.write_text(dump_spec(fuse_specs([load_domain("mock"), load_domain("gym")]).spec, "x"))
    for domain, mode in (("gym", "sampling"), (str(fused), "creation")):
        result = CliRunner().invoke(cli, ["tool-graph", domain, "--ground", "2", "--json"])
        assert result.exit_code == 0, result.output
        grounding = json.loads(result.output)["grounding"]
        assert (
            grounding["mode"] == mode
            and grounding["paths"] == 2 * json.loads(result.output)["paths"]
        )
