"""The blueprint DAG end to end on scripted answers: services, certification, kill and resume."""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from veritask._cli.blueprint_path_tasks import path_tasks, subsequence
from veritask._cli.blueprint_run_cmds import (
    generate_service_tasks,
    path_service_tasks,
    with_symbolic_fallback,
)
from veritask._cli.main import cli
from veritask.blueprint import (
    STAGES,
    Blueprint,
    BlueprintDag,
    DagConfig,
    Entity,
    StageNotReady,
    build_tool_graph,
    closed_world_problems,
    dag_status,
    dedupe_domains,
    stage_report,
    task_template,
)
from veritask.blueprint._dag_blueprint import fix_names, structure_errors
from veritask.blueprint._dag_schema import sanitize_entities
from veritask.env import example_coverage, run_spec_examples
from veritask.model import ModelOutput, ScriptedProvider, register_provider
from veritask.pipeline import RunConflict
from veritask.policy import load_spec
from veritask.task import check_dataset, load_dataset

sys.path.insert(0, str(Path(__file__).parent))
import dag_script

CONFIG = DagConfig(topics=tuple(dag_script.TOPICS), batch=4)


class Killed(Exception):
    """Stands for kill -9 at a model call."""


class KillingProvider:
    """Answers from the script, and dies before its call number ``kill_at``."""

    def __init__(self, kill_at: int | None = None) -> None:
        self.inner = ScriptedProvider(dag_script.answer)
        self.name, self.model = "scripted", "scripted"
        self.kill_at = kill_at

    @property
    def calls(self) -> int:
        return len(self.inner.requests)

    async def generate(
        self,
        messages: list[dict[str, Any]],
        tools: Any = None,
        config: Any = None,
        sample_index: int = 0,
    ) -> ModelOutput:
        if self.kill_at is not None and self.calls + 1 >= self.kill_at:
            raise Killed(f"killed at call {self.calls + 1}")
        return await self.inner.generate(messages, tools, config, sample_index)


def _run(out: Path, provider: Any, **kwargs: Any) -> BlueprintDag:
    dag = BlueprintDag(out, CONFIG, provider, "scripted", make_tasks=path_service_tasks)
    dag.run()
    return dag


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "cache" not in p.relative_to(root).parts
    }


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    out = tmp_path_factory.mktemp("dag") / "run"
    provider = KillingProvider()
    _run(out, provider)
    return out, provider.calls


def test_dedupe_by_meaning() -> None:
    kept, dropped = dedupe_domains(
        [
            "course_registration",
            "Course Registrations",
            "tutoring",
            "tutoring_service",
            "management",
            "a_b_c_d",
        ]
    )
    assert kept == ["course_registration", "tutoring"]
    assert [d["label"] for d in dropped] == [
        "Course Registrations",
        "tutoring_service",
        "management",
        "a_b_c_d",
    ]


def test_entities_sanitized() -> None:
    raw = [Entity.model_validate(e) for e in dag_script.ENTITIES]
    kept, notes = sanitize_entities(raw)
    names = [e.name for e in kept]
    assert "user_session" not in names and names[:2] == ["student", "course"]
    assert {"entity": "student", "reason": "student_id: renamed to student_id"} in notes
    assert not any(a.name in ("id", "student_id") for e in kept for a in e.attributes)
    patient = next(e for e in kept if e.name == "patient")
    assert "weight" not in [a.name for a in patient.attributes]  # a number without a range


def test_fixups_and_structure() -> None:
    kept, _ = sanitize_entities([Entity.model_validate(e) for e in dag_script.ENTITIES])
    fixed = fix_names(Blueprint.model_validate(dag_script.BOOKING), [e.name for e in kept])
    assert (fixed.name, fixed.core, fixed.peripherals) == (
        "class_booking",
        "member",
        ["fitness_class"],
    )
    assert fixed.policies[0].id == "PREMIUM_ONLY"
    assert structure_errors(fixed, "member", ["fitness_class"]) == []
    bad = fix_names(Blueprint.model_validate(dag_script.TEACHING), [e.name for e in kept])
    errors = structure_errors(bad, "instructor", ["fitness_class"])
    assert errors == [
        "relationship assignment: links payroll, which is not a peripheral of the blueprint"
    ]


def test_closed_world() -> None:
    kept, _ = sanitize_entities([Entity.model_validate(e) for e in dag_script.ENTITIES])
    entities = {e.name: e for e in kept}
    bp = Blueprint.model_validate(dag_script._program("has_insurance"))
    problems = closed_world_problems(bp, entities)
    assert problems == ["policy INSURED: names column patient.has_insurance, which does not exist"]
    assert (
        closed_world_problems(Blueprint.model_validate(dag_script._program("insured")), entities)
        == []
    )


