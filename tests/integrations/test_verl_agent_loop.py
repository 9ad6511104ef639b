"""The verl >= 0.8 agent loop's behaviour against a re-statement of verl's ``ToolAgentLoop``
(``verl_restated.py``; verl 0.9.1 and 0.8.0 flavours), so it runs without verl. Oracle-scripted
episodes score 1.0 and noop ones 0.0; scripted-user turns are masked; the episode lives in the
rollout's extra fields and only its summary leaves the loop.
``test_verl_agent_loop_real.py`` runs the same episodes through verl's own classes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from verl_restated import (  # beside this file (pytest puts its folder on sys.path)
    AgentLoopOutput,
    ScriptedServer,
    ToolAgentLoop080,
    ToolAgentLoop091,
    ToolResponse,
)

from veritask.integrations import VeritaskEnv
from veritask.integrations import verl_agent_loop as val
from veritask.integrations.verl import verl_rows
from veritask.task import TaskPackage


class Schema:
    """Stands in for verl's ``OpenAIFunctionToolSchema`` (the parser's view of a tool)."""

    def __init__(self, schema: dict[str, Any]) -> None:
        assert schema["type"] == "function" and schema["function"]["parameters"]["type"]
        self.schema = schema


class Loop091(val.VeritaskLoopMixin, ToolAgentLoop091):
    tool_schema_model = Schema
    tool_response_model = ToolResponse


class Loop080(val.VeritaskLoopMixin, ToolAgentLoop080):
    tool_schema_model = Schema
    tool_response_model = ToolResponse


FLAVOURS = {"verl-0.9.1": Loop091, "verl-0.8.0": Loop080}


# dataset, packages and solvable: conftest.py beside this file


@pytest.fixture(scope="module")
def rows(dataset: str) -> dict[str, dict[str, Any]]:
    return {r["extra_info"]["task_id"]: r for r in verl_rows(dataset, agent_name=val.AGENT_NAME)}


def oracle_replies(task: TaskPackage) -> list[str]:
    """One hermes tool call per turn, the task's witness in order."""
    return [
        f"<tool_call>{json.dumps({'name': c.tool, 'arguments': c.args}, default=str)}</tool_call>"
        for c in task.witness
    ]


def play(
    loop_cls: type[Any], row: dict[str, Any], replies: list[str], **limits: Any
) -> tuple[AgentLoopOutput, ScriptedServer]:
    server = ScriptedServer(replies)
    loop = loop_cls(server_manager=server, **limits)
    output = asyncio.run(
        loop.run({}, raw_prompt=row["prompt"], extra_info=row["extra_info"], tools_kwargs={})
    )
    return output, server


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
@pytest.mark.parametrize("mode", ["oracle", "noop"])
def test_scripted_episodes_score_the_verified_reward(
    flavour: str, mode: str, solvable: list[TaskPackage], rows: dict[str, dict[str, Any]]
) -> None:
    for task in solvable:
        replies = oracle_replies(task) if mode == "oracle" else []
        output, _ = play(FLAVOURS[flavour], rows[task.id], replies)
        expected = 1.0 if mode == "oracle" else 0.0
        assert output.reward_score == expected
        summary = output.extra_fields[val.RESULT_KEY]
        assert summary["task_id"] == task.id and summary["reward"] == expected
        assert summary["user_stopped"] is True
        assert summary["tool_calls"] == (len(task.witness) if mode == "oracle" else 0)
        assert val.SESSION_KEY not in output.extra_fields
        assert output.extra_fields["global_steps"] == 3  # the server's fields still reach it


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_user_turns_are_inserted_with_mask_zero(
    flavour: str, solvable: list[TaskPackage], rows: dict[str, dict[str, Any]]
) -> None:
    task = solvable[0]
    output, server = play(FLAVOURS[flavour], rows[task.id], oracle_replies(task))
    ids, mask = output.response_ids, output.response_mask
    assert len(ids) == len(mask)
    generated = "".join(chr(t) for t, m in zip(ids, mask, strict=True) if m == 1)
    inserted = "".join(chr(t) for t, m in zip(ids, mask, strict=True) if m == 0)
    replies = len(server.prompts)
    assert generated == "".join(oracle_replies(task)) + "All done." * (replies - len(task.witness))
    assert inserted.count("<|tool|>") == len(task.witness)
    assert inserted.count("<|user|>") == replies - len(task.witness) - 1  # the last reply stops
    # every generation saw the whole conversation so far
    assert (
        server.prompts[-1]
        == output.prompt_ids + ids[: len(server.prompts[-1]) - len(output.prompt_ids)]
    )


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_a_turn_limit_ends_the_episode_without_asking_the_user(
    flavour: str, solvable: list[TaskPackage], rows: dict[str, dict[str, Any]]
) -> None:
    output, server = play(FLAVOURS[flavour], rows[solvable[0].id], [], max_assistant_turns=1)
    assert len(server.prompts) == 1 and set(output.response_mask) == {1}
    assert output.reward_score == 0.0
    assert output.extra_fields[val.RESULT_KEY]["user_stopped"] is False


