"""The evolve engine: plans and coverage, per-task checkers, streams as resumable units,
reflection visible in the next iteration, model roles with repair."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from veritask.env import CompiledDomain, DatabaseError, Environment
from veritask.evolve import (
    RUN_DIR,
    EvolveConfig,
    PlanPair,
    StreamSettings,
    Synthesizer,
    coverage,
    domain_rules,
    enumerate_plans,
    evolve,
    plan_diff,
    status,
)
from veritask.model import ScriptedProvider
from veritask.pipeline import RunConflict
from veritask.synth import GENERATOR, generate
from veritask.task import DatasetDir, check_dataset, load_dataset
from veritask.verify import make_checkers, partial_credit

SYNTH = Synthesizer(f"symbolic:{GENERATOR}", generate)


def _half_ungrounded(domain: str, n: int, seed: int, out: Path) -> object:
    """The generator, then every other package stripped of its structured requests: those no
    longer determine their target (ungrounded), so task verification must fail them."""
    summary = generate(domain, n, seed, out)
    ds = DatasetDir(out)
    packages = load_dataset(out)
    stripped = [
        p.model_copy(
            update={
                "task": p.task.model_copy(
                    update={
                        "sub_goals": [
                            s.model_copy(update={"ask": None, "fallbacks": []})
                            for s in p.task.sub_goals
                        ]
                    }
                )
            }
        )
        if i % 2 == 0 and not p.refusal
        else p
        for i, p in enumerate(packages)
    ]
    ds.manifest.write_text("".join(p.model_dump_json() + "\n" for p in stripped))
    ds.seal(stripped)
    return summary


HALF_UNGROUNDED = Synthesizer("test:half-ungrounded", _half_ungrounded)
SMALL = EvolveConfig(("mock",), plans=2, iterations=2, candidates=20, batch=6)


def test_a_covering_design_covers_every_factor_value() -> None:
    rules = domain_rules(("mock", "retail"))
    plans = enumerate_plans(rules, 4)
    report = coverage(plans, rules)
    for factor in ("domains", "archetypes", "tiers", "tool_patterns"):
        assert report[factor]["share"] == 1.0, factor
    assert report["rules"]["share"] > 0.9
    assert [p.stream for p in plans] == ["plan-00", "plan-01", "plan-02", "plan-03"]
    assert enumerate_plans(rules, 4) == plans  # a pure function of its inputs


def test_plans_are_versioned_and_diffed() -> None:
    pair = enumerate_plans(domain_rules(("mock",)), 1)[0]
    following = pair.next_version()
    assert following.synthesis.iteration == 1 and plan_diff(pair, following) == {}
    changed = following.model_copy(
        update={"synthesis": following.synthesis.model_copy(update={"tier": "L3"})}
    )
    assert plan_diff(pair, changed)["synthesis.tier"] == [pair.synthesis.tier, "L3"]
    assert PlanPair.model_validate_json(pair.model_dump_json()) == pair


def test_checkers_hold_on_target_and_fail_on_origin(
    tmp_path: Path, compiled: dict[str, CompiledDomain]
) -> None:
    generate("mock", 30, 4, tmp_path / "ds")
    ds = DatasetDir(tmp_path / "ds")
    env = Environment(compiled["mock"])
    for pkg in load_dataset(ds.root):
        origin, target = ds.read_state(pkg.origin), ds.read_state(pkg.target)
        checkers = make_checkers(env, origin, target)  # raises unless they separate the states
        assert bool(checkers) == (pkg.origin != pkg.target)
        assert partial_credit(checkers, env, target)["score"] == 1.0
        if checkers:
            assert partial_credit(checkers, env, origin)["passed"] == 0


def test_checkers_run_read_only(compiled: dict[str, CompiledDomain]) -> None:
    env = Environment(compiled["mock"])
    with pytest.raises(DatabaseError):
        env.select("UPDATE books SET available = 0")
    with pytest.raises(DatabaseError):
        env.select("WITH x AS (SELECT 1) INSERT INTO books(id) SELECT 1 FROM x")
    assert env.select("SELECT COUNT(*) > 0 FROM books") == [(1,)]


def _files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


class _Stop(Exception):
    pass


def test_a_run_is_certified_and_a_killed_run_resumes_to_the_same_bytes(tmp_path: Path) -> None:
    whole = evolve(SMALL, tmp_path / "whole", SYNTH)
    assert check_dataset(tmp_path / "whole").ok
    assert whole.tasks == len(load_dataset(tmp_path / "whole"))
    rows = whole.report["iterations"]
    assert [(r["stream"], r["iteration"]) for r in rows] == [
        ("plan-00", 0), ("plan-00", 1), ("plan-01", 0), ("plan-01", 1),
    ]  # fmt: skip
    assert all({"TASK", "TRAJECTORY", "plan_diff", "verified"} <= set(r) for r in rows)

    seen: list[str] = []

    def stop_after_three(unit: str) -> None:
        seen.append(unit)
        if len(seen) == 3:
            raise _Stop

    with pytest.raises(_Stop):
        evolve(SMALL, tmp_path / "cut", SYNTH, progress=stop_after_three)
    assert status(tmp_path / "cut")["done"] == 3
    resumed = evolve(SMALL, tmp_path / "cut", SYNTH)
    assert resumed.resumed_units == 3
    assert _files(tmp_path / "cut") == _files(tmp_path / "whole")
    other = EvolveConfig(("mock",), plans=2, iterations=2, candidates=20, batch=5)
    with pytest.raises(RunConflict, match="batch"):
        evolve(other, tmp_path / "cut", SYNTH)


def _unit(out: Path, unit: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / RUN_DIR / f"{unit}.json").read_text())
    return data


def test_a_verification_fail_changes_the_plan_of_the_next_iteration(tmp_path: Path) -> None:
    config = EvolveConfig(("mock",), plans=1, iterations=2, candidates=20, batch=6)
    evolve(config, tmp_path, HALF_UNGROUNDED)
    first, second = _unit(tmp_path, "plan-00.iter0"), _unit(tmp_path, "plan-00.iter1")
    assert any(v["verdict"] == "FAIL" for v in first["verification"])
    assert first["plan_diff"], "the failures moved the plan"
    assert second["plan"] == first["next_plan"]
    assert second["plan"]["synthesis"]["iteration"] == 1


def test_without_reflection_the_plan_stays(tmp_path: Path) -> None:
    settings = StreamSettings(reflection=False, task_verification=False)
    config = EvolveConfig(
        ("mock",), plans=1, iterations=2, candidates=20, batch=4, settings=settings
    )
    evolve(config, tmp_path, SYNTH)
    first = _unit(tmp_path, "plan-00.iter0")
    assert first["plan_diff"] == {} and first["reflection"] == "none"
    assert all(v["verdict"] == "PASS" for v in first["verification"])
    assert check_dataset(tmp_path).ok


def _scripted_model(rules: dict[str, list[str]]) -> ScriptedProvider:
    """Plans (the first answer malformed), PASS verdicts, and a reflection that sets L3."""
    plan = enumerate_plans(rules, 1, candidates=20, batch=4)[0].model_dump(mode="json")
    answers = {"plan": ["not json at all", json.dumps(plan)]}

    def script(messages: list[dict[str, Any]], tools: Any) -> Any:
        text = messages[-1]["content"]
        if "Rubrics:" in text:
            return '{"verdict": "PASS", "rationale": "the request is clear"}'
        if "Failures with reasons" in text:
            revised = json.loads(json.dumps(plan))
            revised["synthesis"]["tier"] = "L3"
            return "```json\n" + json.dumps(revised) + "\n```"
        return answers["plan"].pop(0) if answers["plan"] else json.dumps(plan)

    return ScriptedProvider(script)


def test_model_roles_repair_plans_and_their_reflection_shows_next_iteration(
    tmp_path: Path,
) -> None:
    rules = domain_rules(("mock",))
    model = _scripted_model(rules)
    config = EvolveConfig(
        ("mock",), plans=1, iterations=2, candidates=20, batch=4, model="scripted"
    )
    evolve(config, tmp_path, SYNTH, model=model)
    plans = _unit(tmp_path, "plans")
    assert plans["plans"][0]["synthesis"]["stream"] == "plan-00"
    first, second = _unit(tmp_path, "plan-00.iter0"), _unit(tmp_path, "plan-00.iter1")
    assert first["reflection"] == "model"
    assert first["plan_diff"]["synthesis.tier"][1] == "L3"
    assert second["plan"]["synthesis"]["tier"] == "L3"
    repair = [r for r in model.requests if "could not be used" in str(r["messages"][-1])]
    assert repair, "the malformed plan was sent back for repair"


def test_a_model_plan_naming_an_unknown_rule_is_rejected(tmp_path: Path) -> None:
    from veritask.model import StructuredOutputError

    rules = domain_rules(("mock",))
    bad = enumerate_plans(rules, 1)[0].model_dump(mode="json")
    bad["synthesis"]["rules"] = {"NO_SUCH_RULE": 1.0}
    model = ScriptedProvider([json.dumps(bad)] * 3)
    config = EvolveConfig(("mock",), plans=1, iterations=1, model="scripted")
    with pytest.raises(StructuredOutputError, match="NO_SUCH_RULE"):
        evolve(config, tmp_path, SYNTH, model=model)
