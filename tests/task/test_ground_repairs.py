"""Finality searched over combinations of repairs: a refusal the user gives up after is final
only when no repair the policy suggests, one after another (an approval status, then the cost
that goes with it), makes the write pass; the faithful agent follows the same repairs."""

from __future__ import annotations

import asyncio
import json

import pytest
from tests._hand_built import hand_built, witness_of

import veritask.task._ground_repairs as repairs
from veritask.agent import FaithfulAgent, ScriptedUser
from veritask.env import CompiledDomain, Environment
from veritask.policy import DomainSpec, parse_spec
from veritask.rollout import EpisodeTask, run_episode
from veritask.task import Ask, Fallback, SubGoal, TaskDescription, TaskPackage, grounding

STAY_SPEC = """
name: stay_desk
version: "1"
actor: guests
description: A desk that books stays.
wiki:
  title: Stay Desk Policy
  context: A desk where guests book stays.
  persona: You are a precise booking assistant.
  mission: Book stays within the rules.
tables:
  - name: guests
    tier: entity
    access: read-only
    description: Guests.
    columns:
      - {name: id, type: TEXT, primary_key: true, description: Id}
      - {name: name, type: TEXT, not_null: true, description: Full name}
  - name: stays
    tier: transaction
    access: read-write
    description: One stay.
    columns:
      - {name: id, type: INTEGER, primary_key: true, autoincrement: true, technical: true, description: Id}
      - {name: guest_id, type: TEXT, not_null: true, references: guests.id, updatable: false, description: Who stays}
      - {name: nights, type: INTEGER, not_null: true, check: nights > 0, description: Nights}
      - {name: approval, type: TEXT, not_null: true, default: NONE, enum: [NONE, APPROVED], description: Approval of a long stay}
      - {name: cost, type: INTEGER, not_null: true, description: Total cost}
rules:
  - id: LONG_STAY_APPROVAL
    table: stays
    on: [insert]
    category: policy
    condition: NEW.nights > 3 AND NEW.approval != 'APPROVED'
    code: APPROVAL_REQUIRED
    message: A stay of more than 3 nights needs approval status APPROVED.
    hint: Set approval to APPROVED; the approved rate adds 50 to the cost.
    transaction: book
  - id: STAY_COST
    table: stays
    on: [insert]
    category: calculation
    condition: NEW.cost != NEW.nights * 100 + (CASE WHEN NEW.approval = 'APPROVED' THEN 50 ELSE 0 END)
    code: CALCULATION_ERROR
    message: The cost is 100 a night, plus 50 when approved.
    hint: Recompute the cost.
    repair: {column: cost, value: "NEW.nights * 100 + (CASE WHEN NEW.approval = 'APPROVED' THEN 50 ELSE 0 END)"}
    transaction: book
transactions:
  - id: book
    name: Book a stay
    goal: Book a stay.
    tool: insert_stays
    parameters: [guest_id, nights, approval, cost]
    agent_decides: [approval, cost]
seed:
  guests:
    - {id: g_ana, name: Ana Ruiz}
"""
"""A stay of more than 3 nights needs approval; the approved rate costs 50 more. Both values
are the desk's to decide, so approving alone is refused for the cost, and the cost alone is
refused for the approval: only the two together pass."""

REFUSED = {"guest_id": "g_ana", "nights": 5, "cost": 500}


@pytest.fixture(scope="module")
def spec() -> DomainSpec:
    return parse_spec(STAY_SPEC, source="stay_desk")


@pytest.fixture
def env(spec: DomainSpec) -> Environment:
    return Environment(CompiledDomain.from_spec(spec))


def _give_up(env: Environment, values: dict[str, object], args: dict[str, object]) -> TaskPackage:
    """Ana asks for a stay with ``values``; the witness makes ``args`` and she accepts the
    LONG_STAY_APPROVAL refusal."""
    origin = env.image()
    witness = witness_of(env, [("insert_stays", args)])
    env.restore(origin)
    ask = Ask(transaction="book", tool="insert_stays", values=values)
    text = "Book a stay: " + ", ".join(f"{k} {v}" for k, v in values.items()) + "."
    sub = SubGoal(
        title="book", request=text, ask=ask, fallbacks=[Fallback(rule="LONG_STAY_APPROVAL")]
    )
    task = TaskDescription(who_you_are="Ana", total_goal=text, sub_goals=[sub])
    return hand_built(task, witness, "g_ana", domain="stay_desk")


def test_a_refusal_two_repairs_pass_together_is_not_final(env: Environment) -> None:
    pkg = _give_up(env, {"nights": 5}, REFUSED)
    assert pkg.witness[0].error is not None
    assert pkg.witness[0].error["violated_rule"] == "LONG_STAY_APPROVAL"
    problems = grounding(pkg, env, env.image())
    assert [(u.call, u.arg) for u in problems] == [(0, "approval")]
    assert "approval = 'APPROVED', cost = 550" in problems[0].reason


def test_the_faithful_agent_makes_the_repairs_grounding_finds(
    env: Environment, spec: DomainSpec
) -> None:
    """The package keeps the refusal; the agent, following the hints, books the stay anyway:
    which is why grounding must not call the refusal final."""
    origin = env.image()
    pkg = _give_up(env, {"nights": 5}, REFUSED)
    task = EpisodeTask(pkg, CompiledDomain.from_spec(spec), "policy", origin, origin)
    traj = asyncio.run(run_episode(task, FaithfulAgent(spec), ScriptedUser(pkg)))
    writes = [json_args for json_args in _writes(traj.messages)]
    assert writes[-1] == {**REFUSED, "approval": "APPROVED", "cost": 550}
    assert traj.final_distance == 1


def test_a_refusal_no_unstated_repair_passes_is_final(env: Environment) -> None:
    """Ana states the approval herself: the desk may not change it, so the refusal is final."""
    args = {**REFUSED, "approval": "NONE"}
    pkg = _give_up(env, {"nights": 5, "approval": "NONE"}, args)
    assert grounding(pkg, env, env.image()) == []


def test_a_search_cut_short_proves_nothing(
    env: Environment, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(repairs, "MAX_REPAIR_CALLS", 1)
    pkg = _give_up(env, {"nights": 5}, REFUSED)
    problems = grounding(pkg, env, env.image())
    assert [(u.call, u.arg) for u in problems] == [(0, None)]
    assert "not proved within" in problems[0].reason


def _writes(messages: list[dict[str, object]]) -> list[dict[str, object]]:
    """The arguments of every ``insert_stays`` call the agent made, in order."""
    out = []
    for message in messages:
        for call in message.get("tool_calls") or []:  # type: ignore[attr-defined]
            function = call["function"]
            if function["name"] == "insert_stays":
                out.append(json.loads(function["arguments"]))
    return out
