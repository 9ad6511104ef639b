"""A simulated (and a hybrid) environment served by the unchanged HTTP and MCP servers, started
by their CLI commands with --env-model / --env-tools and driven by their real clients."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment
from veritask.model import RecordingProvider, ScriptedProvider, register_provider
from veritask.rollout import TaskSource
from veritask.simulate import JUDGE_MARK, open_simulated

pytest.importorskip("mcp")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

from mcp import ClientSession, StdioServerParameters, stdio_client
from tests._mcp_memory import in_session

from veritask.serve import mcp_server, server
from veritask.serve.client import EnvClient

T = TypeVar("T")
ACTION = "Action to simulate:\n"
HISTORY = "Previous actions and observations:\n"
LAPSED_LOAN = {"member_id": "m_lapsed", "book_id": "b_dune", "due_step": 10}
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
            },
        },
    }
]


def simulator(messages: list[dict[str, Any]], _tools: Any) -> str:
    """A scripted environment model: a loan to the lapsed member is refused; every other call
    succeeds with a result that says how many earlier calls the model was shown."""
    user = messages[-1]["content"]
    if messages[0]["content"].startswith(JUDGE_MARK):
        return json.dumps({"task_success": True})
    action = json.loads(user.split(ACTION)[1])
    seen = len(json.loads(user.split(HISTORY)[1].split("\n\n" + ACTION)[0]))
    args = action["arguments"] or {}
    if action["tool"] == "insert_loans" and args.get("member_id") == "m_lapsed":
        error = {"code": "PREREQ_FAIL", "message": "lapsed", "violated_rule": "MEMBER_ACTIVE"}
        return json.dumps({"ok": False, "error": error})
    if action["tool"].startswith("query_"):
        query = {"rows": [], "total": 0, "limit": 20, "offset": 0, "seen": seen}
        return json.dumps({"ok": True, "result": query})
    return json.dumps({"ok": True, "result": {"simulated": action["tool"], "seen": seen}})


PROVIDERS: list[ScriptedProvider] = []


def _factory(_argument: str, **_options: Any) -> ScriptedProvider:
    provider = ScriptedProvider(simulator)
    PROVIDERS.append(provider)
    return provider


register_provider("servesim", _factory)


@functools.cache
def mock() -> CompiledDomain:
    """The mock domain, compiled once."""
    return CompiledDomain.from_spec(load_domain("mock"))


@pytest.fixture(scope="module")
def dataset(generated: Callable[[str, int, int], Path]) -> Path:
    return generated("mock", 4, 1)


@pytest.fixture(scope="module")
def extra_tools(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("extra") / "tools.json"
    path.write_text(json.dumps(EXTRA))
    return path


def served_over_http(
    monkeypatch: pytest.MonkeyPatch, args: list[str], body: Callable[[EnvClient], T]
) -> T:
    """Run ``veritask serve ARGS``; the server it starts is driven by ``body`` over HTTP."""
    out: list[T] = []

    def fake_serve(srv: server.EnvHTTPServer, on_ready: Any = None) -> None:
        with srv, EnvClient(srv.start().url, timeout=10) as c:
            out.append(body(c))

    monkeypatch.setattr(server, "serve", fake_serve)
    result = CliRunner().invoke(cli, ["serve", *args, "--port", "0"])
    assert result.exit_code == 0, result.output
    return out[0]


def test_serve_env_model_plays_an_episode_over_http(
    dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = next(p for p in TaskSource.load(dataset).packages if len(p.witness) >= 2)
    tool_names = sorted(mock().tools)

    def episode(c: EnvClient) -> list[dict[str, Any]]:
        health = c.request("GET", "/health")[1]
        assert health["source"].startswith("simulated:servesim:")
        reset = c.reset(task_id=package.id)
        sid = reset["session_id"]
        assert reset["observation"]["task"] == package.task_description
        assert sorted(t["function"]["name"] for t in reset["observation"]["tools"]) == tool_names
        steps = [c.step(sid, w.tool, w.args) for w in package.witness]
        assert c.state(sid)["steps"] == len(package.witness)
        again = c.reset(session_id=sid)  # a restarted session has no history
        first = package.witness[0]
        steps.append(c.step(again["session_id"], first.tool, first.args))
        return steps

    steps = served_over_http(monkeypatch, [str(dataset), "--env-model", "servesim"], episode)
    observations = [s["observation"] for s in steps]
    calls = [*package.witness, package.witness[0]]
    refused = [w.tool == "insert_loans" and w.args.get("member_id") == "m_lapsed" for w in calls]
    assert [not o["ok"] for o in observations] == refused
    seen = [o["result"]["seen"] if o["ok"] else o["error"]["violated_rule"] for o in observations]
    expected = [*range(len(package.witness)), 0]
    assert seen == ["MEMBER_ACTIVE" if r else n for r, n in zip(refused, expected, strict=True)]
    assert all(s["reward"] is None for s in steps)
    prompts = [r["messages"][-1]["content"] for r in PROVIDERS[-1].requests]
    assert all(package.task.total_goal in p for p in prompts)


def test_serve_env_model_over_a_domain_and_hybrid(
    monkeypatch: pytest.MonkeyPatch, extra_tools: Path
) -> None:
    def episode(c: EnvClient) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
        reset = c.reset()
        sid = reset["session_id"]
        names = [t["function"]["name"] for t in reset["observation"]["tools"]]
        real = c.step(sid, "insert_loans", LAPSED_LOAN)
        notice = c.step(sid, "send_notice", {"member_id": "m_lapsed", "text": "renew"})
        return names, real, notice

    args = ["mock", "--env-model", "servesim", "--env-tools", str(extra_tools)]
    names, real, notice = served_over_http(monkeypatch, args, episode)
    assert names == [*mock().tools, "send_notice"]
    with Environment(mock()) as env:
        assert real["observation"] == env.call("insert_loans", LAPSED_LOAN).to_json()
    assert notice["observation"]["result"] == {"simulated": "send_notice", "seen": 1}
    prompt = PROVIDERS[-1].requests[0]["messages"][-1]["content"]
    assert "Current task" not in prompt and '"MEMBER_ACTIVE"' in prompt


def test_env_tools_needs_env_model(extra_tools: Path) -> None:
    result = CliRunner().invoke(cli, ["serve", "mock", "--env-tools", str(extra_tools)])
    assert result.exit_code == 2 and "--env-tools needs --env-model" in result.output


# -- MCP ----------------------------------------------------------------------------------------


def mcp_built_by_cli(
    monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> mcp_server.EnvironmentServer:
    """The server ``veritask serve-mcp ARGS`` builds (over stdio it would own the process)."""
    built: list[mcp_server.EnvironmentServer] = []

    def fake_run_stdio(spec: Any, state: Any, *, opener: Any = None) -> None:
        built.append(mcp_server.build_server(spec, state, opener=opener))

    monkeypatch.setattr(mcp_server, "run_stdio", fake_run_stdio)
    result = CliRunner().invoke(cli, ["serve-mcp", *args])
    assert result.exit_code == 0, result.output
    return built[0]


async def _wire(session: ClientSession, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await session.call_tool(tool, args)
    wire: dict[str, Any] = result.model_dump(by_alias=True, mode="json")
    return wire


def test_serve_mcp_env_model_plays_an_episode(monkeypatch: pytest.MonkeyPatch) -> None:
    served = mcp_built_by_cli(monkeypatch, ["mock", "--env-model", "servesim"])
    with pytest.raises(TypeError):
        served.env  # noqa: B018  (a simulated session has no database)

    async def episode(session: ClientSession) -> tuple[list[Any], list[dict[str, Any]]]:
        tools = (await session.list_tools()).tools
        calls = [
            await _wire(session, "query_books", {}),
            await _wire(session, "insert_loans", LAPSED_LOAN),
            await _wire(session, "insert_loans", {**LAPSED_LOAN, "member_id": "m_ana"}),
        ]
        return tools, calls

    tools, calls = in_session(served, episode)
    with Environment(mock()) as env:
        real = [t.model_dump(by_alias=True, mode="json") for t in mcp_server.tool_definitions(env)]
    offered = [t.model_dump(by_alias=True, mode="json") for t in tools]
    assert [(t["name"], t["inputSchema"]) for t in offered] == [
        (t["name"], t["inputSchema"]) for t in real
    ]
    assert calls[0]["structuredContent"]["seen"] == 0 and not calls[0]["isError"]
    assert calls[1]["isError"] and calls[1]["structuredContent"]["violated_rule"] == "MEMBER_ACTIVE"
    assert calls[2]["structuredContent"] == {"simulated": "insert_loans", "seen": 2}


def test_serve_mcp_hybrid(monkeypatch: pytest.MonkeyPatch, extra_tools: Path) -> None:
    args = ["mock", "--env-model", "servesim", "--env-tools", str(extra_tools)]
    served = mcp_built_by_cli(monkeypatch, args)

    async def episode(session: ClientSession) -> tuple[list[str], list[dict[str, Any]]]:
        names = [t.name for t in (await session.list_tools()).tools]
        calls = [
            await _wire(session, "insert_loans", LAPSED_LOAN),
            await _wire(session, "send_notice", {"text": "renew"}),
        ]
        return names, calls

    names, calls = in_session(served, episode)
    assert names == [*mock().tools, "send_notice"]
    with Environment(mock()) as env:
        real = env.call("insert_loans", LAPSED_LOAN).error
    assert real is not None and calls[0]["structuredContent"] == real.to_json()  # ran on SQLite
    assert calls[1]["structuredContent"] == {"simulated": "send_notice", "seen": 1}
    assert len(PROVIDERS[-1].requests) == 1  # only the simulated tool asked the model


def test_serve_mcp_env_model_over_stdio(tmp_path: Path) -> None:
    """The command spawned as a real stdio MCP server, its model a replay of scripted answers."""
    recording = tmp_path / "env-model.jsonl"
    provider = RecordingProvider(ScriptedProvider(simulator), recording)
    session = open_simulated(provider, mock(), mock().seed)
    calls = [("query_books", {}), ("insert_loans", LAPSED_LOAN)]
    expected = []
    for n, (tool, args) in enumerate(calls):
        fn = {"name": tool, "arguments": json.dumps(args)}
        result = anyio.run(session.astep, {"id": f"call_{n + 1}", "function": fn}, n + 1)[1]
        expected.append(mcp_server.call_result(result).model_dump(by_alias=True, mode="json"))

    code = "from veritask._cli.serve_mcp import serve_mcp_cmd; serve_mcp_cmd()"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", code, "mock", "--env-model", f"replay:{recording}"],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        cwd=str(tmp_path),
    )

    async def main() -> list[dict[str, Any]]:
        with anyio.fail_after(60):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                return [await _wire(client, tool, args) for tool, args in calls]

    assert anyio.run(main) == expected
    assert expected[1]["isError"] and expected[0]["structuredContent"]["seen"] == 0


# -- eval ---------------------------------------------------------------------------------------


def test_eval_runs_a_hybrid_episode(dataset: Path, extra_tools: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    args = ["eval", str(dataset), "--env-model", "servesim", "--env-tools", str(extra_tools)]
    result = CliRunner().invoke(cli, [*args, "--json", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["pass^1"] == 1.0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(r["reward_breakdown"] == {"judge": 1.0} for r in rows)
    assert all(r["final_distance"] == 0 for r in rows)  # the oracle's calls ran on SQLite
    assert all("send_notice" in json.dumps(r["tools"]) for r in rows)
    manifest = json.loads((tmp_path / "t.jsonl.run.json").read_text())
    assert manifest["config"]["environment"] == f"hybrid:servesim:{extra_tools}"
