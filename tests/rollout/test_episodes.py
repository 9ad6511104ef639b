"""End-to-end rollouts offline: oracle, noop and random agents with the scripted user."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from veritask.agent import ScriptedUser
from veritask.agent._llm import LLMAgent, LLMUser
from veritask.model import get_provider
from veritask.pipeline import RunConflict, run_batch
from veritask.rollout import (
    EpisodeLimits,
    RoleFactory,
    TaskSource,
    run_episode,
    summarize,
)
from veritask.synth import generate

DOMAINS = ["travel", "retail", "clinic", "registrar", "gym"]
BUILT = [*DOMAINS, "mock"]


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TaskSource]:
    root = tmp_path_factory.mktemp("rollouts")
    out = {}
    for domain in BUILT:
        generate(domain, 40, 2, root / domain)
        out[domain] = TaskSource.load(root / domain)
    return out


def _run(source: TaskSource, agent: str, **kw: Any) -> list[Any]:
    return asyncio.run(run_batch(source, RoleFactory(agent=agent), concurrency=4, **kw))


@pytest.mark.parametrize("domain", DOMAINS)
def test_oracle_with_scripted_user_passes_everything(
    sources: dict[str, TaskSource], domain: str
) -> None:
    trajectories = _run(sources[domain], "oracle")
    summary = summarize(trajectories, 1)
    assert summary["pass^1"] == 1.0, [t.task_id for t in trajectories if t.reward != 1.0]
    assert all(t.final_distance == 0 and t.stop_reason == "user_stop" for t in trajectories)


@pytest.mark.parametrize("domain", DOMAINS)
def test_noop_fails_every_non_refusal_task(sources: dict[str, TaskSource], domain: str) -> None:
    refusal = {p.id for p in sources[domain].packages if p.refusal}
    for traj in _run(sources[domain], "noop"):
        assert traj.steps == []
        if traj.task_id in refusal:
            assert traj.reward == 1.0  # declining is the right answer
        else:
            assert traj.reward == 0.0 and traj.final_distance > 0


def test_random_lands_strictly_between(sources: dict[str, TaskSource]) -> None:
    trajectories = [t for d in DOMAINS for t in _run(sources[d], "random")]
    score = summarize(trajectories, 1)["pass^1"]
    assert 0.0 < score < 1.0
    assert any(step.writes for t in trajectories for step in t.steps)


def test_pass_hat_k_over_trials(sources: dict[str, TaskSource]) -> None:
    source = TaskSource(sources["travel"].root, sources["travel"].packages[:5])
    trajectories = _run(source, "oracle", trials=3)
    summary = summarize(trajectories, 3)
    assert summary["tasks"] == 5 and summary["trials"] == 3
    assert summary["pass^1"] == summary["pass^3"] == 1.0
    assert {row["successes"] for row in summary["per_task"]} == {3}


def test_batch_resumes_by_task_trial_seed(sources: dict[str, TaskSource], tmp_path: Path) -> None:
    out = tmp_path / "traj.jsonl"
    full = sources["travel"]
    first = TaskSource(full.root, full.packages[:4])
    _run(first, "oracle", out=out)
    with out.open("a") as fh:
        fh.write('{"task_id": "torn')  # a run killed mid-write
    seen: list[str] = []
    rest = TaskSource(full.root, full.packages[:8])
    result = asyncio.run(
        run_batch(
            rest, RoleFactory(agent="oracle"), out=out, progress=lambda t: seen.append(t.task_id)
        )
    )
    assert len(result) == 8
    assert seen == [p.id for p in full.packages[4:8]] or sorted(seen) == sorted(
        p.id for p in full.packages[4:8]
    )
    lines = out.read_text().splitlines()
    assert len(lines) == 8 and all(json.loads(line)["task_id"] for line in lines)


def test_llm_agent_recovers_from_a_malformed_call(sources: dict[str, TaskSource]) -> None:
    """A scripted model speaking the real wire format: a malformed tool call comes back as a
    structured error, and the agent's corrected calls (the witness) then solve the task."""
    source = sources["travel"]
    pkg = next(p for p in source.packages if not p.refusal)
    task = source.episode_task(pkg)
    script: list[Any] = [{"tool_calls": [{"name": pkg.witness[0].tool, "arguments": "{not json"}]}]
    script += [{"tool_calls": [{"name": c.tool, "arguments": c.args}]} for c in pkg.witness]
    script += ["Done."] * 10
    agent = LLMAgent(get_provider("scripted", script=script))
    traj = asyncio.run(
        run_episode(task, agent, ScriptedUser(pkg), limits=EpisodeLimits(max_turns=10))
    )
    assert traj.steps[0].args is None and not traj.steps[0].ok
    assert traj.steps[0].error is not None and traj.steps[0].error["code"] == "INVALID_ARGUMENTS"
    assert traj.final_distance == 0
    assert traj.steps[-1].distance == 0


