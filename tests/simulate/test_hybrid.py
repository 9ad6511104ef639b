"""The hybrid mode: spec'd tools on the real environment, the others on the simulator."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from veritask.model import ScriptedProvider
from veritask.rollout import TaskSource
from veritask.simulate import (
    JUDGE_MARK,
    HybridSession,
    catalog_from_json,
    catalog_from_spec,
    hybrid_catalog,
)
from veritask.synth import generate
from veritask.task import EpisodeEnd

EXTRA = [
    {
        "type": "function",
        "function": {
            "name": "send_notice",
            "description": "Send a notice to a member.",
            "parameters": {
                "type": "object",
                "properties": {"member_id": {"type": "string"}, "text": {"type": "string"}},
                "required": ["text"],
                "additionalProperties": False,
            },
        },
    }
]


def simulator(messages: list[dict[str, Any]], _tools: Any) -> str:
    if messages[0]["content"].startswith(JUDGE_MARK):
        return json.dumps({"reasoning": "done", "task_success": True})
    return json.dumps({"ok": True, "result": {"sent": True}})


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> TaskSource:
    root = tmp_path_factory.mktemp("hybrid") / "mock"
    generate("mock", 8, 5, root)
    return TaskSource.load(root)


def _call(n: int, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"c{n}", "function": {"name": tool, "arguments": json.dumps(args)}}


def test_one_catalogue_marks_real_and_simulated_tools(source: TaskSource) -> None:
    spec = catalog_from_spec(source.episode_task(source.packages[0]).domain.spec)
    catalog = hybrid_catalog(spec, catalog_from_json(EXTRA))
    backends = {t.name: t.backend for t in catalog.tools.values()}
    assert backends["send_notice"] == "simulated"
    assert all(backends[n] == "real" for n in spec.names)
    again = catalog_from_json(catalog.to_json())
    assert {t.name: t.backend for t in again.tools.values()} == backends


def test_real_tools_run_on_the_environment_and_others_on_the_simulator(
    source: TaskSource,
) -> None:
    package = next(p for p in source.packages if p.witness and not p.refusal)
    task = source.episode_task(package)
    provider = ScriptedProvider(simulator)
    session = HybridSession(
        package, task.domain, task.origin, provider, catalog_from_json(EXTRA), target=task.target
    )
    assert "send_notice" in {t["function"]["name"] for t in session.tools}
    messages: list[dict[str, Any]] = [{"role": "user", "content": package.task_description}]
    for n, w in enumerate(package.witness):
        message, result = asyncio.run(session.astep(_call(n, w.tool, w.args), n))
        assert message["tool_call_id"] == f"c{n}" and result.tool == w.tool
    assert provider.requests == []
    message, result = asyncio.run(session.astep(_call(99, "send_notice", {"text": "hi"}), 99))
    assert result.ok and result.result == {"sent": True}
    prompt = provider.requests[-1]["messages"][-1]["content"]
    assert all(w.tool in prompt for w in package.witness)
    unknown = asyncio.run(session.astep(_call(100, "no_such_tool", {}), 100))[1]
    assert unknown.error is not None and unknown.error.code == "UNKNOWN_TOOL"
    assert len(provider.requests) == 1
    traj = asyncio.run(session.atrajectory(EpisodeEnd(messages, "a", "u", "agent_done")))
    session.close()
    assert traj.final_distance == 0 and traj.initial_distance > 0
    assert traj.reward == 1.0 and traj.reward_breakdown == {"judge": 1.0}
    assert [s.tool for s in traj.steps][-2:] == ["send_notice", "no_such_tool"]
    assert len(traj.steps) == len(package.witness) + 2
