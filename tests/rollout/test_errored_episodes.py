"""Episodes that error (a role raises) are reported apart, never scored, and retried on resume."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from veritask.agent import NoopAgent, OracleAgent, ScriptedUser
from veritask.agent._llm import LLMAgent, LLMUser
from veritask.model import ScriptedProvider, get_provider
from veritask.model import _registry as registry
from veritask.model._openai import OpenAIProvider
from veritask.pipeline import errors_path, run_rollout
from veritask.rollout import RoleFactory, TaskSource, play_episode, summarize
from veritask.simulate import SimSession
from veritask.synth import generate

DEAD_URL = "http://dead.test/v1"


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> TaskSource:
    root = tmp_path_factory.mktemp("errored") / "mock"
    generate("mock", 4, 3, root)
    return TaskSource.load(root)


def refusing_transport(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("connection refused", request=request)


def dead_provider(model: str, **_options: Any) -> OpenAIProvider:
    """The real provider and SDK over a transport that refuses every connection."""
    client = httpx.AsyncClient(transport=httpx.MockTransport(refusing_transport))
    return OpenAIProvider(model, base_url=DEAD_URL, http_client=client, connect_delay=0.0)


@pytest.fixture
def dead_scheme(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(registry._FACTORIES, "deadend", dead_provider)
    return "deadend:m"


class FlakyRoles(RoleFactory):
    """The oracle, except on the doomed tasks, where the agent's model is unreachable."""

    doomed: frozenset[str] = frozenset()

    def build(self, task: Any, trial: int, seed: int) -> Any:
        agent, user = super().build(task, trial, seed)
        if task.package.id in self.doomed:
            agent = LLMAgent(get_provider("deadend:m"))
        return agent, user


def rollout(source: TaskSource, roles: RoleFactory, out: Path, seen: list[str]) -> Any:
    return asyncio.run(
        run_rollout(
            source, roles, concurrency=2, out=out, progress=lambda t: seen.append(t.task_id)
        )
    )


def test_an_errored_episode_is_kept_apart_and_retried_on_resume(
    source: TaskSource, dead_scheme: str, tmp_path: Path
) -> None:
    doomed = source.packages[1].id
    roles = FlakyRoles(agent="oracle")
    roles.doomed = frozenset({doomed})
    out, clean = tmp_path / "t.jsonl", tmp_path / "clean.jsonl"
    seen: list[str] = []
    report = rollout(source, roles, out, seen)
    assert len(seen) == 4 and len(report.trajectories) == 3
    (errored,) = report.errors
    failure = errored.failure
    assert errored.trajectory.task_id == doomed and failure is not None
    assert (failure.role, failure.kind, failure.base_url, failure.model) == (
        "agent",
        "connection",
        DEAD_URL,
        "m",
    )
    assert doomed not in out.read_text() and len(out.read_text().splitlines()) == 3
    (line,) = errors_path(out).read_text().splitlines()
    assert json.loads(line)["task_id"] == doomed and json.loads(line)["kind"] == "connection"
    summary = summarize(report.trajectories, 1, report.errors)
    assert (summary["scored"], summary["errors"], summary["pass^1"]) == (3, 1, 1.0)
    assert summary["first_error"]["base_url"] == DEAD_URL

    seen.clear()
    again = rollout(source, RoleFactory(agent="oracle"), out, seen)
    assert seen == [doomed] and again.errors == [] and len(again.trajectories) == 4
    assert not errors_path(out).exists()
    rollout(source, RoleFactory(agent="oracle"), clean, [])
    assert out.read_bytes() == clean.read_bytes()


def test_an_old_errored_line_is_not_taken_as_done(source: TaskSource, tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    rollout(source, RoleFactory(agent="oracle"), out, [])
    lines = out.read_text().splitlines()
    broken = json.loads(lines[0]) | {"stop_reason": "agent_error", "error": "ProviderError: x"}
    out.write_text("\n".join([json.dumps(broken), *lines[1:]]) + "\n")
    seen: list[str] = []
    rollout(source, RoleFactory(agent="oracle"), out, seen)
    assert seen == [source.packages[0].id]


def test_a_rejected_tool_call_is_behaviour_and_is_scored(source: TaskSource) -> None:
    pkg = source.packages[0]
    bad = {"name": "no_such_tool", "arguments": {}}
    agent = LLMAgent(get_provider("scripted", script=[{"tool_calls": [bad]}] + ["Done."] * 20))
    outcome = asyncio.run(play_episode(source.episode_task(pkg), agent, ScriptedUser(pkg)))
    assert outcome.failure is None and outcome.scored
    assert outcome.trajectory.steps[0].ok is False
    assert outcome.trajectory.stop_reason != "agent_error"


def test_a_failing_user_simulator_is_a_user_failure(source: TaskSource) -> None:
    pkg = source.packages[0]
    user = LLMUser(get_provider("scripted", script=[]), pkg)
    outcome = asyncio.run(play_episode(source.episode_task(pkg), NoopAgent(), user))
    assert outcome.failure is not None
    assert (outcome.failure.role, outcome.failure.kind) == ("user", "script")
    assert outcome.trajectory.stop_reason == "agent_error"


@pytest.mark.parametrize("agent", ["oracle", "noop"])
def test_a_failing_simulator_or_judge_is_an_environment_failure(
    source: TaskSource, agent: str
) -> None:
    """The oracle's tool calls reach the simulator; the noop agent's episode reaches the judge."""
    pkg = next(p for p in source.packages if p.witness)
    task = source.episode_task(pkg)
    provider = ScriptedProvider(lambda _m, _t: TimeoutError("simulator timed out"))
    session = SimSession(pkg, task.domain, task.origin, provider, target=task.target)
    player = OracleAgent(pkg.witness) if agent == "oracle" else NoopAgent()
    outcome = asyncio.run(play_episode(task, player, ScriptedUser(pkg), session=session))
    assert outcome.failure is not None
    assert (outcome.failure.role, outcome.failure.kind) == ("environment", "timeout")
    assert outcome.trajectory.task_id == pkg.id and not outcome.scored


def test_past_max_errors_the_run_stops_starting_episodes(
    source: TaskSource, dead_scheme: str, tmp_path: Path
) -> None:
    roles = FlakyRoles(agent="oracle")
    roles.doomed = frozenset({source.packages[0].id})
    out = tmp_path / "t.jsonl"
    report = asyncio.run(run_rollout(source, roles, concurrency=1, out=out, max_errors=0))
    assert (len(report.errors), report.not_run, report.trajectories) == (1, 3, [])
    seen: list[str] = []
    again = rollout(source, RoleFactory(agent="oracle"), out, seen)
    assert len(seen) == 4 and len(again.trajectories) == 4 and again.not_run == 0