def test_dag_compiles_three_certified_services(baseline: tuple[Path, int], tmp_path: Path) -> None:
    out, calls = baseline
    report = stage_report(out)
    stages = report["stages"]
    assert stages["domains"] == {"topics": 3, "proposed": 12, "kept": 8, "dropped": 4}
    assert stages["blueprints"]["accepted"] == 3 and stages["blueprints"]["rejected"] == 1
    assert stages["compile"] == {
        "compiled": 3,
        "rejected": 0,
        "fixed_by_rounds": 1,
        "rejections": [],
    }
    assert sum(report["model_requests"].values()) == calls == 25
    assert len(report["services"]) == 3
    for service in report["services"]:
        spec = load_spec(out / service["spec_path"])
        assert run_spec_examples(spec) == [] and example_coverage(spec) == []
    paths = stages["paths"]
    assert paths["topology_failures"] == 0 and paths["paths"] > 0
    assert paths["grounded"] == paths["kept"] + paths["filtered"] and paths["kept"] > 0
    failures = [paths[k] for k in ("policy_violation", "invalid_entity_data", "spec_bug")]
    assert sum(failures) == paths["filtered"]
    # every kept path's template was judged; the judge passed the grammar's templates
    assert paths["templates_judged"] == paths["kept"] >= paths["templates_passed"] > 0
    assert paths["soft_edges"] > 0
    tasks = stages["tasks"]
    # all from kept paths, and at least 80% of the 102 asked (AgentSkiller acceptance): the
    # one-open-signup service has open signups to finish, and its "join, then finish" path
    # (which could only undo itself) is filtered before the tasks stage
    assert tasks["tasks"] == tasks["certified"] == tasks["grounded"] == tasks["from_paths"]
    assert tasks["from_paths"] >= math.ceil(0.8 * 3 * CONFIG.tasks_per_service) == 82
    assert tasks["from_paths_share"] == 1.0 and tasks["fallback"] == 0
    assert report["counts"]["services"] == 3
    kept = {
        u["unit"]: {p["template"]: p["tools"] for p in u["kept_paths"]}
        for u in json.loads((out / "paths.json").read_text())["units"]
    }
    for unit in json.loads((out / "tasks.json").read_text())["units"]:
        check = check_dataset(out / unit["dataset"])
        assert check.certified == check.tasks == unit["tasks"] > 0 and check.ok
        packages = load_dataset(out / unit["dataset"])
        # every task names the kept path it was instantiated from, and its witness makes that
        # path's writes in the path's order
        assert sorted(unit["origins"]) == sorted(p.id for p in packages)
        for pkg in packages:
            tools = kept[unit["unit"]][unit["origins"][pkg.id]]
            writes = [t for t in tools if not t.startswith("query_")]
            made = [c.tool for c in pkg.witness if c.ok and not c.tool.startswith("query_")]
            assert subsequence(writes, made), (pkg.id, writes, made)


def test_kill_and_resume_repeats_no_call(baseline: tuple[Path, int], tmp_path: Path) -> None:
    out, calls = baseline
    points = sorted(random.Random(14).sample(range(1, calls + 1), 4))
    for kill_at in points:
        run = tmp_path / f"k{kill_at}"
        first = KillingProvider(kill_at)
        with pytest.raises(Killed):
            _run(run, first)
        (run / ".domains.json.1.2.tmp").write_text("a write cut before its rename")
        second = KillingProvider()
        _run(run, second)
        assert first.calls + second.calls == calls, kill_at
        assert _tree(run) == _tree(out), kill_at


def test_model_templates_and_judge_gate_the_kept_paths(tmp_path: Path) -> None:
    """LLM template mode: the model writes each kept path's template and judges it; only a
    passed template's path is a task skeleton."""
    config = DagConfig(topics=CONFIG.topics, batch=4, templates="model")
    provider = KillingProvider()
    BlueprintDag(tmp_path / "run", config, provider, "scripted").run(until="paths")
    report = stage_report(tmp_path / "run")
    paths = report["stages"]["paths"]
    assert paths["templates_judged"] == paths["kept"] > paths["templates_passed"] > 0
    modules = report["model_requests"]
    assert modules["paths"] == 2 * paths["kept"]  # a template and a verdict per kept path
    for unit in json.loads((tmp_path / "run" / "paths.json").read_text())["units"]:
        verdicts = {j["template"]: j["passed"] for j in unit["judge"]}
        assert all(v is not dag_script.judged_low(t) for t, v in verdicts.items())
        kept = [p["template"] for p in unit["kept_paths"]]
        assert kept == [t for t, v in verdicts.items() if v]
        # the model keeps the placeholders of a path that has any
        spec = load_spec(tmp_path / "run" / "services" / unit["unit"] / "spec.yaml")
        graph = build_tool_graph(spec)
        for path in unit["kept_paths"]:
            holes = any(task_template(spec, graph, path["tools"]).placeholders.values())
            assert path["author"] == "model" and ("<" in path["text"]) == holes
    with pytest.raises(ValueError, match="templates must be"):
        DagConfig(topics=("x",), templates="poetry")


