"""The episode API for trainers: isolated state per rollout, sync and async, rewards."""

from __future__ import annotations

import asyncio
import json
import pickle
from typing import Any

import pytest

from veritask.integrations import EnvFactory, VeritaskEnv
from veritask.synth import generate


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("session") / "travel"
    generate("travel", 20, 5, out)
    return str(out)


def _call(i: int, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"c{i}",
                "type": "function",
                "function": {"name": tool, "arguments": json.dumps(args)},
            }
        ],
    }


def _non_refusal(env: VeritaskEnv) -> int:
    return next(i for i, p in enumerate(env.source.packages) if not p.refusal)


def test_oracle_episode_earns_the_verified_reward(dataset: str) -> None:
    env = pickle.loads(pickle.dumps(EnvFactory(dataset)))()
    index = _non_refusal(env)
    obs = env.reset(index)
    assert obs.tools and obs.system.startswith("#") and obs.user.startswith("Hi")
    assert env.proximity() == pytest.approx(0.0, abs=1e-5)
    for i, call in enumerate(env.task.package.witness):
        env.step(_call(i, call.tool, call.args))
    reward = env.reward()
    assert reward["reward"] == 1.0 and reward["proximity"] == pytest.approx(1.0)
    assert reward["violations"] == env.task.package.boundary_hits
    assert env.trajectory().steps[-1].distance == 0


def test_doing_nothing_earns_nothing(dataset: str) -> None:
    env = VeritaskEnv(dataset)
    env.reset(_non_refusal(env))
    result = env.step({"role": "assistant", "content": "Sorry, I cannot help."})
    assert result.done or result.messages[0]["role"] == "user"
    assert env.reward()["reward"] == 0.0


def test_rollouts_are_isolated(dataset: str) -> None:
    a, b = VeritaskEnv(dataset), VeritaskEnv(dataset)
    index = _non_refusal(a)
    a.reset(index)
    b.reset(index)
    for i, call in enumerate(a.task.package.witness):
        a.step(_call(i, call.tool, call.args))
    assert a.reward()["reward"] == 1.0
    assert b.reward()["reward"] == 0.0 and b.proximity() == pytest.approx(0.0, abs=1e-5)


def test_async_api(dataset: str) -> None:
    async def episode() -> float:
        env = VeritaskEnv(dataset)
        await env.areset(_non_refusal(env))
        for i, call in enumerate(env.task.package.witness):
            await env.astep(_call(i, call.tool, call.args))
        return float(env.reward()["reward"])

    assert asyncio.run(episode()) == 1.0


def test_malformed_tool_call_is_an_error_not_a_crash(dataset: str) -> None:
    env = VeritaskEnv(dataset)
    env.reset(0)
    out = env.step(
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "x",
                    "type": "function",
                    "function": {"name": "query_users", "arguments": "{oops"},
                }
            ],
        }
    )
    assert "INVALID_ARGUMENTS" in out.messages[0]["content"]


def test_unknown_task_id(dataset: str) -> None:
    with pytest.raises(KeyError):
        VeritaskEnv(dataset).reset("nope")
