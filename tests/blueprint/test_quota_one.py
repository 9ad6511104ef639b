"""A service whose quota is one: its population holds open rows to update, and a path whose
only completion retires the row it just made (and so undoes itself) is filtered, not kept."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from veritask.blueprint import (
    Blueprint,
    Entity,
    TaskTemplate,
    build_tool_graph,
    enumerate_paths,
    task_template,
)
from veritask.blueprint._dag_blueprint import fix_names
from veritask.blueprint._dag_compile import compile_blueprint
from veritask.blueprint._dag_populate import open_rows_most, populate, row_problems
from veritask.blueprint._dag_schema import sanitize_entities
from veritask.blueprint._dag_stages import seed_work
from veritask.blueprint._ground import PathOutcome, ground_paths
from veritask.env import CompiledDomain, Environment
from veritask.policy import DomainSpec

sys.path.insert(0, str(Path(__file__).parent))
import dag_script

SIZES = (12, 8)
"""Persons and resources per peripheral the DAG populates by default (``DagConfig``)."""


def _entities() -> dict[str, Entity]:
    kept, _ = sanitize_entities([Entity.model_validate(e) for e in dag_script.ENTITIES])
    return {e.name: e for e in kept}


def test_quota_one_population_holds_rows_to_update() -> None:
    bp, spec = _service(dag_script._program("insured"))
    assert open_rows_most(bp, bp.relationships[0]) == 1
    fixture = {r["patient_id"] for r in compile_blueprint(bp, _entities())["seed"]["patient"]}
    added = [r for r in spec.seed["patient"] if r["patient_id"] not in fixture]
    holders = [
        r["patient_id"]
        for r in spec.seed["program_signup"]
        if r["status"] == "ACTIVE" and r["patient_id"] not in fixture
    ]
    # some populated patients have a signup to finish (one each: the quota), and some insured
    # ones are free to join
    assert holders and len(holders) == len(set(holders))
    assert [r for r in added if r["insured"] and r["patient_id"] not in holders]
    assert row_problems(bp, spec.seed) == []


@pytest.mark.parametrize("raw", [dag_script.ENROLLMENT, dag_script.BOOKING])
def test_larger_quotas_keep_everyone_under_them(raw: dict[str, Any]) -> None:
    entities = _entities()
    bp = fix_names(Blueprint.model_validate(raw), list(entities))
    rel = bp.relationships[0]
    quota = next(p.limit for p in bp.policies if p.kind == "quota")
    assert quota is not None and quota > 1 and open_rows_most(bp, rel) == quota - 1
    rows = populate(bp, entities, compile_blueprint(bp, entities)["seed"], *SIZES)
    assert row_problems(bp, rows) == []


def _service(raw: dict[str, Any]) -> tuple[Blueprint, DomainSpec]:
    """A blueprint of the DAG tests, compiled and populated as the DAG does."""
    entities = _entities()
    bp = Blueprint.model_validate(raw)
    data = compile_blueprint(bp, entities)
    result, spec = seed_work({"blueprint": bp.model_dump(), "spec": data}, entities, *SIZES)
    assert result["status"] == "seeded" and spec is not None, result
    return bp, spec


def _retires_own_insert(spec: DomainSpec, env: Environment, outcome: PathOutcome) -> bool:
    """Whether an instance retires (cancel, drop, finish) a row its own insert made."""
    made: set[tuple[str, Any]] = set()
    for call in outcome.calls:
        tool = env.tools[call["tool"]]
        life = spec.table(tool.table).lifecycle if tool.table else None
        if tool.kind == "update" and life is not None:
            key = (tool.table, call["args"].get(tool.key or ""))
            if call["args"].get(life.column) in life.inactive_values and key in made:
                return True
        result = env.call(call["tool"], call["args"])
        assert result.ok, call
        if tool.kind == "insert" and not call["setup"]:
            made.add((tool.table, result.result[spec.table(tool.table).primary_key[0].name]))
    return False


def _templates(spec: DomainSpec) -> list[TaskTemplate]:
    graph = build_tool_graph(spec)
    return [task_template(spec, graph, p) for p in enumerate_paths(graph)]


def test_join_then_finish_is_filtered_under_a_quota_of_one() -> None:
    _, spec = _service(dag_script._program("insured"))
    templates = _templates(spec)
    join_finish = [t for t in templates if "insert_program_signup" in t.tools]
    finish = [t for t in templates if t not in join_finish]
    assert join_finish and finish
    for seed in range(3):
        report = ground_paths(spec, join_finish, "sampling", seed, per_path=2)
        # a patient with a signup to finish is at the quota and cannot join; a free one has
        # only the signup just made, which finishing would undo
        assert report.kept == 0
        assert all(o.failure == "policy_violation" or not o.grounded for o in report.outcomes)
    assert ground_paths(spec, finish, "sampling", 0).kept > 0


@pytest.mark.parametrize("raw", [dag_script.ENROLLMENT, dag_script._program("insured")])
def test_no_kept_path_retires_the_row_it_made(raw: dict[str, Any]) -> None:
    _, spec = _service(raw)
    report = ground_paths(spec, _templates(spec), "sampling", 0, per_path=3)
    kept = [o for o in report.outcomes if o.kept]
    assert kept
    env = Environment(CompiledDomain.from_spec(spec))
    origin = env.image()
    for outcome in kept:
        env.restore(origin)
        assert not _retires_own_insert(spec, env, outcome), outcome
    # enrolling and then dropping another course is a kept path: the drop takes an earlier one
    if raw is dag_script.ENROLLMENT:
        assert any("insert_enrollment" in o.tools for o in kept)
