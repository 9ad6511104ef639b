"""With scripted model answers: a task verification FAIL and a TASK attribution each lead the
reflection to a plan change visible in the next iteration; a malformed reflection is rejected
with its reason (the symbolic reflection takes over)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from veritask.evolve import (
    RUN_DIR,
    EvolveConfig,
    StreamSettings,
    Synthesizer,
    candidate_score,
    domain_rules,
    enumerate_plans,
    evolve,
    read_report,
    select,
)
from veritask.evolve._verify import TERSE_WORDS, style_fits
from veritask.model import ScriptedProvider
from veritask.rollout import TaskSource
from veritask.synth import GENERATOR, generate
from veritask.task import TaskPackage, check_dataset

SYNTH = Synthesizer(f"symbolic:{GENERATOR}", generate)
RANDOM = StreamSettings(assistant="random")
"""The random assistant fails tasks, so attribution has trajectories to attribute."""
CONFIG = EvolveConfig(
    ("mock",), plans=1, iterations=2, candidates=20, batch=4, settings=RANDOM, model="scripted"
)


@dataclass
class NeverSolves:
    """A reference solver that solves nothing: every failed trajectory is attributed TASK."""

    name: str = "never"

    async def solves(self, source: TaskSource, package: TaskPackage, seed: int) -> bool:
        del source, package, seed
        return False


def _model(verdict: str, react_to: str, change: dict[str, Any]) -> ScriptedProvider:
    """Plans; ``verdict`` for every candidate; a reflection that applies ``change`` to the
    synthesis plan only when the failures it is shown contain ``react_to``."""
    plan = enumerate_plans(domain_rules(("mock",)), 1, candidates=20, batch=4)[0]
    base = plan.model_dump(mode="json")

    def script(messages: list[dict[str, Any]], tools: Any) -> Any:
        text = messages[-1]["content"]
        if "Rubrics:" in text:
            return json.dumps({"verdict": verdict, "rationale": "the request is ambiguous"})
        if text.startswith("Attribution:"):
            return json.dumps({"rationale": "the agent never made the write"})
        reflecting = any("Failures with reasons" in str(m["content"]) for m in messages)
        if reflecting and (react_to == "malformed" or "Failures with reasons" in text):
            if react_to.startswith("malformed"):
                return "I would rather not answer in JSON."
            revised = json.loads(json.dumps(base))
            if react_to in text:
                revised["synthesis"].update(change)
            return json.dumps(revised)
        return json.dumps(base)

    return ScriptedProvider(script)


def _unit(out: Path, unit: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / RUN_DIR / f"{unit}.json").read_text())
    return data


def test_a_model_verification_fail_changes_the_next_plan(tmp_path: Path) -> None:
    model = _model("FAIL", '"kind": "model"', {"tier": "L3"})
    evolve(CONFIG, tmp_path, SYNTH, model=model)
    first, second = _unit(tmp_path, "plan-00.iter0"), _unit(tmp_path, "plan-00.iter1")
    fails = [v for v in first["verification"] if v["verdict"] == "FAIL"]
    assert fails and all(v["reasons"][-1]["kind"] == "model" for v in fails)
    assert fails[0]["rationale"] == "the request is ambiguous"
    assert first["reflection"] == "model"
    assert first["plan_diff"]["synthesis.tier"][1] == "L3"
    assert second["plan"]["synthesis"]["tier"] == "L3" and second["plan"] == first["next_plan"]


@pytest.mark.parametrize("model_reflects", [True, False])
def test_a_task_attribution_changes_the_next_plan(tmp_path: Path, model_reflects: bool) -> None:
    styles = ["state every value the request needs"]
    model = _model("PASS", '"attribution": "TASK"', {"styles": styles})
    config = (
        CONFIG
        if model_reflects
        else EvolveConfig(("mock",), plans=1, iterations=2, candidates=20, batch=4, settings=RANDOM)
    )
    evolve(config, tmp_path, SYNTH, model=model if model_reflects else None, solver=NeverSolves())
    first, second = _unit(tmp_path, "plan-00.iter0"), _unit(tmp_path, "plan-00.iter1")
    assert first["counts"]["TASK"] > 0 and first["counts"]["TRAJECTORY"] == 0
    assert all(
        r["detail"] == "the never agent cannot solve the task from its text"
        for r in first["rollouts"]
        if r["outcome"] == "FAIL"
    )
    if model_reflects:
        failed = [r for r in first["rollouts"] if r["outcome"] == "FAIL"]
        assert all(r["rationale"] == "the agent never made the write" for r in failed)
        assert first["plan_diff"] == {"synthesis.styles": [[], styles]}
        assert second["plan"]["synthesis"]["styles"] == styles
    else:  # the symbolic reflection halves the weights of the failing tasks' features
        lowered = [
            k
            for k, (old, new) in first["plan_diff"].items()
            if isinstance(old, float) and new < old
        ]
        assert lowered and first["reflection"] == "symbolic"
    assert second["plan"] == first["next_plan"]
    assert check_dataset(tmp_path).ok  # TASK-attributed tasks are not in the dataset


def test_a_malformed_reflection_is_repaired(tmp_path: Path) -> None:
    model = _model("PASS", "malformed once", {})
    evolve(CONFIG, tmp_path, SYNTH, model=model)
    assert _unit(tmp_path, "plan-00.iter0")["reflection"] == "model"
    repairs = [r for r in model.requests if "could not be used" in str(r["messages"][-1])]
    assert len(repairs) == 2, "each iteration's malformed answer was sent back and repaired"


def test_a_reflection_malformed_for_good_is_rejected_with_its_reason(tmp_path: Path) -> None:
    model = _model("PASS", "malformed", {})
    evolve(CONFIG, tmp_path, SYNTH, model=model)
    first = _unit(tmp_path, "plan-00.iter0")
    assert first["reflection"].startswith("model answer rejected (")
    assert first["reflection"].endswith("; symbolic reflection")
    repairs = [r for r in model.requests if "could not be used" in str(r["messages"][-1])]
    assert repairs, "the malformed answer was sent back for repair first"


def _chosen(out: Path, unit: str) -> list[str]:
    return [s["id"] for s in _unit(out, unit)["selection"]]


def test_a_reflection_that_changes_the_tier_changes_the_symbolic_selection(
    tmp_path: Path,
) -> None:
    plan = enumerate_plans(domain_rules(("mock",)), 1, candidates=20, batch=4)[0]
    tier = next(t for t in ("L3", "L2", "L1") if t != plan.synthesis.tier)
    runs = {}
    for name, react_to in (("with", "Failures with reasons"), ("without", "never-in-text")):
        model = _model("PASS", react_to, {"tier": tier})
        evolve(CONFIG, tmp_path / name, SYNTH, model=model)
        runs[name] = tmp_path / name
    changed = _unit(runs["with"], "plan-00.iter0")
    assert changed["plan_diff"]["synthesis.tier"] == [plan.synthesis.tier, tier]
    assert "synthesis.tier" not in _unit(runs["without"], "plan-00.iter0")["plan_diff"]
    assert _chosen(runs["with"], "plan-00.iter0") == _chosen(runs["without"], "plan-00.iter0")
    # the tier's factor doubles the score of every candidate of the new tier: the selection
    # is scored anew (its members change too when such a candidate was outside the batch)
    scored = {
        name: [s["score"] for s in _unit(out, "plan-00.iter1")["selection"]]
        for name, out in runs.items()
    }
    assert scored["with"] != scored["without"]
    # the report says why: each chosen candidate's score factors, the tier's among them
    row = read_report(runs["with"])["iterations"][1]
    pool = TaskSource.load(runs["with"] / RUN_DIR / "pool" / "plan-00" / "iter1" / "mock")
    tiers = {p.id: p.difficulty for p in pool.packages}
    assert all((s["tier"] == 2.0) == (tiers[s["id"]] == tier) for s in row["selection"])
    assert any(s["tier"] == 2.0 for s in row["selection"])


def test_styles_change_the_selection(tmp_path: Path) -> None:
    generate("mock", 4, 5, tmp_path)
    plan = enumerate_plans(domain_rules(("mock",)), 1, candidates=4, batch=1)[0].synthesis
    pkg = next(p for p in TaskSource.load(tmp_path).packages if candidate_score(plan, p) > 0)
    long = pkg.model_copy(update={"id": "a-long", "task_description": "word " * 200})
    short = pkg.model_copy(update={"id": "b-short", "task_description": "Move my booking."})
    assert len(long.task_description.split()) > TERSE_WORDS >= len(short.task_description.split())

    def chosen(styles: list[str]) -> list[str]:
        return [p.id for p in select(plan.model_copy(update={"styles": styles}), [long, short])]

    assert chosen([]) == ["a-long"]  # a tie, broken by id
    assert chosen(["terse"]) == ["b-short"] and chosen(["detailed"]) == ["a-long"]
    assert style_fits("booking", short) and not style_fits("booking", long)
    assert chosen(["about a booking"]) == ["b-short"]
