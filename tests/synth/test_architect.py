"""The LLM Architect, offline: scripted stage answers derived from the built-in travel domain.

The seed (tests/synth/data/travel_seed.yaml) retells LOGIGEN's travel case study in prose. The
scripted model answers every stage with an artifact built from the built-in travel spec, so the
model path (parse, verify, assemble, write YAML) is what produces the Architect's spec.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from veritask._cli import architect_cmd
from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment
from veritask.model import (
    CostLedger,
    ProviderError,
    RecordingProvider,
    ReplayProvider,
    ScriptedProvider,
    ScriptItem,
    register_provider,
)
from veritask.pipeline import RunConflict
from veritask.policy import DomainSpec, Example, Rule, compile_sql, load_spec, render_wiki
from veritask.synth import (
    Architect,
    ArchitectError,
    ArchitectResult,
    ComplexityPlan,
    PlanLimits,
    RulesArtifact,
    Seed,
    SeedError,
    TablesArtifact,
    load_seed,
    parse_seed,
    run_architect,
)
from veritask.synth._architect_checks import verify_plan, verify_rules, verify_tables, verify_wiki

SEED_PATH = Path(__file__).parent / "data" / "travel_seed.yaml"

COVERAGE = {
    1: ["TR_PURPOSE_REQUIRED", "TR_PURPOSE_NOT_EMPTY"],
    2: [
        "FLIGHT_APPROVAL_REQUIRED",
        "FLIGHT_APPROVAL_NOT_REQUIRED",
        "FLIGHT_AUTO_APPROVAL",
        "APPROVAL_PROPAGATE",
    ],
    3: ["FLIGHT_CABIN_CLASS"],
    4: ["FLIGHT_POLICY_FLAG"],
    5: ["HOTEL_VENDOR_LISTED", "HOTEL_VENDOR_TYPE", "HOTEL_REIMBURSABLE"],
    6: ["FLIGHT_QUOTA", "HOTEL_QUOTA"],
    7: ["FLIGHT_REFUND_FULL", "FLIGHT_REFUND_PENALTY", "HOTEL_REFUND_FULL", "HOTEL_REFUND_PENALTY"],
    8: [
        "FLIGHT_CANCEL_TICKETED",
        "FLIGHT_TICKETED_IMMUTABLE",
        "FLIGHT_CANCELLED_FINAL",
        "HOTEL_CANCEL_CONFIRMED",
        "HOTEL_CONFIRMED_IMMUTABLE",
        "HOTEL_CANCELLED_FINAL",
    ],
    9: ["APPROVER_ACTIVE", "APPROVER_AUTHORITY", "APPROVER_CONFLICT"],
}
"""Which seed rule (1-based) each planned rule implements."""

KINDS = {
    "irreversibility": "immutability",
    "authority": "permission",
    "system_control": "state_machine",
}


# -- scripted answers derived from the built-in travel spec --------------------------------------


def _fenced(data: Any) -> str:
    return "Here is the artifact.\n```json\n" + json.dumps(data, indent=2) + "\n```\n"


def _seed_rules(item_id: str) -> list[int]:
    return [n for n, ids in COVERAGE.items() if item_id in ids]


def plan_data(spec: DomainSpec) -> dict[str, Any]:
    rules = [
        {
            "id": r.id,
            "kind": KINDS.get(r.category, r.category),
            "entity": r.table,
            "statement": r.message,
            "seed_rules": _seed_rules(r.id),
            **({"threshold": r.threshold.value} if r.threshold and r.threshold.value else {}),
        }
        for r in spec.rules
    ]
    effects = [
        {
            "id": e.id,
            "kind": "side_effect",
            "entity": e.table,
            "statement": e.description,
            "seed_rules": _seed_rules(e.id),
        }
        for e in spec.effects
    ]
    return {
        "entities": [
            {"name": t.name, "tier": t.tier, "description": t.description} for t in spec.tables
        ],
        "actors": [spec.actor],
        "rules": rules + effects,
        "targets": {
            "tables": len(spec.tables),
            "rules": len(spec.rules),
            "effects": len(spec.effects),
        },
    }


def wiki_text(spec: DomainSpec) -> str:
    effects = "\n".join(f"- **{e.id}**: {e.description}" for e in spec.effects)
    return render_wiki(spec) + "\n## System Effects\n\n" + effects + "\n"


def tables_data(spec: DomainSpec) -> dict[str, Any]:
    return {
        "actor": spec.actor,
        "tables": [t.model_dump(mode="json", exclude_defaults=True) for t in spec.tables],
        "seed": copy.deepcopy(spec.seed),
    }


def rules_data(spec: DomainSpec, rules: list[Rule] | None = None) -> dict[str, Any]:
    return {
        "description": spec.description,
        "wiki": spec.wiki.model_dump(mode="json"),
        "rules": [r.model_dump(mode="json", exclude_defaults=True) for r in rules or spec.rules],
        "effects": [e.model_dump(mode="json", exclude_defaults=True) for e in spec.effects],
        "transactions": [
            t.model_dump(mode="json", exclude_defaults=True) for t in spec.transactions
        ],
    }


def with_condition(spec: DomainSpec, rule_id: str, old: str, new: str) -> list[Rule]:
    """The spec's rules with ``old`` replaced by ``new`` in one rule's condition."""
    out = []
    for rule in spec.rules:
        if rule.id == rule_id:
            assert old in rule.condition
            rule = rule.model_copy(update={"condition": rule.condition.replace(old, new)})
        out.append(rule)
    return out


@pytest.fixture(scope="module")
def travel() -> DomainSpec:
    return load_domain("travel")


@pytest.fixture(scope="module")
def seed() -> Seed:
    return load_seed(SEED_PATH)


def answers(spec: DomainSpec) -> dict[str, str]:
    return {
        "plan": _fenced(plan_data(spec)),
        "wiki": wiki_text(spec),
        "tables": _fenced(tables_data(spec)),
        "rules": _fenced(rules_data(spec)),
    }


def good_script(spec: DomainSpec) -> list[str]:
    a = answers(spec)
    return [a["plan"], a["wiki"], a["tables"], a["rules"]]


def compile_error_script(spec: DomainSpec, bad_condition: tuple[str, str]) -> list[str]:
    """Stage 4 answers first with a rule whose trigger cannot compile, then with the fix."""
    broken = with_condition(spec, "FLIGHT_QUOTA", *bad_condition)
    return [*good_script(spec)[:3], _fenced(rules_data(spec, broken)), answers(spec)["rules"]]


def wrong_rule_script(spec: DomainSpec, rounds: int = 3) -> list[str]:
    """Stage 4 always answers with a refund rule whose comparison is off by one."""
    wrong = with_condition(spec, "FLIGHT_REFUND_FULL", "<= 2", "< 2")
    return [*good_script(spec)[:3], *[_fenced(rules_data(spec, wrong))] * rounds]


@pytest.fixture(scope="module")
def good_run(travel: DomainSpec, seed: Seed) -> tuple[ArchitectResult, ScriptedProvider]:
    provider = ScriptedProvider(good_script(travel))
    return run_architect(seed, provider), provider


# -- (a) the good script ------------------------------------------------------------------------


def _outcomes(env: Environment, seed_state: bytes, example: Example) -> list[tuple[Any, ...]]:
    env.restore(seed_state)
    out = []
    for call in example.calls:
        result = env.call(call.tool, call.args)
        error = result.error
        out.append(
            (result.ok, error.violated_rule if error else None, error.code if error else None)
        )
    return out


def test_good_script_spec_compiles_loads_and_matches_the_builtin(
    good_run: tuple[ArchitectResult, ScriptedProvider],
    travel: DomainSpec,
    tmp_path: Path,
) -> None:
    result, provider = good_run
    assert provider.remaining == 0
    assert result.report.passed and result.report.failure is None
    assert [(s.stage, s.rounds_used, s.passed) for s in result.report.stages] == [
        ("plan", 1, True),
        ("wiki", 1, True),
        ("tables", 1, True),
        ("rules", 1, True),
    ]
    path = result.write(tmp_path / "spec.yaml")
    assert load_spec(path) == result.spec
    assert load_domain(str(path)).name == "corporate_travel"
    CompiledDomain.from_spec(result.spec)
    assert result.spec.model_copy(update={"name": "travel"}) == travel
    assert set(result.report.cost.modules) == {
        "architect.plan",
        "architect.wiki",
        "architect.tables",
        "architect.rules",
    }
    assert result.report.cost.total().calls == 4


def test_good_script_rejects_what_the_builtin_rejects(
    good_run: tuple[ArchitectResult, ScriptedProvider], travel: DomainSpec
) -> None:
    """Every built-in travel example gives the same outcomes (violated rule ids) on both specs."""
    builtin = CompiledDomain.from_spec(travel)
    made = CompiledDomain.from_spec(good_run[0].spec)
    env_b, env_m = Environment(builtin), Environment(made)
    compared = 0
    for item in [*travel.rules, *travel.effects]:
        for example in item.examples:
            expected = _outcomes(env_b, builtin.seed, example)
            assert _outcomes(env_m, made.seed, example) == expected, item.id
            compared += len(expected)
    assert compared > 100


def test_same_seed_and_answers_give_byte_identical_specs(
    good_run: tuple[ArchitectResult, ScriptedProvider], travel: DomainSpec, seed: Seed
) -> None:
    again = run_architect(seed, ScriptedProvider(good_script(travel)))
    assert again.spec_yaml == good_run[0].spec_yaml
    assert again.report.to_json() == good_run[0].report.to_json()


# -- (b) a trigger that fails to compile, fixed in round 2 -------------------------------------


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (
            ("SELECT flight_booking_count FROM", "SELECT flight_booking_total FROM"),
            "unknown column 'flight_booking_total'",
        ),
        ((">= {threshold}", ">= >= {threshold}"), "syntax error"),
    ],
    ids=["unknown-column", "syntax-error"],
)
def test_trigger_compile_error_is_reported_then_fixed(
    travel: DomainSpec, seed: Seed, bad: tuple[str, str], says: str
) -> None:
    # Spec SQL is parsed before anything reaches SQLite, so both mistakes are spec errors that
    # name the field; the model gets them back and fixes the rule in round 2.
    provider = ScriptedProvider(compile_error_script(travel, bad))
    result = run_architect(seed, provider)
    stage = result.report.stage("rules")
    assert stage.passed and stage.rounds_used == 2
    first, second = stage.rounds
    assert second.errors == []
    spec_errors = [e for e in first.errors if e.check == "spec_invalid"]
    assert [e.item for e in spec_errors] == ["rules[4].condition"]
    assert says in spec_errors[0].message
    # The structured report went back to the model with its previous answer.
    fix_request = provider.requests[-1]["messages"]
    assert fix_request[-2]["role"] == "assistant"
    assert "spec_invalid" in fix_request[-1]["content"]
    assert says in fix_request[-1]["content"]
    assert result.spec.model_copy(update={"name": "travel"}) == travel


# -- (c) a subtly wrong rule, never fixed -------------------------------------------------------


def test_wrong_rule_is_caught_and_the_architect_fails(travel: DomainSpec, seed: Seed) -> None:
    provider = ScriptedProvider(wrong_rule_script(travel))
    with pytest.raises(ArchitectError, match="stage 'rules'") as info:
        run_architect(seed, provider)
    report = info.value.report
    assert not report.passed and report.spec is None
    assert report.failure is not None and "FLIGHT_REFUND_FULL" in report.failure
    stage = report.stage("rules")
    assert not stage.passed and stage.rounds_used == 3
    for record in stage.rounds:
        assert [(e.check, e.item) for e in record.errors] == [
            ("example_violation_accepted", "FLIGHT_REFUND_FULL example 0 call 0")
        ]
        assert "should be rejected by FLIGHT_REFUND_FULL, but it succeeded" in str(record.errors[0])
    assert provider.remaining == 0


def test_rounds_bound_the_fix_attempts(travel: DomainSpec, seed: Seed) -> None:
    provider = ScriptedProvider(wrong_rule_script(travel, rounds=1))
    with pytest.raises(ArchitectError) as info:
        run_architect(seed, provider, rounds=1)
    assert info.value.report.stage("rules").rounds_used == 1


# -- (d) malformed stage output is repaired ----------------------------------------------------


def test_malformed_answers_are_repaired(travel: DomainSpec, seed: Seed) -> None:
    a = answers(travel)
    broken_tables = tables_data(travel)
    del broken_tables["tables"][0]["tier"]
    script = [
        "Here is the plan: {entities: [unquoted",
        a["plan"],
        a["wiki"],
        _fenced(broken_tables),
        a["tables"],
        a["rules"],
    ]
    provider = ScriptedProvider(script)
    result = run_architect(seed, provider)
    plan, _, tables, _ = result.report.stages
    assert (plan.rounds_used, plan.rounds[0].model_calls, plan.rounds[0].errors) == (1, 2, [])
    assert (tables.rounds_used, tables.rounds[0].model_calls) == (1, 2)
    repair = provider.requests[1]["messages"][-1]["content"]
    assert "could not be used" in repair and "no JSON value" in repair
    repair = provider.requests[4]["messages"][-1]["content"]
    assert "tables.0.tier: Field required" in repair
    assert result.report.cost.modules["architect.tables"].calls == 2


def test_unusable_answer_without_repairs_costs_a_round(travel: DomainSpec, seed: Seed) -> None:
    provider = ScriptedProvider(["not json at all", *good_script(travel)])
    result = run_architect(seed, provider, max_repairs=0)
    plan = result.report.stage("plan")
    assert plan.rounds_used == 2
    assert [e.check for e in plan.rounds[0].errors] == ["output_format"]


# -- (e) record, then replay to a byte-identical spec ------------------------------------------


def test_replay_gives_a_byte_identical_spec(travel: DomainSpec, seed: Seed, tmp_path: Path) -> None:
    recording = tmp_path / "architect.jsonl"
    script = compile_error_script(travel, (">= {threshold}", "> >= {threshold}"))
    recorded = run_architect(seed, RecordingProvider(ScriptedProvider(script), recording))
    replayed = run_architect(seed, ReplayProvider(recording))
    recorded.write(tmp_path / "a.yaml")
    replayed.write(tmp_path / "b.yaml")
    assert (tmp_path / "a.yaml").read_bytes() == (tmp_path / "b.yaml").read_bytes()
    assert replayed.report.to_json()["stages"] == recorded.report.to_json()["stages"]
    assert len(recording.read_text().splitlines()) == 5


# -- stage verifiers on their own --------------------------------------------------------------


def test_plan_verifier_checks_coverage_references_and_counts(
    travel: DomainSpec, seed: Seed
) -> None:
    data = plan_data(travel)
    for rule in data["rules"]:
        rule["seed_rules"] = [i for i in rule["seed_rules"] if i != 4]
    data["rules"][0]["entity"] = "nowhere"
    data["targets"]["rules"] += 1
    errors = verify_plan(ComplexityPlan.model_validate(data), seed, PlanLimits())
    found = {(e.check, e.item) for e in errors}
    assert ("seed_rule_uncovered", "seed rule 4") in found
    assert ("unknown_entity", "rule TR_USER_ACTIVE") in found
    assert ("target_mismatch", "rules") in found
    simple = {**plan_data(travel), "rules": [r for r in data["rules"] if r["kind"] == "policy"]}
    errors = verify_plan(ComplexityPlan.model_validate(simple), seed, PlanLimits())
    assert "too_simple" in {e.check for e in errors}


def test_wiki_verifier_wants_ids_entities_and_seed_numbers(travel: DomainSpec, seed: Seed) -> None:
    plan = ComplexityPlan.model_validate(plan_data(travel))
    assert verify_wiki(wiki_text(travel), plan, seed) == []
    text = (
        wiki_text(travel).replace("FLIGHT_QUOTA", "the flight quota").replace("500", "five hundred")
    )
    found = {(e.check, e.item) for e in verify_wiki(text, plan, seed)}
    assert ("rule_not_in_wiki", "rule FLIGHT_QUOTA") in found
    assert ("seed_number_missing", "seed rule 2") in found


def test_tables_verifier_runs_the_ddl_and_the_rows(travel: DomainSpec, seed: Seed) -> None:
    plan = ComplexityPlan.model_validate(plan_data(travel))
    data = tables_data(travel)
    data["tables"] = [t for t in data["tables"] if t["name"] != "flight_classes"]
    errors, spec = verify_tables(TablesArtifact.model_validate(data), plan, seed)
    found = {e.check for e in errors}
    assert spec is None
    assert {"entity_without_table", "foreign_key"} <= found
    data = tables_data(travel)
    data["tables"][0]["columns"][1]["check"] = "no_such_column > 0"
    data["seed"]["users"][0]["company_id"] = "comp_missing"
    errors, _ = verify_tables(TablesArtifact.model_validate(data), plan, seed)
    # Spec SQL is parsed before it reaches SQLite: the CHECK's unknown column is a spec error.
    assert [(e.check, e.item) for e in errors] == [("spec_invalid", "tables[0].columns[1].check")]
    assert "unknown column 'no_such_column'" in errors[0].message
    data["tables"][0]["columns"][1].pop("check")
    errors, _ = verify_tables(TablesArtifact.model_validate(data), plan, seed)
    assert [(e.check, e.item) for e in errors][:1] == [("seed_rows", "seed.users[0]")]
    assert "FOREIGN KEY" in errors[0].message


def test_rules_verifier_checklist_examples_and_rows(travel: DomainSpec, seed: Seed) -> None:
    plan = ComplexityPlan.model_validate(plan_data(travel))
    tables = TablesArtifact.model_validate(tables_data(travel))
    data = rules_data(travel)
    data["rules"] = [r for r in data["rules"] if r["id"] != "HOTEL_QUOTA"]
    for rule in data["rules"]:
        if rule["id"] == "FLIGHT_QUOTA":
            rule["threshold"]["value"] = 4
        if rule["id"] == "TR_PURPOSE_REQUIRED":
            rule["examples"] = []
    for effect in data["effects"]:
        if effect["id"] == "FLIGHT_POLICY_FLAG":
            effect["sql"] = (
                "UPDATE flight_bookings SET policy_violation_flag = 0 WHERE id = NEW.id;"
            )
    errors, spec = verify_rules(RulesArtifact.model_validate(data), tables, plan, seed)
    assert spec is not None
    found = {(e.check, e.item) for e in errors}
    assert ("planned_rule_missing", "HOTEL_QUOTA") in found
    assert ("threshold_mismatch", "rule FLIGHT_QUOTA") in found
    assert ("rule_without_violating_example", "rule TR_PURPOSE_REQUIRED") in found
    assert ("rule_without_passing_example", "rule TR_PURPOSE_REQUIRED") in found
    assert ("example_wrong_rule", "FLIGHT_QUOTA example 0 call 1") in found
    assert ("example_rows", "FLIGHT_POLICY_FLAG example 0") in found


def test_multi_line_effect_descriptions_compile(travel: DomainSpec) -> None:
    effect = travel.effects[0].model_copy(update={"description": "Sets the flag.\nDROP it"})
    spec = travel.model_copy(update={"effects": [effect]})
    sqlite3.connect(":memory:").executescript(compile_sql(spec).full)


def test_smuggled_sql_is_refused(travel: DomainSpec, seed: Seed, tmp_path: Path) -> None:
    """A condition that closes the trigger to run its own statement is an error, not executed."""
    target = tmp_path / "attached.db"
    smuggle = f"1 THEN 0 END; END; ATTACH DATABASE '{target}' AS x; SELECT CASE WHEN 1"
    rules = with_condition(travel, "FLIGHT_QUOTA", "(SELECT", f"{smuggle} OR (SELECT")
    script = [*good_script(travel)[:3], _fenced(rules_data(travel, rules))]
    with pytest.raises(ArchitectError) as info:
        run_architect(seed, ScriptedProvider(script), rounds=1)
    errors = info.value.report.stage("rules").rounds[0].errors
    assert {e.check for e in errors} == {"spec_invalid"}  # parsed, never pasted into SQLite
    assert not target.exists()


# -- seeds -------------------------------------------------------------------------------------


def test_seed_errors_name_the_line(tmp_path: Path) -> None:
    text = "scenario: Shop\ncontext: A shop.\nrules: []\nhint: {}\n"
    with pytest.raises(SeedError) as info:
        parse_seed(text, source="seed.yaml")
    issues = {(i.line, i.field) for i in info.value.issues}
    assert (3, "rules") in issues and (4, "hint") in issues
    assert "seed.yaml:3" in str(info.value)
    assert parse_seed("scenario: 3D Print Shop!\ncontext: c\nrules: [r]\n").domain_name == (
        "domain_3d_print_shop"
    )


def test_architect_is_async_and_charges_a_given_ledger(travel: DomainSpec, seed: Seed) -> None:
    ledger = CostLedger()
    architect = Architect(ScriptedProvider(good_script(travel)), ledger=ledger)
    result = asyncio.run(architect.design(seed))
    assert result.ledger is ledger and ledger.total().calls == 4


# -- (f) the CLI -------------------------------------------------------------------------------


_SCRIPTS: dict[str, list[ScriptItem]] = {}


def _scripted(argument: str, **_: Any) -> ScriptedProvider:
    return ScriptedProvider(_SCRIPTS[argument])


@pytest.fixture(scope="module")
def cli(travel: DomainSpec) -> click.Group:
    _SCRIPTS["good"] = good_script(travel)
    _SCRIPTS["wrong"] = wrong_rule_script(travel)
    register_provider("architect-test", _scripted)

    @click.group()
    def group() -> None:
        """Test group."""

    architect_cmd.register(group)
    return group


def test_cli_writes_the_spec_and_the_json_report(cli: click.Group, tmp_path: Path) -> None:
    out, report = tmp_path / "spec.yaml", tmp_path / "report.json"
    args = ["architect", str(SEED_PATH), "--model", "architect-test:good", "--out", str(out)]
    args += ["--report", str(report), "--artifacts", str(tmp_path / "art"), "--json"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert set(payload) == {
        "out",
        "domain",
        "scenario",
        "passed",
        "failure",
        "spec",
        "stages",
        "cost",
    }
    assert payload["out"] == str(out) and payload["passed"] is True
    assert payload["spec"]["rules"] == 41 and payload["spec"]["name"] == "corporate_travel"
    assert [s["rounds_used"] for s in payload["stages"]] == [1, 1, 1, 1]
    assert payload["cost"]["total"]["turns"] == 4
    assert json.loads(report.read_text()) == payload
    assert load_spec(out).spec_hash() == payload["spec"]["spec_hash"]
    assert sorted(p.name for p in (tmp_path / "art").iterdir()) == [
        "plan.json",
        "rules.json",
        "tables.json",
        "wiki.md",
    ]


def test_cli_failure_writes_no_spec(cli: click.Group, tmp_path: Path) -> None:
    out = tmp_path / "spec.yaml"
    args = ["architect", str(SEED_PATH), "--model", "architect-test:wrong", "--out", str(out)]
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 1
    assert not out.exists()
    payload = json.loads(result.stdout)
    assert payload["passed"] is False and payload["out"] is None
    assert payload["stages"][-1]["rounds_used"] == 3
    assert "example_violation_accepted" in result.stderr
    plain = CliRunner().invoke(cli, args)
    assert plain.exit_code == 1 and "rules   rejected after rounds 3/3" in plain.stderr


def test_cli_rejects_an_unknown_model_scheme(cli: click.Group, tmp_path: Path) -> None:
    args = ["architect", str(SEED_PATH), "--model", "nope:x", "--out", str(tmp_path / "s.yaml")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1 and "unknown model provider" in result.stderr


def test_cli_record_then_replay(cli: click.Group, tmp_path: Path) -> None:
    recording = tmp_path / "run.jsonl"
    first, second = tmp_path / "first.yaml", tmp_path / "second.yaml"
    base = ["architect", str(SEED_PATH), "--out"]
    record = [*base, str(first), "--model", "architect-test:good", "--record", str(recording)]
    assert CliRunner().invoke(cli, record).exit_code == 0
    replay = [*base, str(second), "--model", f"replay:{recording}"]
    result = CliRunner().invoke(cli, replay)
    assert result.exit_code == 0, result.output
    assert first.read_bytes() == second.read_bytes()


def test_cli_killed_run_resumes_after_the_last_accepted_stage(
    cli: click.Group, travel: DomainSpec, tmp_path: Path
) -> None:
    plan, wiki, tables, rules = good_script(travel)
    _SCRIPTS["resume"] = [plan, wiki, tables, ProviderError("connection reset")]
    out = tmp_path / "spec.yaml"
    base = ["architect", str(SEED_PATH), "--out", str(out), "--model", "architect-test:resume"]
    died = CliRunner().invoke(cli, base)
    assert died.exit_code != 0 and not out.exists()
    stored = sorted(p.name for p in (tmp_path / "spec.yaml.run").iterdir())
    assert stored == [
        "corporate_travel.plan.json",
        "corporate_travel.tables.json",
        "corporate_travel.wiki.json",
        "run-manifest.json",
    ]
    # the rerun asks only for the rules: the script holds nothing else
    _SCRIPTS["resume"] = [rules]
    result = CliRunner().invoke(cli, [*base, "--json"])
    assert result.exit_code == 0, result.output
    resumed = json.loads(result.stdout)
    reference = tmp_path / "reference.yaml"
    args = ["architect", str(SEED_PATH), "--out", str(reference), "--model", "architect-test:good"]
    done = CliRunner().invoke(cli, [*args, "--json"])
    assert out.read_bytes() == reference.read_bytes()
    # the restored stages keep their rounds and costs: the report is the uninterrupted one's
    assert {**resumed, "out": None} == {**json.loads(done.stdout), "out": None}
    _SCRIPTS["resume"] = []
    plain = CliRunner().invoke(cli, base)
    assert plain.exit_code == 0 and plain.output.count("[resumed]") == 4


def test_cli_a_stage_cut_between_rounds_starts_again_from_the_cache(
    cli: click.Group, travel: DomainSpec, tmp_path: Path
) -> None:
    script = compile_error_script(travel, (">= {threshold}", ">= >= {threshold}"))
    _SCRIPTS["cut"] = [*script[:4], ProviderError("connection reset")]
    cache, out = tmp_path / "cache", tmp_path / "spec.yaml"
    base = ["architect", str(SEED_PATH), "--out", str(out), "--cache-dir", str(cache)]
    base += ["--model", "architect-test:cut"]
    assert CliRunner().invoke(cli, base).exit_code != 0
    # plan, wiki and tables come from the run directory; the rules' first round from the cache
    _SCRIPTS["cut"] = [script[4]]
    result = CliRunner().invoke(cli, [*base, "--json"])
    assert result.exit_code == 0, result.output
    cost = json.loads(result.stdout)["cost"]
    assert (cost["total"]["turns"], cost["total"]["cached_turns"]) == (4, 1)
    assert (cost["architect.rules"]["turns"], cost["architect.rules"]["cached_turns"]) == (1, 1)
    assert load_spec(out).model_copy(update={"name": "travel"}) == travel


def test_cli_refuses_a_rerun_with_other_settings(cli: click.Group, tmp_path: Path) -> None:
    out = tmp_path / "spec.yaml"
    base = ["architect", str(SEED_PATH), "--out", str(out), "--model", "architect-test:good"]
    assert CliRunner().invoke(cli, base).exit_code == 0
    refused = CliRunner().invoke(cli, [*base, "--rounds", "2"])
    assert refused.exit_code == 1
    assert "holds a different run of architect (config differs in rounds: was 3, now 2)" in (
        refused.output
    )
    elsewhere = [*base, "--rounds", "2", "--run-dir", str(tmp_path / "other")]
    assert CliRunner().invoke(cli, elsewhere).exit_code == 0


# -- (g) the stages on the pipeline: resume, refusal, byte-identity ----------------------------


class _Killed(BaseException):
    """Stands for the process being killed: nothing catches it."""


def _answered(provider: ScriptedProvider, killed: bool = False) -> int:
    """Model calls that returned an answer (a killed call returned none)."""
    return len(provider.requests) - int(killed)


def test_a_killed_run_resumes_after_the_last_accepted_stage_without_asking_again(
    travel: DomainSpec, seed: Seed, tmp_path: Path
) -> None:
    script = compile_error_script(travel, (">= {threshold}", ">= >= {threshold}"))
    uninterrupted = ScriptedProvider(script)
    reference = run_architect(seed, uninterrupted)
    run_dir = tmp_path / "run"
    for stop in range(4):  # killed while stage `stop` waits for the model, then resumed
        shutil.rmtree(run_dir, ignore_errors=True)
        calls = sum(len(s.rounds) for s in reference.report.stages[:stop])
        first = ScriptedProvider([*script[:calls], _Killed()])
        with pytest.raises(_Killed):
            run_architect(seed, first, run_dir=run_dir)
        rest = ScriptedProvider(script[calls:])
        resumed = run_architect(seed, rest, run_dir=run_dir)
        assert _answered(first, killed=True) + _answered(rest) == len(uninterrupted.requests)
        assert rest.requests == uninterrupted.requests[calls:]  # nothing asked twice
        assert resumed.spec_yaml == reference.spec_yaml
        assert resumed.report.to_json() == reference.report.to_json()
        assert resumed.report.resumed == list(("plan", "wiki", "tables", "rules")[:stop])
        assert resumed.artifacts() == reference.artifacts()
    files = sorted(p.name for p in run_dir.iterdir())
    assert files == [f"corporate_travel.{s}.json" for s in ("plan", "rules", "tables", "wiki")] + [
        "run-manifest.json"
    ]
    again = ScriptedProvider([])
    assert run_architect(seed, again, run_dir=run_dir).spec_yaml == reference.spec_yaml
    assert again.requests == []


def test_a_rerun_with_another_config_is_refused_naming_the_field(
    travel: DomainSpec, seed: Seed, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    run_architect(seed, ScriptedProvider(good_script(travel)), run_dir=run_dir, model="m1")
    other_seed = seed.model_copy(update={"context": seed.context + " Now with trains."})
    cases: list[tuple[Seed, dict[str, Any], str]] = [
        (seed, {"rounds": 2}, "rounds: was 3, now 2"),
        (seed, {"model": "m2"}, 'model: was "m1", now "m2"'),
        (seed, {"limits": PlanLimits(max_rules=80)}, "limits.max_rules"),
        (other_seed, {}, "config differs in seed"),
    ]
    for which, settings, says in cases:
        provider = ScriptedProvider(good_script(travel))
        with pytest.raises(RunConflict, match=re.escape(says)):
            run_architect(which, provider, run_dir=run_dir, **{"model": "m1", **settings})
        assert provider.requests == []


def test_replayed_kill_and_resume_gives_the_recorded_bytes(
    cli: click.Group, travel: DomainSpec, tmp_path: Path
) -> None:
    """A recorded CLI run, replayed with a kill after three answers and resumed, writes the
    spec the recorded run wrote."""
    recording, recorded = tmp_path / "run.jsonl", tmp_path / "recorded.yaml"
    _SCRIPTS["recorded"] = compile_error_script(travel, (">= {threshold}", "> >= {threshold}"))
    args = ["architect", str(SEED_PATH), "--out", str(recorded)]
    args += ["--model", "architect-test:recorded", "--record", str(recording)]
    assert CliRunner().invoke(cli, args).exit_code == 0
    register_provider("architect-budget", _budgeted)
    out = tmp_path / "replayed.yaml"
    base = ["architect", str(SEED_PATH), "--out", str(out), "--json"]
    base += ["--model", f"architect-budget:{recording}"]
    _BUDGET[:] = [3]
    assert CliRunner().invoke(cli, base).exit_code == 1
    _BUDGET[:] = [2]
    result = CliRunner().invoke(cli, base)
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == recorded.read_bytes()
    assert _BUDGET == [0] and len(recording.read_text().splitlines()) == 5


_BUDGET: list[int] = [0]


class _Budgeted:
    """A replay that fails once it has answered ``_BUDGET`` calls (a killed connection)."""

    def __init__(self, path: str) -> None:
        self.inner = ReplayProvider(path)
        self.name = self.inner.name

    async def generate(self, *args: Any, **kwargs: Any) -> Any:
        if _BUDGET[0] <= 0:
            raise ProviderError("the connection died")
        _BUDGET[0] -= 1
        return await self.inner.generate(*args, **kwargs)


def _budgeted(argument: str, **_: Any) -> _Budgeted:
    return _Budgeted(argument)
