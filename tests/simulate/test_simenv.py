"""The simulated environment: scripted simulator and judge, through the episode loop and eval."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.agent import OracleAgent, ScriptedUser
from veritask.model import ScriptedProvider, register_provider
from veritask.rollout import TaskSource, run_episode
from veritask.simulate import JUDGE_MARK, SimSession, catalog_from_spec, observation
from veritask.synth import generate


def _query_result() -> dict[str, Any]:
    return {"rows": [], "total": 0, "limit": 20, "offset": 0}


def simulator(success: bool) -> Any:
    """A scripted model: a well-formed observation per action, a fixed verdict per episode."""

    def answer(messages: list[dict[str, Any]], _tools: Any) -> str:
        if messages[0]["content"].startswith(JUDGE_MARK):
            return json.dumps({"reasoning": "r", "task_success": success, "confidence": 0.9})
        action = json.loads(messages[-1]["content"].split("Action to simulate:\n")[1])
        if action["tool"].startswith("query_"):
            return "```json\n" + json.dumps({"ok": True, "result": _query_result()}) + "\n```"
        return json.dumps({"ok": True, "result": {"id": 1}})

    return answer


register_provider("simyes", lambda _a, **_o: ScriptedProvider(simulator(True)))
register_provider("simno", lambda _a, **_o: ScriptedProvider(simulator(False)))


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sim") / "mock"
    generate("mock", 6, 1, root)
    return root


@pytest.mark.parametrize(("scheme", "score"), [("simyes", 1.0), ("simno", 0.0)])
def test_a_simulated_episode_runs_through_eval(
    dataset: Path, tmp_path: Path, scheme: str, score: float
) -> None:
    out = tmp_path / "t.jsonl"
    args = ["eval", str(dataset), "--agent", "oracle", "--env-model", scheme, "--json"]
    result = CliRunner().invoke(cli, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["pass^1"] == score
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 6 and all(r["reward_breakdown"] == {"judge": score} for r in rows)
    witness_calls = sum(len(p.witness) for p in TaskSource.load(dataset).packages)
    assert sum(len(r["steps"]) for r in rows) == witness_calls
    manifest = json.loads((tmp_path / "t.jsonl.run.json").read_text())
    assert manifest["config"]["environment"] == f"simulated:{scheme}"


def test_the_session_speaks_the_episode_protocol(dataset: Path) -> None:
    source = TaskSource.load(dataset)
    package = next(p for p in source.packages if p.witness)
    task = source.episode_task(package)
    provider = ScriptedProvider(simulator(True))
    session = SimSession(package, task.domain, task.origin, provider, target=task.target)
    traj = asyncio.run(
        run_episode(task, OracleAgent(package.witness), ScriptedUser(package), session=session)
    )
    assert traj.reward == 1.0 and len(traj.steps) == len(package.witness)
    system = provider.requests[0]["messages"][0]["content"]
    assert "Testbed data" in system and '"members"' in system
    assert session.unusable == 0 and session.usage.calls == len(package.witness) + 1


def test_simulated_observations_are_checked_and_repaired() -> None:
    from veritask.domains import load_domain

    catalog = catalog_from_spec(load_domain("mock"))
    tool = catalog.get("query_books")
    ok, why = observation(
        "query_books",
        tool,
        '{"ok": true, "result": {"rows": [], "total": "3", "limit": 20, "offset": 0,}',
    )
    assert why is None and ok.ok and ok.result["total"] == 3
    bad, why = observation("query_books", tool, '{"ok": true, "result": {"rows": []}}')
    assert not bad.ok and bad.error is not None and bad.error.code == "SIMULATION_ERROR"
    assert why is not None and "total" in why
    err, why = observation(
        "insert_loans",
        catalog.get("insert_loans"),
        '{"ok": false, "error": {"code": "PREREQ_FAIL", "violated_rule": "MEMBER_ACTIVE"}}',
    )
    assert why is None and err.error is not None and err.error.violated_rule == "MEMBER_ACTIVE"
    junk, why = observation("query_books", tool, "I cannot do that")
    assert not junk.ok and why is not None
