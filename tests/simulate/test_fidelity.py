"""Fidelity: a scripted simulator right on 80% of calls reports 0.8 within sampling error, on the
certified witnesses and on the faithful agent's trajectories."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.env import CompiledDomain, Environment, ToolResult
from veritask.model import ScriptedProvider, register_provider
from veritask.rollout import TaskSource
from veritask.simulate import (
    JUDGE_MARK,
    SimSession,
    compare,
    observation,
    observation_payload,
    run_fidelity,
)
from veritask.synth import generate

SEEDS = range(4)
ACTION = "Action to simulate:\n"
HISTORY = "Previous actions and observations:\n"


def _answer(result: ToolResult) -> dict[str, Any]:
    if result.error is not None:
        return {"ok": False, "error": result.error.to_json()}
    return {"ok": True, "result": result.result}


def _wrong(real: ToolResult, tool: str, draw: int) -> dict[str, Any]:
    """A wrong answer, of one of several kinds (never a right one)."""
    if real.error is not None:
        error = real.error.to_json()
        if draw % 3 == 0:
            return {"ok": True, "result": {"rows": [], "total": 0, "limit": 20, "offset": 0}}
        key = "code" if draw % 3 == 1 else "violated_rule"
        return {"ok": False, "error": {**error, key: f"{error[key]}_WRONG"}}
    if draw % 2 == 0:
        error = {"code": "PREREQ_FAIL", "message": "no", "violated_rule": "X", "hint": ""}
        return {"ok": False, "error": error}
    result = real.result
    if isinstance(result, dict) and tool.startswith("query_"):
        return {"ok": True, "result": {**result, "total": int(result.get("total") or 0) + 1}}
    return {"ok": True, "result": {"simulated": tool}}


@dataclass
class NoisySimulator:
    """Runs each asked call on the real environment (after the history it is shown), then
    answers right with probability ``right`` (a hash of the request and the seed decides)."""

    states: dict[tuple[str, str], tuple[CompiledDomain, bytes]]
    right: float
    seed: int
    verdicts: list[bool] = field(default_factory=list)

    def __call__(self, messages: list[dict[str, Any]], _tools: Any) -> str:
        system, user = messages[0]["content"], messages[-1]["content"]
        if system.startswith(JUDGE_MARK):
            acted = '"tool_calls"' in user
            return json.dumps({"task_success": acted, "confidence": 1.0})
        goal, rest = user.split(HISTORY)
        history_text, action_text = rest.split("\n\n" + ACTION)
        domain, origin = self.states[(system, goal)]
        action = json.loads(action_text)
        with Environment(domain, origin) as env:
            for call in json.loads(history_text):
                env.call(call["tool"], call["arguments"])
            real = env.call(action["tool"], action["arguments"])
        digest = hashlib.sha256(f"{self.seed}\n{system}\n{user}".encode()).digest()
        is_right = int.from_bytes(digest[:8], "big") < self.right * 2**64
        self.verdicts.append(is_right)
        return json.dumps(_answer(real) if is_right else _wrong(real, action["tool"], digest[8]))


def states(source: TaskSource) -> dict[tuple[str, str], tuple[CompiledDomain, bytes]]:
    """Each task's simulator prompt (system text, goal line) -> its domain and start state."""
    out: dict[tuple[str, str], tuple[CompiledDomain, bytes]] = {}
    for package in source.packages:
        task = source.episode_task(package)
        session = SimSession(package, task.domain, task.origin, ScriptedProvider([]))
        system, user = (m["content"] for m in session._prompt("t", {}))
        key = (system, user.split(HISTORY)[0])
        assert out.get(key, (task.domain, task.origin))[1] == task.origin, "ambiguous prompt"
        out[key] = (task.domain, task.origin)
    return out


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> TaskSource:
    root = tmp_path_factory.mktemp("fidelity") / "travel"
    generate("travel", 40, 4, root)
    return TaskSource.load(root)


