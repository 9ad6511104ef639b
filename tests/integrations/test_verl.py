"""verl integration against verl's documented interface (verl itself needs GPUs, ray and a pinned
transformers, so it is not installed here and the classes subclass local stand-ins).

The signatures checked below are those of verl 0.7.1 (and ``volcengine/verl`` main of 2026-01):
``verl/tools/base_tool.py`` (``BaseTool``), ``verl/tools/schemas.py``
(``OpenAIFunctionToolSchema``, ``ToolResponse``), ``verl/interactions/base.py``
(``BaseInteraction``), and the call pattern of
``verl/experimental/agent_loop/tool_agent_loop.py``: ``start_interaction(request_id,
**interaction_kwargs)`` once; per tool call ``create(create_kwargs=...)`` ->
``execute(instance_id, args, agent_data=agent_data)`` -> ``release(instance_id)``; after a text
turn ``generate_response(request_id, messages, **interaction_kwargs)``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
import yaml

from veritask.integrations import VeritaskEnv
from veritask.integrations import verl as vt
from veritask.task import TaskPackage

# name -> parameter names (after self), as in verl/tools/base_tool.py and verl/interactions/base.py
BASE_TOOL = {
    "__init__": ["config", "tool_schema"],
    "get_openai_tool_schema": [],
    "create": ["instance_id", "kwargs"],
    "execute": ["instance_id", "parameters", "kwargs"],
    "calc_reward": ["instance_id", "kwargs"],
    "release": ["instance_id", "kwargs"],
}
BASE_INTERACTION = {
    "__init__": ["config"],
    "start_interaction": ["instance_id", "kwargs"],
    "generate_response": ["instance_id", "messages", "kwargs"],
    "calculate_score": [],
    "finalize_interaction": [],
}
ASYNC = {"create", "execute", "calc_reward", "release"} | set(BASE_INTERACTION) - {"__init__"}


@dataclass
class AgentData:
    """What verl's tool agent loop passes to ``execute`` (only ``request_id`` is read)."""

    request_id: str


@pytest.fixture(scope="module")
def dataset(generated: Callable[[str, int, int], Path]) -> str:
    return str(generated("travel", 10, 11))


@pytest.fixture(scope="module")
def tools(dataset: str) -> dict[str, vt.VeritaskTool]:
    config = vt.verl_tool_config(dataset)
    return {
        entry["tool_schema"]["function"]["name"]: vt.VeritaskTool(
            entry["config"], vt._ToolSchema.model_validate(entry["tool_schema"])
        )
        for entry in config["tools"]
    }


def _params(fn: Any) -> list[str]:
    return [p for p in inspect.signature(fn).parameters if p != "self"]


def test_signatures_match_verl() -> None:
    # the stand-ins have verl's signatures; the classes subclass verl's bases where importable
    for name, params in BASE_TOOL.items():
        assert _params(getattr(vt.StandInBaseTool, name)) == params, name
    for name, params in BASE_INTERACTION.items():
        assert _params(getattr(vt.StandInBaseInteraction, name)) == params, name
    assert (vt.VeritaskTool.__mro__[1] is vt.StandInBaseTool) != vt.USING_VERL_TOOLS
    assert (
        vt.VeritaskInteraction.__mro__[1] is vt.StandInBaseInteraction
    ) != vt.USING_VERL_INTERACTIONS
    for cls, base in ((vt.VeritaskTool, BASE_TOOL), (vt.VeritaskInteraction, BASE_INTERACTION)):
        for name, params in base.items():
            ours = inspect.signature(getattr(cls, name)).parameters
            # every base parameter is accepted, and anything added is optional
            assert all(p in ours for p in params if p != "kwargs"), (cls, name)
            assert any(p.kind is p.VAR_KEYWORD for p in ours.values()) or "kwargs" not in params
            extra = [p for n, p in ours.items() if n not in params and n != "self"]
            assert all(
                p.default is not p.empty or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
                for p in extra
            ), (cls, name)
            assert inspect.iscoroutinefunction(getattr(cls, name)) == (name in ASYNC), name


