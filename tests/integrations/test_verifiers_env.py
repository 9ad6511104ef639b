"""verifiers integration (verifiers 0.3.x classic API): ``vf.load_environment`` builds the
environment, and rollouts driven by a replaying ``vf.Client`` are scored by the veritask rubric
(oracle 1.0, noop 0.0 unless the task is a refusal), each rollout on its own database."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from veritask.integrations import VeritaskEnv
from veritask.integrations.verifiers_env import (
    openai_message,
    rule_violations,
    state_proximity,
    veritask_dataset,
    veritask_reward,
)
from veritask.task import TaskPackage


@pytest.fixture(scope="module")
def dataset(generated: Callable[[str, int, int], Path]) -> str:
    return str(generated("travel", 10, 5))


def test_dataset_rows(dataset: str, packages: dict[str, TaskPackage]) -> None:
    pytest.importorskip("datasets")
    rows = veritask_dataset(dataset)
    assert len(rows) == len(packages)
    for row in rows:
        info = json.loads(row["info"])
        assert row["answer"] == info["task_id"] in packages
        assert [m["role"] for m in row["prompt"]] == ["system", "user"]
        assert "tool_defs" not in info  # one domain: the tools are the environment's


def test_message_conversion() -> None:
    msg = {
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "tool_calls": [{"id": "c1", "name": "query_users", "arguments": {"id": "u1"}}],
    }
    assert openai_message(msg) == {
        "role": "assistant",
        "content": "ok",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "query_users", "arguments": '{"id": "u1"}'},
            }
        ],
    }


def test_rubric_functions_read_the_verified_result() -> None:
    state = {"veritask": {"reward": 1.0, "proximity": 0.5, "violations": 2}}
    assert (veritask_reward(state), state_proximity(state), rule_violations(state)) == (
        1.0,
        0.5,
        2.0,
    )
    assert veritask_reward({}) == 0.0


def _replaying_client(vf: Any, packages: dict[str, TaskPackage], mode: str) -> Any:
    """A vf.Client that answers like veritask's oracle (one witness call per turn, then text)
    or noop agent, from the rollout's task and how many assistant turns the prompt holds."""

    class ReplayClient(vf.Client):  # type: ignore[misc]
        def setup_client(self, config: Any) -> Any:
            return None

        async def to_native_tool(self, tool: Any) -> Any:
            return tool

        async def to_native_prompt(self, messages: Any) -> tuple[Any, dict[str, Any]]:
            return messages, {}

        async def get_native_response(
            self, prompt: Any, model: str, sampling_args: Any, tools: Any = None, **kwargs: Any
        ) -> Any:
            assert tools, "the domain's tools reach the model"
            task_id = kwargs["state"]["info"]["task_id"]
            turn = sum(1 for m in prompt if getattr(m, "role", None) == "assistant")
            witness = packages[task_id].witness if mode == "oracle" else []
            if turn < len(witness):
                call = witness[turn]
                message = vf.ResponseMessage(
                    content=None,
                    tool_calls=[
                        vf.ToolCall(id=f"c{turn}", name=call.tool, arguments=json.dumps(call.args))
                    ],
                    finish_reason="tool_calls",
                    is_truncated=False,
                )
            else:
                message = vf.ResponseMessage(
                    content="All done. Anything else?", finish_reason="stop", is_truncated=False
                )
            return vf.Response(id="r", created=0, model=model, message=message)

        async def raise_from_native_response(self, response: Any) -> None:
            return None

        async def from_native_response(self, response: Any) -> Any:
            return response

        async def close(self) -> None:
            return None

    return ReplayClient(object())


@pytest.fixture(scope="module")
def vf_env(dataset: str) -> Any:
    vf = pytest.importorskip("verifiers")
    if not hasattr(vf, "MultiTurnEnv"):
        pytest.skip("needs verifiers' classic API (verifiers>=0.3.1,<0.4)")
    return vf.load_environment("veritask.integrations.verifiers_env", dataset_dir=dataset)


def test_load_environment(vf_env: Any, dataset: str, packages: dict[str, TaskPackage]) -> None:
    import verifiers as vf

    assert isinstance(vf_env, vf.MultiTurnEnv)
    assert len(vf_env.get_dataset()) == len(packages)
    env = VeritaskEnv(dataset)
    env.reset(0)
    assert [t.name for t in vf_env.tool_defs] == [t["function"]["name"] for t in env.tools]
    assert [t.parameters for t in vf_env.tool_defs] == [
        t["function"]["parameters"] for t in env.tools
    ]
    rubrics = getattr(vf_env.rubric, "rubrics", [vf_env.rubric])  # a RubricGroup once monitors join
    weights = {f.__name__: w for r in rubrics for f, w in zip(r.funcs, r.weights, strict=True)}
    assert weights["veritask_reward"] == 1.0
    assert weights["state_proximity"] == 0.0 and weights["rule_violations"] == 0.0


@pytest.mark.parametrize("mode", ["oracle", "noop"])
def test_rollouts_are_scored_by_the_verifier(
    vf_env: Any, packages: dict[str, TaskPackage], mode: str
) -> None:
    import verifiers as vf

    client = _replaying_client(vf, packages, mode)
    rows = list(vf_env.get_dataset())

    async def run() -> list[Any]:
        return [
            await vf_env.run_rollout(row, client, "replay", {}, state_columns=["veritask"])
            for row in rows
        ]

    for row, out in zip(rows, asyncio.run(run()), strict=True):
        task = packages[json.loads(row["info"])["task_id"]]
        expected = 1.0 if mode == "oracle" or task.refusal else 0.0
        assert out["reward"] == expected, (task.id, out.get("error"))
        assert out["metrics"]["veritask_reward"] == expected
        assert out["veritask"]["task_id"] == task.id
        assert out["stop_condition"] == "has_final_env_response"  # the user stopped


def test_concurrent_rollouts_do_not_share_state(
    vf_env: Any, packages: dict[str, TaskPackage]
) -> None:
    import verifiers as vf

    row = next(
        r for r in vf_env.get_dataset() if not packages[json.loads(r["info"])["task_id"]].refusal
    )
    oracle = _replaying_client(vf, packages, "oracle")
    noop = _replaying_client(vf, packages, "noop")

    async def run() -> list[Any]:
        return list(
            await asyncio.gather(
                *(vf_env.run_rollout(row, c, "replay", {}) for c in (oracle, noop, oracle, noop))
            )
        )

    assert [out["reward"] for out in asyncio.run(run())] == [1.0, 0.0, 1.0, 0.0]