@pytest.mark.parametrize("seed", SEEDS)
def test_eighty_percent_right_reports_point_eight(source: TaskSource, seed: int) -> None:
    simulator = NoisySimulator(states(source), 0.8, seed)
    report = run_fidelity(source, ScriptedProvider(simulator), model="scripted", concurrency=1)
    n = report["calls"]
    assert n == len(simulator.verdicts) >= 150
    assert report["unusable_observations"] == 0
    overall = report["overall"]["call"]
    # The report counts exactly the calls the simulator answered right ...
    assert overall["agree"] == sum(simulator.verdicts) and overall["total"] == n
    # ... and a simulator right with probability 0.8 per call is within 3 binomial sigmas.
    assert abs(overall["rate"] - 0.8) <= 3 * math.sqrt(0.8 * 0.2 / n), overall["rate"]
    replays = report["per_replay"]
    assert set(replays) == {"witness", "faithful"}
    assert replays["witness"]["calls"] + replays["faithful"]["calls"] == n
    assert replays["faithful"]["calls"] > replays["witness"]["calls"]  # reads, retries
    assert sum(row["calls"] for row in report["per_tool"].values()) == n
    for row in replays.values():
        sigma = math.sqrt(0.8 * 0.2 / row["calls"])
        assert abs(row["call"]["rate"] - 0.8) <= 4 * sigma


def test_the_judge_is_scored_per_episode(source: TaskSource) -> None:
    simulator = NoisySimulator(states(source), 1.0, 0)
    report = run_fidelity(source, ScriptedProvider(simulator), model="scripted", concurrency=2)
    tasks = report["tasks"]
    assert report["overall"]["call"]["rate"] == 1.0
    assert all(report["overall"][a]["rate"] == 1.0 for a in ("error_code", "rule", "values"))
    faithful = report["faithful"]
    assert faithful["episodes"] == tasks and faithful["solved"] >= tasks - 1
    judge = report["judge"]
    assert judge["judged"] == 3 * tasks
    per = judge["per_episode"]
    assert per["witness"]["recall"] == 1.0 and per["witness"]["judged"] == tasks
    no_action = per["no_action"]["confusion"]
    untouched = sum(1 for p in source.packages if not p.witness or p.refusal)
    assert no_action["tp"] == no_action["fp"] == 0  # the scripted judge: no call, no success
    assert no_action["fn"] <= untouched and no_action["tn"] + no_action["fn"] == tasks
    assert per["faithful"]["confusion"]["tp"] == faithful["solved"]
    confusion = judge["confusion"]
    assert judge["precision"] == confusion["tp"] / (confusion["tp"] + confusion["fp"])
    assert judge["recall"] == confusion["tp"] / (confusion["tp"] + confusion["fn"])


def test_compare_names_each_aspect() -> None:
    from veritask.domains import load_domain
    from veritask.simulate import catalog_from_spec

    catalog = catalog_from_spec(load_domain("mock"))
    query = {"rows": [{"id": 1}], "total": 1, "limit": 20, "offset": 0}
    real = ToolResult(tool="query_books", ok=True, result=query)
    same, _ = observation("query_books", catalog.get("query_books"), json.dumps(_answer(real)))
    assert compare(real, same) == {
        "call": True,
        "accept_reject": True,
        "fields": True,
        "values": True,
    }
    other = {**query, "total": 2}
    diff, _ = observation("query_books", None, json.dumps({"ok": True, "result": other}))
    assert compare(real, diff) == {
        "call": False,
        "accept_reject": True,
        "fields": True,
        "values": False,
    }
    assert observation_payload(real) == query


def test_the_cli_reports_and_resumes(source: TaskSource, tmp_path: Path) -> None:
    simulator = NoisySimulator(states(source), 1.0, 0)
    register_provider("perfectsim", lambda _a, **_o: ScriptedProvider(simulator))
    out = tmp_path / "fid.jsonl"
    args = ["simulate", "fidelity", str(source.root), "--model", "perfectsim", "--limit", "8"]
    result = CliRunner().invoke(cli, [*args, "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["tasks"] == 8 and report["overall"]["accept_reject"]["rate"] == 1.0
    assert len(out.read_text().splitlines()) == report["tasks"]
    asked = len(simulator.verdicts)
    again = CliRunner().invoke(cli, [*args, "--out", str(out), "--json"])
    assert again.exit_code == 0 and json.loads(again.output) == report
    assert len(simulator.verdicts) == asked  # resumed: no model call
    table = CliRunner().invoke(cli, [*args, "--replay", "witness"])
    assert table.exit_code == 0, table.output
    assert "witness" in table.output and "faithful" not in table.output.split("judge")[0]