def test_tool_schemas_validate_as_verl_07(dataset: str) -> None:
    """verl 0.7's ``OpenAIFunctionPropertySchema`` takes ``type``, ``description`` and a
    ``list[str]`` enum; integer enums and bounds move into the description."""
    config = vt.verl_tool_config(dataset)
    env = VeritaskEnv(dataset)
    env.reset(0)
    originals = {t["function"]["name"]: t["function"] for t in env.tools}
    assert [e["tool_schema"]["function"]["name"] for e in config["tools"]] == list(originals)
    for entry in config["tools"]:
        fn = entry["tool_schema"]["function"]
        vt._ToolSchema.model_validate(entry["tool_schema"])
        original = originals[fn["name"]]["parameters"]
        assert fn["parameters"]["required"] == original["required"]
        for name, prop in fn["parameters"]["properties"].items():
            assert set(prop) <= {"type", "description", "enum"}
            assert all(isinstance(v, str) for v in prop.get("enum", []))
            assert prop["type"] == original["properties"][name]["type"]
            if original["properties"][name].get("enum") and "enum" not in prop:
                assert "One of:" in prop["description"]
    # a config without tool_schema builds it from the dataset
    tool = vt.VeritaskTool({"type": "native", "dataset_dir": dataset, "tool": "query_users"})
    assert tool.name == "query_users"


def _call(name: str, args: dict[str, Any]) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>"


async def _verl_rollout(
    tools: dict[str, vt.VeritaskTool],
    interaction: vt.VeritaskInteraction,
    row: dict[str, Any],
    package: TaskPackage,
    *,
    act: bool,
) -> tuple[float, str, list[float]]:
    """One rollout the way verl's ToolAgentLoop drives it: the oracle (or nothing, when not
    ``act``) one call per turn, text turns answered by the interaction until it terminates."""
    request_id = uuid4().hex
    info = row["extra_info"]
    await interaction.start_interaction(request_id, **info["interaction_kwargs"])
    messages = list(row["prompt"])
    response, turn_scores = "", []
    calls = list(package.witness) if act else []
    for _ in range(100):
        if calls:
            call = calls.pop(0)
            text = _call(call.tool, call.args)
            messages.append({"role": "assistant", "content": text})
            tool = tools[call.tool]
            instance_id, _ = await tool.create(
                create_kwargs=info["tools_kwargs"][call.tool]["create_kwargs"]
            )
            out, step_reward, metrics = await tool.execute(
                instance_id, call.args, agent_data=AgentData(request_id)
            )
            await tool.release(instance_id)
            assert json.loads(out.text) is not None and isinstance(step_reward, float)
            assert metrics["ok"] == call.ok
            messages.append({"role": "tool", "content": out.text})
            response += text + out.text
            continue
        messages.append({"role": "assistant", "content": "Done. Anything else?"})
        stop, reply, score, _ = await interaction.generate_response(
            request_id, messages, **info["interaction_kwargs"]
        )
        turn_scores.append(score)
        messages.append({"role": "user", "content": reply})
        if stop:
            break
    final = await interaction.calculate_score(request_id)
    await interaction.finalize_interaction(request_id)
    return final, response, turn_scores


@pytest.mark.parametrize("act", [True, False], ids=["oracle", "noop"])
def test_episodes_through_tool_and_interaction(
    dataset: str, packages: dict[str, TaskPackage], tools: dict[str, vt.VeritaskTool], act: bool
) -> None:
    interaction = vt.VeritaskInteraction(
        vt.verl_interaction_config(dataset)["interaction"][0]["config"]
    )
    for row in vt.verl_rows(dataset):
        package = packages[row["reward_model"]["ground_truth"]]
        final, response, turn_scores = asyncio.run(
            _verl_rollout(tools, interaction, row, package, act=act)
        )
        expected = 1.0 if act or package.refusal else 0.0
        assert final == turn_scores[-1] == expected, package.id
        result = vt.compute_score(row["data_source"], response, package.id, row["extra_info"])
        assert isinstance(result, dict)
        assert result["score"] == expected
        assert result["tool_calls"] == (len(package.witness) if act else 0)
        assert result["unparsed_tool_calls"] == 0
    assert not vt.DEFAULT_EPISODE_STORE  # every rollout was finalized


