"""Dual control offline: the user holds tools of their own, the agent asks, the user calls them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from veritask.agent import PAYLOAD, FaithfulAgent, ScriptedUser, flip_roles, wire_messages
from veritask.agent._llm import LLMAgent, LLMUser
from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment
from veritask.export import user_view
from veritask.model import get_provider
from veritask.policy import USER_TOOL_CODE, DomainSpec, spec_from_data, user_tool_names
from veritask.policy._dual import check_dual
from veritask.rollout import EpisodeLimits, TaskSource, run_episode
from veritask.task import EnvSession, TaskPackage, certify, report_dataset
from veritask.task._dual import user_calls

TELECOM = ("telecom", 60, 0)
"""The telecom dataset both the dual-control and the escalation tests read (made once)."""


@pytest.fixture(scope="module")
def source(generated: Callable[[str, int, int], Path]) -> TaskSource:
    return TaskSource.load(generated(*TELECOM))


@pytest.fixture(scope="module")
def domain() -> CompiledDomain:
    return CompiledDomain.from_spec(load_domain("telecom"))


def _dual(source: TaskSource) -> list[TaskPackage]:
    spec = load_domain("telecom")
    found = [p for p in source.packages if user_calls(p, spec)]
    assert found, "the telecom dataset has no task with a user-side call"
    return found


# -- the spec ---------------------------------------------------------------------------------


def test_the_users_tools_are_every_tool_of_a_user_side_table() -> None:
    spec = load_domain("telecom")
    assert user_tool_names(spec) == {"query_devices", "insert_devices", "update_devices"}
    assert user_tool_names(load_domain("gym")) == frozenset()


def _with(spec: DomainSpec, **fields: Any) -> list[str]:
    data = spec.model_dump(mode="json", exclude_defaults=True) | fields
    return [message for _, message in check_dual(DomainSpec.model_validate(data))]


def test_user_tools_and_escalation_that_name_nothing_are_reported() -> None:
    spec = load_domain("telecom")
    assert _with(spec) == []
    assert _with(spec, user_tools={"tables": ["phones"]}) == ["unknown table 'phones'"]
    assert _with(spec, user_tools={"tables": ["customers"]}) == [
        "the actor table cannot be on the user's side"
    ]
    assert _with(spec, user_tools={"tools": ["restart_phone"]}) == ["unknown tool 'restart_phone'"]
    bad_tool = {"tool": "query_plans", "reason": "reason", "reasons": [{"id": "X", "when": "x"}]}
    assert _with(spec, escalation=bad_tool) == ["'query_plans' is not a write tool of this spec"]
    bad_reason = {**bad_tool, "tool": "insert_handoffs", "reasons": [{"id": "LOST", "when": "x"}]}
    assert "'LOST' is not a value of reason" in _with(spec, escalation=bad_reason)[0]
    users = {**bad_tool, "tool": "update_devices"}
    assert "the hand-off tool is the agent's, not the user's" in _with(spec, escalation=users)


def test_a_spec_that_names_an_unknown_user_table_does_not_load() -> None:
    data = load_domain("telecom").model_dump(mode="json", exclude_defaults=True)
    data["user_tools"] = {"tables": ["phones"]}
    with pytest.raises(ValueError, match="unknown table 'phones'"):
        spec_from_data(data)


def test_the_policy_tells_the_agent_to_ask_and_when_to_hand_over() -> None:
    from veritask.policy import render_wiki

    text = render_wiki(load_domain("telecom"))
    assert "## The user's own tools" in text and "- `update_devices`" in text
    assert "## Handing over to a human agent" in text and "`ACCOUNT_SUSPENDED`" in text
    assert "## The user's own tools" not in render_wiki(load_domain("gym"))


# -- the session: same engine, two sides -------------------------------------------------------


def test_the_agent_cannot_call_the_users_tools(domain: CompiledDomain) -> None:
    with EnvSession(domain, domain.seed) as session:
        offered = {t["function"]["name"] for t in session.tools}
        assert not offered & user_tool_names(domain.spec)
        before = session.env.image()
        result = session.call("update_devices", {"id": 3, "roaming": 1})
        assert not result.ok and result.error is not None
        assert result.error.code == USER_TOOL_CODE
        assert session.env.image() == before  # refused before the database was touched


def test_the_users_calls_run_with_the_engines_guarantees(domain: CompiledDomain) -> None:
    with EnvSession(domain, domain.seed) as session:
        before = session.env.image()
        call = {
            "id": "u1",
            "function": {"name": "update_devices", "arguments": '{"id": 1, "roaming": 1}'},
        }
        message, refused = session.step(call, 3, by_user=True)
        assert not refused.ok and refused.error is not None
        assert refused.error.violated_rule == "ROAMING_NEEDS_COVER"
        assert session.env.image() == before  # the savepoint rolled the refusal back
        assert json.loads(message["content"])["error"]["code"] == "NOT_ENTITLED"
        ok = session.call("update_devices", {"id": 3, "roaming": 1}, by_user=True)
        assert ok.ok and ok.result["roaming"] == 1
        assert [s.by for s in session.steps] == ["user", "user"]
        assert session.steps[0].model_dump()["by"] == "user"
        changed = session.env.diff(session.env.snapshot().__class__(before, domain.layout))
        assert changed.distance == 2  # the old and the new devices row: tracked like any write


def test_agent_steps_serialize_as_before() -> None:
    from veritask.task import ToolStep

    step = ToolStep(turn=1, call_id="c", tool="query_plans", args={}, raw_arguments="{}", ok=True)
    assert "by" not in step.model_dump()


# -- episodes -----------------------------------------------------------------------------------


def test_faithful_agent_asks_and_the_scripted_user_calls(source: TaskSource) -> None:
    spec = load_domain("telecom")
    mine = user_tool_names(spec)
    for pkg in _dual(source)[:6]:
        task = source.episode_task(pkg)
        traj = asyncio.run(run_episode(task, FaithfulAgent(spec), ScriptedUser(pkg)))
        assert traj.final_distance == 0, pkg.id
        by_user = [s for s in traj.steps if s.by == "user"]
        assert by_user and {s.tool for s in by_user} <= mine
        assert all(s.by == "agent" for s in traj.steps if s.tool not in mine)
        # the agent's view: the user's words only, no user-side tool traffic
        seen = json.dumps(wire_messages(traj.messages))
        assert "tool_calls" not in json.dumps(
            [m for m in wire_messages(traj.messages) if m["role"] == "user"]
        )
        assert all(
            c["function"]["name"] not in mine
            for m in traj.messages
            for c in m.get("tool_calls") or []
        )
        assert "It shows:" in seen


def test_the_certificate_replays_both_sides(source: TaskSource) -> None:
    for pkg in _dual(source)[:5]:
        task = source.episode_task(pkg)
        env = Environment(task.domain, task.origin)
        assert certify(pkg, env, task.origin, task.target).certified
        # without the user's calls the witness no longer reaches s_target
        spec = load_domain("telecom")
        agent_only = [c for c in pkg.witness if c.tool not in user_tool_names(spec)]
        if any(c.ok and c.tool == "update_devices" for c in pkg.witness):
            assert not certify(agent_only, env, task.origin, task.target).certified


def test_oracle_asks_the_user_for_the_users_calls(source: TaskSource, tmp_path: Path) -> None:
    from veritask.agent import OracleAgent

    for pkg in _dual(source)[:4]:
        task = source.episode_task(pkg)
        oracle = OracleAgent(pkg.witness, user_tool_names(task.domain.spec))
        traj = asyncio.run(run_episode(task, oracle, ScriptedUser(pkg)))
        assert traj.final_distance == 0
        assert not any(s.error and s.error["code"] == USER_TOOL_CODE for s in traj.steps)


def test_llm_user_calls_its_tools_with_the_scripted_provider(source: TaskSource) -> None:
    pkg = next(
        p for p in _dual(source) if any(c.ok and c.tool == "update_devices" for c in p.witness)
    )
    task = source.episode_task(pkg)
    write = next(c for c in pkg.witness if c.ok and c.tool == "update_devices")
    user_provider = get_provider(
        "scripted",
        script=[
            "Hi, my phone needs a change.",
            {"tool_calls": [{"name": write.tool, "arguments": write.args}]},
            "Done, it worked.",
            "###STOP###",
        ],
    )
    tools = [t for t in task.domain.tools.values() if t.name in user_tool_names(task.domain.spec)]
    user = LLMUser(user_provider, pkg, tools=[t.openai_schema() for t in tools])
    agent = LLMAgent(get_provider("scripted", script=["Please change it on your phone."] * 3))
    traj = asyncio.run(run_episode(task, agent, user, limits=EpisodeLimits(max_turns=3)))
    assert [s.by for s in traj.steps] == ["user"] and traj.steps[0].ok
    assert "own" in user_provider.requests[0]["messages"][0]["content"]  # the tools rule
    assert user_provider.requests[1]["tools"]  # the schemas reach the model
    folded = traj.messages[3]
    assert folded["role"] == "user" and folded["content"] == "Done, it worked."
    assert PAYLOAD in folded and "tool_calls" not in folded
    # the agent's next request saw only the words
    agent_view = agent.provider.requests[-1]["messages"]  # type: ignore[attr-defined]
    assert not any(m.get("tool_calls") for m in agent_view if m["role"] == "user")


def test_user_sft_rows_carry_the_users_calls(source: TaskSource) -> None:
    spec = load_domain("telecom")
    pkg = _dual(source)[0]
    task = source.episode_task(pkg)
    traj = asyncio.run(run_episode(task, FaithfulAgent(spec), ScriptedUser(pkg)))
    view = user_view(traj, pkg)
    calls = [
        c for m in view.messages if m["role"] == "assistant" for c in m.get("tool_calls") or []
    ]
    assert calls and {c["function"]["name"] for c in calls} <= user_tool_names(spec)
    assert {t["function"]["name"] for t in view.tools} == user_tool_names(spec)
    assert any(m["role"] == "tool" for m in view.messages)
    assert view.steps and all(s.by == "user" for s in view.steps)
    assert "tools of your own" in view.messages[0]["content"]
    # a conversation without user tools flips as before
    assert flip_roles([{"role": "user", "content": "hi"}]) == [
        {"role": "assistant", "content": "hi"}
    ]


def test_report_counts_tasks_with_user_side_calls(source: TaskSource) -> None:
    report = report_dataset(source.root)
    dual = report["dual_control"]
    assert dual["user_tool_tasks"] == len(_dual(source))
    assert dual["user_calls"] >= dual["user_tool_tasks"]


def test_user_calls_past_the_limit_are_not_run_nor_shown(source: TaskSource) -> None:
    pkg = _dual(source)[0]
    task = source.episode_task(pkg)
    call = {"name": "query_devices", "arguments": {}}
    script: list[Any] = (
        ["Hi."] + [{"content": "checking", "tool_calls": [call]}] * 3 + ["###STOP###"]
    )
    user = LLMUser(get_provider("scripted", script=script), pkg, tools=[{"type": "function"}])
    agent = LLMAgent(get_provider("scripted", script=["What does your phone show?"] * 3))
    limits = EpisodeLimits(max_turns=2, max_user_calls=2)
    traj = asyncio.run(run_episode(task, agent, user, limits=limits))
    assert [s.by for s in traj.steps] == ["user", "user"]
    last = traj.messages[3]
    assert last["role"] == "user" and "tool_calls" not in last and last["content"] == "checking"
