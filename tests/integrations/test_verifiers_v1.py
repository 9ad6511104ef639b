"""verifiers v1 integration against the real ``verifiers.v1`` package: the plugin resolves
through verifiers' own loaders, the tool server registers the domain's tools on a real MCP
server, and episodes played by the scripted user are scored by the verified reward by replay
(oracle 1.0, noop 0.0 unless the task is a refusal)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

vf = pytest.importorskip("verifiers.v1")
pytest.importorskip("mcp.server.mcpserver")

from mcp.server.mcpserver import MCPServer  # noqa: E402

from veritask.integrations import VeritaskEnv  # noqa: E402
from veritask.integrations import verifiers_v1 as v1  # noqa: E402
from veritask.task import TaskPackage  # noqa: E402

PLUGIN = "veritask-tasks"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "verifiers_v1"


@pytest.fixture(scope="module", autouse=True)
def _plugin_importable() -> Iterator[None]:
    """The example package importable as if pip-installed (what ``vf-eval`` needs)."""
    sys.path.insert(0, str(EXAMPLE))
    yield
    sys.path.remove(str(EXAMPLE))
    sys.modules.pop("veritask_tasks", None)


@pytest.fixture(scope="module")
def dataset(generated: Callable[[str, int, int], Path]) -> str:
    return str(generated("travel", 8, 3))


@pytest.fixture(scope="module")
def tasks(dataset: str) -> list[Any]:
    config = v1.VeritaskTasksetConfig(id=PLUGIN, dataset_dir=dataset)
    return list(vf.load_taskset(config))


def test_plugin_resolves_through_verifiers_loaders(dataset: str) -> None:
    assert vf.environment_class(PLUGIN) is v1.VeritaskUserEnv
    config = vf.resolve_env_config({"taskset": {"id": PLUGIN, "dataset_dir": dataset}})
    env = vf.load_environment(config)
    assert isinstance(env, v1.VeritaskUserEnv)
    assert isinstance(env.taskset, v1.VeritaskTaskset)
    assert config.agent.harness.id == "null"  # the tool-calling chat loop, no bash


def test_taskset_rows(tasks: list[Any], packages: dict[str, TaskPackage]) -> None:
    assert sorted(t.data.task_id for t in tasks) == sorted(packages)
    for task in tasks:
        assert isinstance(task, v1.VeritaskTask)
        assert task.data.prompt is None and task.data.system_prompt  # the user opens
        assert task.key == task.data.task_id
        assert [type(s) for s in type(task).toolsets(task.config)] == [v1.VeritaskToolset]


async def _server(task: Any) -> MCPServer:
    toolset = v1.VeritaskToolset(vf.ToolsetConfig())
    await toolset.setup_task(task.data)
    mcp = MCPServer("veritask")
    toolset.register(mcp)
    return mcp


def test_toolset_registers_the_domain_tools(tasks: list[Any], dataset: str) -> None:
    task = tasks[0]

    async def listed() -> list[Any]:
        return list(await (await _server(task)).list_tools())

    tools = asyncio.run(listed())
    env = VeritaskEnv(dataset)
    env.reset(task.data.task_id)
    expected = {t["function"]["name"]: t["function"]["parameters"] for t in env.tools}
    assert {t.name for t in tools} == set(expected)
    for tool in tools:
        schema = tool.input_schema
        assert set(schema.get("properties", {})) == set(expected[tool.name]["properties"])
        assert sorted(schema.get("required", [])) == sorted(expected[tool.name]["required"])


class _Interaction:
    """verifiers' interaction surface (``turn`` -> ``vf.Segment``, ``trace``) over a replaying
    policy whose tool calls run on the real tool server over MCP."""

    def __init__(self, task: Any, mcp: MCPServer, witness: list[Any]) -> None:
        self.trace = vf.Trace(
            task=vf.TraceTask(type=type(task).__name__, data=task.data),
            agent=vf.AgentInfo(config=vf.AgentConfig()),
        )
        self.mcp, self.witness, self.turns = mcp, list(witness), 0

    def _add(self, message: Any, sampled: bool) -> None:
        parent = len(self.trace.nodes) - 1 if self.trace.nodes else None
        self.trace.nodes.append(vf.MessageNode(parent=parent, message=message, sampled=sampled))

    async def turn(self, message: str) -> Any:
        self._add(vf.UserMessage(content=message), False)
        self.turns += 1
        if self.turns > 20:
            return vf.Segment(messages=[], terminated=True)
        out: list[Any] = []
        for i, call in enumerate(self.witness):  # the oracle makes every witness call at once
            request = vf.ToolCall(id=f"c{i}", name=call.tool, arguments=json.dumps(call.args))
            reply = vf.AssistantMessage(content=None, tool_calls=[request])
            result = await self.mcp.call_tool(call.tool, call.args)
            tool = vf.ToolMessage(tool_call_id=f"c{i}", content=_text(result))
            out += [reply, tool]
        self.witness = []
        out.append(vf.AssistantMessage(content="Done. Anything else?"))
        for message in out:
            self._add(message, isinstance(message, vf.AssistantMessage))
        return vf.Segment(messages=out)


def _text(result: Any) -> str:
    blocks = result[0] if isinstance(result, tuple) else result
    return "".join(getattr(b, "text", "") for b in blocks)


class _Agents:
    def __init__(self, interaction: _Interaction) -> None:
        self.played = interaction

    @property
    def agent(self) -> Any:
        played = self.played

        class _Seat:
            @contextlib.asynccontextmanager
            async def interaction(self, task: Any) -> AsyncIterator[_Interaction]:
                yield played

        return _Seat()


async def _episode(env: Any, task: Any, witness: list[Any]) -> Any:
    interaction = _Interaction(task, await _server(task), witness)
    await env.run(task, _Agents(interaction))
    await task.score(interaction.trace)
    return interaction.trace


@pytest.mark.parametrize("mode", ["oracle", "noop"])
def test_episodes_are_scored_by_replay(
    dataset: str, tasks: list[Any], packages: dict[str, TaskPackage], mode: str
) -> None:
    config = vf.resolve_env_config({"taskset": {"id": PLUGIN, "dataset_dir": dataset}})
    env = vf.load_environment(config)
    for task in tasks:
        package = packages[task.data.task_id]
        witness = package.witness if mode == "oracle" else []
        trace = asyncio.run(_episode(env, task, witness))
        expected = 1.0 if mode == "oracle" or package.refusal else 0.0
        assert trace.reward == expected, task.data.task_id
        assert trace.rewards["veritask_reward"].value == expected
        assert trace.stop_condition == "user_stop"
        refused = sum(1 for c in witness if not c.ok)
        assert trace.metrics["rule_violations"] <= refused
        if mode == "oracle":
            assert trace.metrics["state_proximity"] == pytest.approx(1.0)
        turns = trace.info["turn_rewards"]
        assert len(turns) == len(trace.assistant_messages)
        assert all(isinstance(r, float) for r in turns)