def test_two_rollouts_do_not_share_state(
    dataset: str, packages: dict[str, TaskPackage], tools: dict[str, vt.VeritaskTool]
) -> None:
    package = next(p for p in packages.values() if not p.refusal)
    interaction = vt.VeritaskInteraction({"name": "veritask", "dataset_dir": dataset})
    a, b = uuid4().hex, uuid4().hex

    async def run() -> tuple[float, float]:
        for rid in (a, b):
            await interaction.start_interaction(rid, task_id=package.id, dataset_dir=dataset)
        for call in package.witness:  # interleaved: A acts, B reads the same table
            tool = tools[call.tool]
            iid, _ = await tool.create()
            await tool.execute(iid, call.args, agent_data=AgentData(a))
            await tool.release(iid)
            query = next(n for n in tools if n.startswith("query_"))
            iid, _ = await tools[query].create()
            await tools[query].execute(iid, {}, agent_data=AgentData(b))
            await tools[query].release(iid)
        scores = (await interaction.calculate_score(a), await interaction.calculate_score(b))
        await interaction.finalize_interaction(a)
        await interaction.finalize_interaction(b)
        return scores

    assert asyncio.run(run()) == (1.0, 0.0)
    assert not vt.DEFAULT_EPISODE_STORE


def test_tools_without_an_interaction(
    dataset: str, packages: dict[str, TaskPackage], tools: dict[str, vt.VeritaskTool]
) -> None:
    """Without an interaction the first call opens the episode from its create_kwargs."""
    package = next(p for p in packages.values() if not p.refusal)
    ref = {"task_id": package.id, "dataset_dir": dataset}
    request_id = uuid4().hex

    async def run() -> float:
        for call in package.witness:
            tool = tools[call.tool]
            iid, _ = await tool.create(create_kwargs=ref)
            await tool.execute(iid, call.args, agent_data=AgentData(request_id))
            await tool.release(iid)
        return await tools[package.witness[0].tool].calc_reward(
            "x", agent_data=AgentData(request_id)
        )

    assert asyncio.run(run()) == 1.0
    vt.release_episode(request_id)

    async def orphan() -> str:
        iid, _ = await tools["query_users"].create()
        out, _, metrics = await tools["query_users"].execute(iid, {})
        assert metrics == {"ok": False}
        return str(out.text)

    assert "NO_EPISODE" in asyncio.run(orphan())


def test_parse_tool_calls() -> None:
    text = (
        "thinking <tool_call>\n"
        '{"name": "a", "arguments": {"x": 1}}\n</tool_call> <tool_call>{"name": "b", '
        '"arguments": "{\\"y\\": 2}"}</tool_call><tool_call>not json</tool_call>'
    )
    assert vt.parse_tool_calls(text) == ([("a", {"x": 1}), ("b", {"y": 2})], 1)


def test_write_verl_files(dataset: str, packages: dict[str, TaskPackage], tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    parquet = pytest.importorskip("pyarrow.parquet")
    paths = vt.write_verl_files(dataset, str(tmp_path))
    rows = parquet.read_table(paths["train"]).to_pylist()
    assert len(rows) == len(packages)
    assert rows[0]["data_source"] == "veritask/travel"
    tool_config = yaml.safe_load(paths["tool_config"].read_text())
    assert {t["class_name"] for t in tool_config["tools"]} == {
        "veritask.integrations.verl.VeritaskTool"
    }
    interaction = yaml.safe_load(paths["interaction_config"].read_text())["interaction"][0]
    assert interaction["name"] == rows[0]["extra_info"]["interaction_kwargs"]["name"]
