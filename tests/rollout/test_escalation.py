"""Hand-offs to a human agent: the spec names the tool and the policy's reasons; the engine
refuses a wrong reason; tasks whose correct end is a hand-off are verified by the state."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from veritask.agent import PAYLOAD, FaithfulAgent, ScriptedUser
from veritask.agent._llm import LLMAgent
from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment
from veritask.model import get_provider
from veritask.policy import escalation_tool
from veritask.rollout import TaskSource, run_episode
from veritask.synth._episode import witness_call
from veritask.synth._escalation import due_for_handoff, escalation_order
from veritask.task import EnvSession, TaskPackage, report_dataset
from veritask.task._dual import declined_handoff, handoff_reason
from veritask.task._grounded import grounding

TELECOM = ("telecom", 60, 0)  # the dataset the dual-control tests read too (made once)


@pytest.fixture(scope="module")
def source(generated: Callable[[str, int, int], Path]) -> TaskSource:
    return TaskSource.load(generated(*TELECOM))


@pytest.fixture(scope="module")
def domain() -> CompiledDomain:
    return CompiledDomain.from_spec(load_domain("telecom"))


def _handoffs(source: TaskSource) -> list[TaskPackage]:
    spec = load_domain("telecom")
    found = [p for p in source.packages if handoff_reason(p, spec)]
    assert found, "the telecom dataset has no task ending in a hand-off"
    return found


def _handoffs_rows(env: Environment) -> list[tuple[str, str]]:
    return [(r["customer_id"], r["reason"]) for r in env.rows("handoffs")]


# -- the engine ------------------------------------------------------------------------------


def test_the_spec_names_the_escalation_tool() -> None:
    assert escalation_tool(load_domain("telecom")) == "insert_handoffs"
    assert escalation_tool(load_domain("gym")) is None


@pytest.mark.parametrize(
    ("customer", "right", "wrong"),
    [
        ("c_ivo", "ACCOUNT_SUSPENDED", "REPEATED_FAULT"),
        ("c_sam", "REPEATED_FAULT", "ACCOUNT_SUSPENDED"),
    ],
)
def test_a_wrong_reason_is_refused_and_leaves_the_state(
    domain: CompiledDomain, customer: str, right: str, wrong: str
) -> None:
    env = Environment(domain)
    before = env.image()
    refused = env.call("insert_handoffs", {"customer_id": customer, "reason": wrong})
    assert not refused.ok and refused.error is not None
    assert refused.error.code == "NOT_ESCALATABLE"
    assert env.image() == before
    assert env.call("insert_handoffs", {"customer_id": customer, "reason": right}).ok
    assert _handoffs_rows(env) == [(customer, right)]


def test_who_is_due_for_a_hand_off(domain: CompiledDomain) -> None:
    spec = load_domain("telecom")
    env = Environment(domain)
    before = env.image()
    assert due_for_handoff(spec, env, "c_ivo") and due_for_handoff(spec, env, "c_sam")
    assert not due_for_handoff(spec, env, "c_ana")
    assert env.image() == before  # probed, then put back


def test_hand_off_aims_try_the_due_users_first(domain: CompiledDomain) -> None:
    import random

    spec = load_domain("telecom")
    env = Environment(domain)
    aim = spec.rule("HANDOFF_SUSPENDED_ONLY")
    cast = ["c_ana", "c_mia", "c_ivo", "c_sam"]
    orders = {tuple(escalation_order(spec, env, cast, aim, random.Random(s))) for s in range(20)}
    assert orders == {tuple(cast), ("c_ivo", "c_sam", "c_ana", "c_mia")}
    other = spec.rule("PASS_DAYS")
    assert escalation_order(spec, env, cast, other, random.Random(0)) == cast


# -- the faithful agent escalates exactly when the policy says so ------------------------------


def _ask_for_handoff(domain: CompiledDomain, customer: str) -> tuple[EnvSession, str]:
    """One request for a hand-off, played between the faithful agent and the session."""
    spec = domain.spec
    session = EnvSession(domain, domain.seed)
    agent = FaithfulAgent(spec)
    ask = {"transaction": "hand_off", "tool": "insert_handoffs"}
    user = {"role": "user", "content": "Please hand me over to a person."}
    user[PAYLOAD] = {"user_id": customer, "ask": ask}
    messages: list[dict[str, Any]] = [{"role": "system", "content": "policy"}, user]
    for _ in range(20):
        turn = asyncio.run(agent.respond(messages, session.tools))
        messages.append(turn.message)
        calls = turn.message.get("tool_calls") or []
        if not calls:
            return session, turn.message.get("content") or ""
        for call in calls:
            messages.append(session.step(call, len(messages) - 1)[0])
    raise AssertionError("the agent never answered")


@pytest.mark.parametrize(
    ("customer", "reason"), [("c_ivo", "ACCOUNT_SUSPENDED"), ("c_sam", "REPEATED_FAULT")]
)
def test_faithful_agent_hands_over_with_the_policys_reason(
    domain: CompiledDomain, customer: str, reason: str
) -> None:
    session, said = _ask_for_handoff(domain, customer)
    assert _handoffs_rows(session.env) == [(customer, reason)]
    assert "sorry" not in said.lower()


def test_faithful_agent_does_not_hand_over_without_a_reason(domain: CompiledDomain) -> None:
    session, said = _ask_for_handoff(domain, "c_ana")
    assert _handoffs_rows(session.env) == []
    assert "hand-off" in said.lower() and "sorry" in said.lower()


# -- tasks whose end is a hand-off ----------------------------------------------------------


def test_handoff_tasks_pass_faithful_and_fail_doing_nothing(source: TaskSource) -> None:
    spec = load_domain("telecom")
    for pkg in _handoffs(source):
        task = source.episode_task(pkg)
        good = asyncio.run(run_episode(task, FaithfulAgent(spec), ScriptedUser(pkg)))
        assert good.final_distance == 0
        noop = asyncio.run(
            run_episode(
                task, LLMAgent(get_provider("scripted", script=["OK."] * 40)), ScriptedUser(pkg)
            )
        )
        assert noop.final_distance > 0


def test_a_hand_off_ends_the_conversation(source: TaskSource) -> None:
    """No request follows an accepted hand-off: the customer is with a person now."""
    tool = escalation_tool(load_domain("telecom"))
    for pkg in _handoffs(source):
        calls = [c.tool for c in pkg.witness if c.ok]
        assert tool in calls
        assert calls[calls.index(tool) + 1 :] == [], pkg.id


def test_a_hand_off_refused_while_another_reason_holds_is_not_grounded(
    source: TaskSource,
) -> None:
    """A declined hand-off is a witness mistake when another reason of the policy holds: the
    faithful agent hands over there, so grounding must refuse such a package."""
    spec = load_domain("telecom")
    pkg = _handoffs(source)[0]
    right = handoff_reason(pkg, spec)
    wrong = next(r.id for r in spec.escalation.reasons if r.id != right)  # type: ignore[union-attr]
    tool = escalation_tool(spec)
    at = next(i for i, c in enumerate(pkg.witness) if c.ok and c.tool == tool)
    env = Environment(source.domain(pkg.domain), source.dataset.read_state(pkg.origin))
    for call in pkg.witness[:at]:
        env.call(call.tool, call.args)
    args = {**pkg.witness[at].args, "reason": wrong}
    declined = witness_call(tool, args, env.call(tool, args))  # type: ignore[arg-type]
    assert not declined.ok
    origin = source.dataset.read_state(pkg.origin)
    assert grounding(pkg, env, origin) == []
    changed = pkg.model_copy(update={"witness": [*pkg.witness[:at], declined, *pkg.witness[at:]]})
    found = grounding(changed, env, origin)
    assert [(u.call, u.arg) for u in found] == [(at, "reason")]
    assert right is not None and right in found[0].reason


def test_a_wrong_escalation_fails(source: TaskSource) -> None:
    spec = load_domain("telecom")
    pkg = _handoffs(source)[0]
    right = handoff_reason(pkg, spec)
    wrong = next(r.id for r in spec.escalation.reasons if r.id != right)  # type: ignore[union-attr]
    customer = pkg.user_profile.user_id
    call = {"name": "insert_handoffs", "arguments": {"customer_id": customer, "reason": wrong}}
    agent = LLMAgent(get_provider("scripted", script=[{"tool_calls": [call]}] + ["Done."] * 40))
    traj = asyncio.run(run_episode(source.episode_task(pkg), agent, ScriptedUser(pkg)))
    assert traj.steps[0].error is not None and traj.steps[0].error["code"] == "NOT_ESCALATABLE"
    assert traj.final_distance > 0


def test_handing_over_when_the_task_does_not_end_so_fails(source: TaskSource) -> None:
    spec = load_domain("telecom")
    for pkg in source.packages:
        if handoff_reason(pkg, spec) or pkg.refusal:
            continue
        task = source.episode_task(pkg)
        session = EnvSession.for_task(pkg, task.domain, task.origin, task.target)
        for call in pkg.witness:
            session.call(call.tool, call.args, by_user=call.tool.endswith("_devices"))
        assert session.distance == 0
        customer = pkg.user_profile.user_id
        if due_for_handoff(spec, session.env, customer):
            reason = next(
                r.id
                for r in spec.escalation.reasons  # type: ignore[union-attr]
                if session.env.call("insert_handoffs", {"customer_id": customer, "reason": r.id}).ok
            )
            assert reason and session.distance and session.distance > 0
            return
    pytest.skip("no task in the dataset whose user is due for a hand-off it does not ask for")


def test_report_counts_handoffs_and_declined_ones(source: TaskSource) -> None:
    spec = load_domain("telecom")
    dual = report_dataset(source.root)["dual_control"]
    assert dual["escalations"] == len(_handoffs(source))
    assert sum(dual["escalation_reasons"].values()) == dual["escalations"]
    assert dual["declined_escalations"] == sum(declined_handoff(p, spec) for p in source.packages)
    assert json.dumps(dual)  # JSON-ready