def test_llm_user_stops(sources: dict[str, TaskSource]) -> None:
    source = sources["travel"]
    pkg = source.packages[0]
    task = source.episode_task(pkg)
    user = LLMUser(
        get_provider("scripted", script=["Hi, I need help with my trip.", "###STOP###"]), pkg
    )
    agent = LLMAgent(get_provider("scripted", script=["Sure, what do you need?"]))
    traj = asyncio.run(run_episode(task, agent, user))
    assert traj.stop_reason == "user_stop"
    assert [m["role"] for m in traj.messages] == ["system", "user", "assistant"]


def test_a_failing_model_is_recorded_not_raised(sources: dict[str, TaskSource]) -> None:
    source = sources["travel"]
    pkg = source.packages[0]
    agent = LLMAgent(get_provider("scripted", script=[]))
    traj = asyncio.run(run_episode(source.episode_task(pkg), agent, ScriptedUser(pkg)))
    assert traj.stop_reason == "agent_error" and traj.error and "Script" in traj.error


def test_calls_of_one_message_share_its_turn(sources: dict[str, TaskSource]) -> None:
    source = sources["travel"]
    pkg = source.packages[0]
    first = {"name": "query_users", "arguments": {"id": pkg.user_profile.user_id}}
    agent = LLMAgent(
        get_provider("scripted", script=[{"tool_calls": [first, first]}, "Done."] + ["Done."] * 10)
    )
    traj = asyncio.run(run_episode(source.episode_task(pkg), agent, ScriptedUser(pkg)))
    assert traj.steps[0].turn == traj.steps[1].turn
    assert traj.messages[traj.steps[0].turn]["role"] == "assistant"
    assert len(traj.messages[traj.steps[0].turn]["tool_calls"]) == 2


def test_another_agent_into_the_same_file_is_refused(
    sources: dict[str, TaskSource], tmp_path: Path
) -> None:
    out = tmp_path / "traj.jsonl"
    source = TaskSource(sources["mock"].root, sources["mock"].packages[:3])
    _run(source, "oracle", out=out)
    before = out.read_bytes()
    with pytest.raises(RunConflict) as caught:
        _run(source, "noop", out=out)
    assert 'agent: was "oracle", now "noop"' in str(caught.value)
    assert set(caught.value.fields) == {"agent"}
    with pytest.raises(RunConflict, match="seed: was 0, now 1"):
        _run(source, "oracle", out=out, seed=1)
    seen: list[str] = []
    again = _run(source, "oracle", out=out, progress=lambda t: seen.append(t.task_id))
    assert seen == [] and len(again) == 3 and out.read_bytes() == before


class _KilledRoles(RoleFactory):
    """Roles that stop the batch after ``left`` episodes (a kill, without sleeping)."""

    left: int = 0

    def build(self, task: Any, trial: int, seed: int) -> Any:
        if self.left == 0:
            raise KeyboardInterrupt
        self.left -= 1
        return super().build(task, trial, seed)


def test_an_interrupted_rollout_resumes_to_the_same_file(
    sources: dict[str, TaskSource], tmp_path: Path
) -> None:
    source = TaskSource(sources["mock"].root, sources["mock"].packages[:6])
    whole, killed = tmp_path / "whole.jsonl", tmp_path / "killed.jsonl"
    _run(source, "oracle", out=whole, trials=2)
    roles = _KilledRoles(agent="oracle")
    roles.left = 5
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(run_batch(source, roles, trials=2, concurrency=1, out=killed))
    assert len(killed.read_text().splitlines()) == 5
    seen: list[str] = []
    _run(source, "oracle", out=killed, trials=2, progress=lambda t: seen.append(t.task_id))
    assert len(seen) == 7
    assert killed.read_bytes() == whole.read_bytes()


def test_cli_rollout_refuses_another_agent(sources: dict[str, TaskSource], tmp_path: Path) -> None:
    from click.testing import CliRunner

    from veritask._cli.main import cli

    out = str(tmp_path / "t.jsonl")
    root = str(sources["mock"].root)
    runner = CliRunner()
    first = runner.invoke(cli, ["rollout", root, "--agent", "oracle", "--limit", "2", "--out", out])
    assert first.exit_code == 0, first.output
    second = runner.invoke(cli, ["rollout", root, "--agent", "noop", "--limit", "2", "--out", out])
    assert second.exit_code == 1
    assert 'config differs in agent: was "oracle", now "noop"' in second.output
    again = runner.invoke(cli, ["rollout", root, "--agent", "oracle", "--out", out])
    assert again.exit_code == 0 and "trajectories" in again.output
