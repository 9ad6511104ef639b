"""The model-driven task synthesis agent, with a scripted model: read-only exploration, a
``propose_task`` tool whose witness runs on a scratch copy, only certified grounded packages."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from veritask.env import CompiledDomain, Environment
from veritask.evolve import (
    RUN_DIR,
    EvolveConfig,
    Synthesizer,
    TaskAgent,
    domain_rules,
    enumerate_plans,
    evolve,
)
from veritask.model import ScriptedProvider
from veritask.task import certify, check_dataset, grounding, load_dataset

DUNE = {"table": "books", "match": {"title": "Dune"}}
LEND = {"member_id": "m_ana", "book_id": "b_dune", "due_step": 4}


def _proposal(due_step_said: bool) -> dict[str, Any]:
    ask: dict[str, Any] = {
        "transaction": "lend_book",
        "tool": "insert_loans",
        "refs": {"book_id": DUNE},
    }
    request = "Borrow Dune."
    if due_step_said:
        ask["values"] = {"due_step": 4}
        request = "Borrow Dune, due step 4."
    return {
        "user_id": "m_ana",
        "name": "Ana",
        "archetype": "rookie",
        "who_you_are": "Ana",
        "total_goal": "Borrow a book.",
        "sub_goals": [{"title": "Lend", "request": request, "ask": ask}],
        "witness": [
            {"tool": "query_books", "args": {"title": "Dune"}},
            {"tool": "insert_loans", "args": LEND},
        ],
        "tags": ["linear"],
    }


def _call(name: str, arguments: Any) -> dict[str, Any]:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"content": None, "tool_calls": [{"name": name, "arguments": raw}]}


AGENT_TURNS = [
    _call("query_books", {"title": "Dune"}),
    _call("insert_loans", LEND),  # refused: exploration is read-only
    _call("propose_task", '{"user_id": "m_ana", '),  # malformed
    _call("propose_task", _proposal(due_step_said=False)),  # ungrounded
    _call("propose_task", _proposal(due_step_said=True)),  # accepted
    _call("finish", {}),
]


def _agent_turn(messages: list[dict[str, Any]]) -> Any:
    """The scripted agent: its next turn by how many tool results it has seen."""
    return AGENT_TURNS[sum(1 for m in messages if m["role"] == "tool")]


def test_the_agent_explores_read_only_and_keeps_only_certified_grounded_candidates(
    tmp_path: Path, compiled: dict[str, CompiledDomain]
) -> None:
    provider = ScriptedProvider(lambda messages, tools: _agent_turn(messages))
    plan = enumerate_plans(domain_rules(("mock",)), 1)[0].synthesis
    agent = TaskAgent(provider)
    log = asyncio.run(agent.synthesize(plan, "mock", 3, 7, tmp_path))
    assert (log.explored, log.proposed, len(log.accepted)) == (1, 3, 1)
    reasons = [r["reasons"][0] for r in log.rejected]
    assert reasons[0].startswith("malformed") and reasons[1].startswith("ungrounded")
    results = [m for m in provider.requests[-1]["messages"] if m["role"] == "tool"]
    assert "READ_ONLY" in results[1]["content"]
    tools = {t["function"]["name"] for t in provider.requests[0]["tools"]}
    assert "propose_task" in tools and not any(t.startswith(("insert_", "update_")) for t in tools)
    [pkg] = load_dataset(tmp_path)
    assert pkg.id == log.accepted[0] and pkg.domain == "mock"
    env = Environment(compiled["mock"])
    origin = env.image()
    from veritask.task import DatasetDir

    ds = DatasetDir(tmp_path)
    assert ds.read_state(pkg.origin) == origin  # exploration left s_origin as it was
    assert certify(pkg, env, origin, ds.read_state(pkg.target)).certified
    assert grounding(pkg, env, origin) == []
    assert check_dataset(tmp_path).ok


def _model(rules: dict[str, list[str]]) -> ScriptedProvider:
    plan = enumerate_plans(rules, 1, candidates=3, batch=2)[0].model_dump(mode="json")
    plan["synthesis"].update(archetypes={"rookie": 1.0}, difficulty_mix={"L1": 1.0})

    def script(messages: list[dict[str, Any]], tools: Any) -> Any:
        if tools:
            return _agent_turn(messages)
        text = messages[-1]["content"]
        if "Rubrics:" in text:
            return '{"verdict": "PASS", "rationale": "clear request"}'
        return json.dumps(plan)

    return ScriptedProvider(script)


def test_an_evolve_run_with_the_synthesis_agent_is_certified(tmp_path: Path) -> None:
    model = _model(domain_rules(("mock",)))
    config = EvolveConfig(
        ("mock",), plans=1, iterations=2, candidates=3, batch=2, model="scripted",
        synthesis="model",
    )  # fmt: skip
    unused = Synthesizer("unused", lambda *a: None)
    summary = evolve(config, tmp_path, unused, model=model)
    first = json.loads((tmp_path / RUN_DIR / "plan-00.iter0.json").read_text())
    assert first["synthesis_agent"]["mock"]["accepted"] and first["counts"]["candidates"] == 1
    second = json.loads((tmp_path / RUN_DIR / "plan-00.iter1.json").read_text())
    kinds = {r["kind"] for v in second["verification"] for r in v["reasons"]}
    assert kinds == {"duplicate"}  # the same task again: the stream already holds it
    assert summary.tasks == 1 and check_dataset(tmp_path).ok
    assert summary.report["config"]["synthesizer"].startswith("evolve-task-agent")


DEEP = "[" * 20_000  # past the recursion limit of the JSON parser
BROKEN_TURNS = [
    _call("query_books", DEEP),
    _call("query_books", '{"title": ' + "9" * 5000 + "}"),
    _call("propose_task", DEEP),
    _call("propose_task", '{"user_id": ' + "9" * 5000 + "}"),
    _call("no_such_tool", {}),
    _call("propose_task", {"user_id": "\ud800", "sub_goals": [[[]]]}),
    _call("finish", {}),
]


def test_broken_tool_calls_are_answered_and_proposals_rejected_with_reasons(
    tmp_path: Path,
) -> None:
    """Arguments nested past the JSON parser's depth or with too many digits used to crash the
    agent loop (``json.loads`` raises RecursionError or a plain ValueError for them)."""

    def turn(messages: list[dict[str, Any]], _tools: Any) -> Any:
        return BROKEN_TURNS[sum(1 for m in messages if m["role"] == "tool")]

    plan = enumerate_plans(domain_rules(("mock",)), 1)[0].synthesis
    log = asyncio.run(TaskAgent(ScriptedProvider(turn)).synthesize(plan, "mock", 3, 7, tmp_path))
    assert log.proposed == 3 and not log.accepted
    assert all(r["reasons"][0].startswith("malformed") for r in log.rejected)