def test_a_length_limit_stops_before_the_user_turn(
    solvable: list[TaskPackage], rows: dict[str, dict[str, Any]]
) -> None:
    output, server = play(Loop091, rows[solvable[0].id], [], response_length=30)
    assert len(server.prompts) == 1 and set(output.response_mask) == {1}
    assert output.extra_fields[val.RESULT_KEY]["reward"] == 0.0


def test_the_episode_lives_in_the_rollouts_extra_fields(
    solvable: list[TaskPackage], rows: dict[str, dict[str, Any]]
) -> None:
    seen: list[Any] = []

    class Spy(Loop091):
        async def _call_tool(self, tool_call: Any, tools_kwargs: Any, agent_data: Any) -> Any:
            seen.append(agent_data.extra_fields[val.SESSION_KEY])
            return await super()._call_tool(tool_call, tools_kwargs, agent_data)

    task = solvable[0]
    output, _ = play(Spy, rows[task.id], oracle_replies(task))
    assert len(seen) == len(task.witness) and all(isinstance(s, VeritaskEnv) for s in seen)
    assert len({id(s) for s in seen}) == 1
    assert output.extra_fields["tool_rewards"][-1] > 0  # proximity rose with the last call


def test_config_entry_keywords_and_the_fallback_dataset(
    dataset: str, solvable: list[TaskPackage], rows: dict[str, dict[str, Any]]
) -> None:
    row = dict(rows[solvable[0].id])
    row["extra_info"] = {"task_id": solvable[0].id}
    with pytest.raises(ValueError, match="dataset_dir"):
        play(Loop091, row, [])
    server = ScriptedServer(oracle_replies(solvable[0]))
    loop = Loop091(server_manager=server, name=val.AGENT_NAME, dataset_dir=dataset)
    assert "name" not in loop.leftover_kwargs
    out = asyncio.run(loop.run({}, raw_prompt=row["prompt"], extra_info=row["extra_info"]))
    assert out.reward_score == 1.0


def test_write_verl_files(dataset: str, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    paths = val.write_verl_files(dataset, str(tmp_path))
    config = yaml.safe_load(paths["agent_loop_config"].read_text())
    assert config == [
        {
            "name": "veritask_agent",
            "_target_": "veritask.integrations.verl_agent_loop.VeritaskAgentLoop",
            "dataset_dir": str(Path(dataset).resolve()),
        }
    ]
    train = datasets.Dataset.from_parquet(str(paths["train"]))
    assert set(train["agent_name"]) == {"veritask_agent"}
    assert all(e["task_id"] and e["dataset_dir"] for e in train["extra_info"])
    overrides = yaml.safe_load(paths["overrides"].read_text())
    longest = max(sum(len(m["content"] or "") for m in row["prompt"]) for row in train)
    assert overrides["data.max_prompt_length"] >= longest  # characters: an upper bound
    assert overrides["actor_rollout_ref.rollout.multi_turn.max_tool_response_length"] > 256
    assert overrides["data.truncation"] == "error"
