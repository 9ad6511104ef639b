"""The cast at 1,000 packages with nothing missing (issue 29, the last criteria): a unit makes
its count from a fresh scene when its own runs out, and a rule whose tested values the user
states gets a boundary-seeded package (kind ``stated``)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from veritask.domains import load_domain
from veritask.env import CompiledDomain, build_image
from veritask.synth import DomainModel
from veritask.synth import _unit as unit_mod
from veritask.synth._boundaries import STATED
from veritask.synth._cast import CastBuilder, construction_problem
from veritask.synth._generate import GenerateSummary
from veritask.synth._unit import UnitWorker
from veritask.task import (
    Ask,
    Construction,
    DatasetDir,
    SubGoal,
    TaskDescription,
    TaskPackage,
    UserProfile,
    WitnessCall,
)

CANCEL = {"id": 5, "status": "CANCELLED", "cancellation_step": 20, "cancellation_fee": 0}
"""A cancellation the clinic's own examples make on its seed (appointment 5 is booked)."""


def _clinic() -> tuple[CastBuilder, bytes]:
    spec = load_domain("clinic")
    builder = CastBuilder(CompiledDomain.from_spec(spec), DomainModel.from_spec(spec))
    return builder, build_image(spec)


def _part(out: Path, unit: int) -> list[TaskPackage]:
    data = gzip.decompress((out / "parts" / f"unit-{unit:06d}.jsonl.gz").read_bytes())
    return [TaskPackage.model_validate(json.loads(line)) for line in data.splitlines()]


def test_a_stated_value_a_rule_requires_is_a_boundary_while_its_category_has_none() -> None:
    builder, origin = _clinic()
    call = WitnessCall(tool="update_appointments", args=CANCEL, ok=True)
    stating = Ask(
        transaction="cancel_appointment",
        tool="update_appointments",
        values={"status": "CANCELLED", "cancellation_step": 20},
    )
    builder.env.restore(origin)
    found = builder._stated(call, [stating])
    assert [(a.rule, a.kind, a.stated) for a in found] == [
        ("APPT_CANCEL_STEP_REQUIRED", STATED, "cancellation_step")
    ]  # the status is stated too, but leaving it out breaks nothing: only the step counts
    assert "left out" in found[0].describe()
    silent = stating.model_copy(update={"values": {"status": "CANCELLED"}})
    assert builder._stated(call, [silent]) == []  # a value nobody states is no stated boundary
    builder.categories["integrity"] += 1  # the unit already seeded an integrity rule
    assert builder._stated(call, [stating]) == []


def test_a_stated_construction_is_checked_from_the_origin() -> None:
    builder, origin = _clinic()
    ask = Ask(
        transaction="cancel_appointment",
        tool="update_appointments",
        values={"status": "CANCELLED", "cancellation_step": 20},
    )
    builder.kinds.update(state=1, multi=1)  # placed before: the stated kind is the rarest
    found = builder.edge_call([WitnessCall(tool="update_appointments", args=CANCEL, ok=True)],
                              origin, set(), [ask])  # fmt: skip
    assert found is not None
    i, adj = found
    assert (i, adj.rule, adj.kind) == (0, "APPT_CANCEL_STEP_REQUIRED", STATED)
    # the same construction on a package whose request does not state the step fails the check
    built = Construction(
        archetype="edge", what="w", rule=adj.rule, boundary=STATED, call=0,
        omitted=["cancellation_step"], detail=adj.describe(),
    )  # fmt: skip
    pkg = _package(ask, built)
    assert construction_problem(builder, pkg, origin) is None
    unstated = ask.model_copy(update={"values": {"status": "CANCELLED"}})
    assert "does not state" in (
        construction_problem(builder, _package(unstated, built), origin) or ""
    )


def _package(ask: Ask, built: Construction) -> TaskPackage:
    """A clinic package of one cancellation carrying ``built`` (fields the check reads)."""
    task = TaskDescription(
        who_you_are="You are Ana.",
        total_goal="Cancel.",
        sub_goals=[SubGoal(title="Cancel", request="Cancel.", ask=ask)],
    )
    return TaskPackage(
        id="clinic-s0-000000", domain="clinic", spec_hash="0" * 64, policy="0" * 64,
        task=task, task_description=task.render(),
        user_profile=UserProfile(user_id="p_ana", name="Ana", archetype="edge"),
        origin="0" * 64, target="0" * 64,
        witness=[WitnessCall(tool="update_appointments", args=CANCEL, ok=True)],
        reward_basis=["state_exact"], difficulty="L1", seed=0, generator="test", tags=[],
        rules_exercised=[], boundary_hits=0,
        construction=built,
    )  # fmt: skip


def test_a_unit_whose_scene_ran_out_makes_its_count_from_a_fresh_scene(tmp_path: Path) -> None:
    # mock seed 0 unit 25 made 5 of its 10 packages before: its scene ran out of attempts
    result = UnitWorker("mock").run("mock", 0, 25, 10, 250, tmp_path)
    packages = _part(tmp_path, 25)
    assert result.packages == len(packages) == 10
    assert [p.id for p in packages] == [f"mock-s0-{i:06d}" for i in range(250, 260)]
    assert len({p.origin for p in packages}) == 2  # the first scene's five, then a fresh one
    ds = DatasetDir(tmp_path)
    for pkg in packages:
        assert ds.read_state(pkg.origin)  # every origin a package names is stored


def test_a_unit_that_redesigns_its_scene_is_byte_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(unit_mod, "ATTEMPTS_PER_TASK", 1)  # every scene runs out at once
    parts = []
    for run in ("a", "b"):
        out = tmp_path / run
        result = UnitWorker("mock").run("mock", 0, 25, 4, 250, out)
        assert result.packages == 4
        parts.append((out / "parts" / "unit-000025.jsonl.gz").read_bytes())
    assert parts[0] == parts[1]
    assert len({p.origin for p in _part(tmp_path / "a", 25)}) >= 2


def test_a_run_that_falls_short_says_why(tmp_path: Path) -> None:
    made = GenerateSummary(tmp_path, 3, 1, 0, {"no reachable goal": 40}, asked=5)
    assert made.shortfall() == (
        "3 of 5 packages: some units ran out of attempts on every scene they may design "
        "(discarded: no reachable goal 40)"
    )
    assert GenerateSummary(tmp_path, 5, 1, 0, {}, asked=5).shortfall() is None
