"""Fidelity: a scripted simulator right on 80% of calls reports 0.8 within sampling error."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.env import Environment
from veritask.model import ScriptedProvider, register_provider
from veritask.rollout import TaskSource
from veritask.simulate import JUDGE_MARK, run_fidelity
from veritask.synth import generate

QUERY = {"rows": [], "total": 0, "limit": 20, "offset": 0}


def real_answers(source: TaskSource) -> list[tuple[str, Any]]:
    """Every witness call's real result, in replay order, as a simulator would write it."""
    out = []
    for package in source.packages:
        task = source.episode_task(package)
        with Environment(task.domain, task.origin) as env:
            for call in package.witness:
                result = env.call(call.tool, call.args)
                answer = {"ok": result.ok, "result": result.result}
                if result.error is not None:
                    answer = {"ok": False, "error": result.error.to_json()}
                out.append((call.tool, answer))
    return out


def noisy_simulator(truth: list[tuple[str, Any]], right: float, seed: int) -> Any:
    """Answers with the real result with probability ``right``, else flips accept/reject."""
    queue = list(truth)
    rng = random.Random(seed)

    def answer(messages: list[dict[str, Any]], _tools: Any) -> str:
        if messages[0]["content"].startswith(JUDGE_MARK):
            acted = '"tool_calls"' in messages[-1]["content"]
            return json.dumps({"task_success": acted, "confidence": 1.0})
        tool, real = queue.pop(0)
        if rng.random() < right:
            return json.dumps(real)
        if real["ok"]:
            error = {"code": "PREREQ_FAIL", "message": "no", "violated_rule": "X", "hint": ""}
            return json.dumps({"ok": False, "error": error})
        return json.dumps({"ok": True, "result": QUERY if tool.startswith("query_") else {}})

    return answer


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> TaskSource:
    root = tmp_path_factory.mktemp("fidelity") / "travel"
    generate("travel", 60, 4, root)
    return TaskSource.load(root)


def test_eighty_percent_right_reports_point_eight(source: TaskSource) -> None:
    truth = real_answers(source)
    provider = ScriptedProvider(noisy_simulator(truth, 0.8, 7))
    report = run_fidelity(source, provider, model="scripted", concurrency=1)
    n = report["calls"]
    assert n == len(truth) >= 150
    rate = report["overall"]["accept_reject"]["rate"]
    assert abs(rate - 0.8) <= 3 * math.sqrt(0.8 * 0.2 / n), rate
    for aspect in ("error_code", "rule", "fields", "values"):
        assert report["overall"][aspect]["rate"] == 1.0, aspect
    assert sum(row["calls"] for row in report["per_tool"].values()) == n
    judge = report["judge"]
    assert judge["judged"] == 2 * report["tasks"]
    assert judge["recall"] is not None and judge["precision"] is not None


def test_a_perfect_simulator_agrees_everywhere(source: TaskSource, tmp_path: Path) -> None:
    truth = real_answers(source)
    register_provider(
        "perfectsim", lambda _a, **_o: ScriptedProvider(noisy_simulator(truth, 1.0, 0))
    )
    out = tmp_path / "fid.jsonl"
    args = ["simulate", "fidelity", str(source.root), "--model", "perfectsim", "--concurrency", "1"]
    result = CliRunner().invoke(cli, [*args, "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["overall"]["accept_reject"]["rate"] == 1.0
    assert len(out.read_text().splitlines()) == report["tasks"]
    again = CliRunner().invoke(cli, [*args, "--out", str(out), "--json"])
    assert again.exit_code == 0 and json.loads(again.output) == report  # resumed: no model call