def test_until_from_status_and_conflict(tmp_path: Path) -> None:
    out = tmp_path / "run"
    provider = KillingProvider()
    dag = BlueprintDag(out, CONFIG, provider, "scripted")
    with pytest.raises(StageNotReady):
        dag.run(start="graph")
    assert dag.run(until="entities") == ["domains", "entities"]
    states = {row["stage"]: row["state"] for row in dag_status(out)}
    assert states == {
        s: ("complete" if s in ("domains", "entities") else "waiting") for s in STAGES
    }
    assert dag.run(start="graph")[-1] == "tasks"
    assert stage_report(out)["stages"]["tasks"]["skipped"] == 3  # no task maker given
    other = DagConfig(topics=CONFIG.topics, batch=4, max_domains=5)
    with pytest.raises(RunConflict, match="max_domains"):
        BlueprintDag(out, other, KillingProvider(), "scripted").run()


def test_cli_run_and_status(tmp_path: Path) -> None:
    register_provider("dagscript", lambda _arg, **_kw: ScriptedProvider(dag_script.answer))
    seeds = tmp_path / "seeds.yaml"
    seeds.write_text("topics: [education, healthcare, fitness]\nbatch: 4\n")
    out = tmp_path / "run"
    args = ["blueprint", "run", str(seeds), "--model", "dagscript", "--out", str(out)]
    first = CliRunner().invoke(cli, [*args, "--until", "graph"])
    assert first.exit_code == 0, first.output
    status = CliRunner().invoke(cli, ["blueprint", "status", str(out)])
    assert "graph       complete 8/8 units" in status.output
    assert "outlines    waiting" in status.output
    rest = CliRunner().invoke(cli, [*args, "--from", "outlines", "--json"])
    assert rest.exit_code == 0, rest.output
    report = json.loads(rest.output)
    assert len(report["services"]) == 3
    assert report["this_run"] == {"model_calls": 12, "cached_calls": 0}
    again = CliRunner().invoke(cli, [*args, "--json"])
    assert json.loads(again.output)["this_run"] == {"model_calls": 0, "cached_calls": 0}


def test_kill_in_the_tasks_stage_resumes_to_the_same_bytes(
    baseline: tuple[Path, int], tmp_path: Path
) -> None:
    out, calls = baseline
    made: list[str] = []

    def dying(
        spec_path: Path, paths: list[dict[str, Any]], n: int, seed: int, data: Path
    ) -> dict[str, Any]:
        if made:  # the second service dies after its first unit of tasks is written
            path_tasks(spec_path, paths, 10, seed, data)
            raise Killed("killed in the tasks stage")
        made.append(spec_path.parent.name)
        return path_service_tasks(spec_path, paths, n, seed, data)

    run = tmp_path / "run"
    first = KillingProvider()
    with pytest.raises(Killed):
        BlueprintDag(run, CONFIG, first, "scripted", make_tasks=dying).run()
    assert any((run / "datasets").glob("*/parts/*"))  # a partial dataset is left behind
    second = KillingProvider()
    _run(run, second)
    assert first.calls == calls and second.calls == 0
    assert _tree(run) == _tree(out)


def test_symbolic_tasks_only_as_the_requested_fallback(
    baseline: tuple[Path, int], tmp_path: Path
) -> None:
    out, _ = baseline
    spec_path = next((out / "services").glob("*/spec.yaml"))
    made = with_symbolic_fallback(spec_path, [], 4, 0, tmp_path / "data")
    # no kept path: nothing is instantiated, and the fallback makes (and checks) the rest
    assert made["from_paths"] == 0 and made["fallback"] == made["tasks"] == 4
    assert made["certified"] == made["grounded"] == 4
    assert path_service_tasks(spec_path, [], 4, 0, tmp_path / "alone")["tasks"] == 0
    alone = generate_service_tasks(spec_path, [], 4, 0, tmp_path / "symbolic")
    assert alone["fallback"] == alone["tasks"] == 4 and alone["from_paths"] == 0
