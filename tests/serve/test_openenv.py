"""The veritask OpenEnv server driven by OpenEnv's own clients on loopback: the typed
``EnvClient`` and the generic ``MCPToolClient`` over WebSocket (oracle and noop episodes to the
expected reward), 50 concurrent sessions whose final states equal the same calls run alone,
JSON errors on HTTP ``/step``, any port, the Host/Origin guard and ``openenv validate`` on the
example. They need the current ``openenv`` package (``make test-openenv`` installs it in a
virtualenv of its own: its MCP dependency pins conflict with the dev extras) and skip without
it."""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest


def _openenv_release() -> str | None:
    try:
        return importlib.metadata.version("openenv")
    except importlib.metadata.PackageNotFoundError:
        return None


if (_openenv_release() or "0").split(".")[:2] != ["0", "10"]:
    pytest.skip("needs the openenv 0.10 package (make test-openenv)", allow_module_level=True)

httpx = pytest.importorskip("httpx")
uvicorn = pytest.importorskip("uvicorn")
websockets = pytest.importorskip("websockets")

from openenv.core.env_server.mcp_types import CallToolAction  # noqa: E402
from openenv.core.mcp_client import MCPToolClient  # noqa: E402

from veritask.integrations import VeritaskEnv  # noqa: E402
from veritask.serve.openenv_app import (  # noqa: E402
    VeritaskAction,
    VeritaskOpenEnv,
    make_openenv_app,
)
from veritask.serve.openenv_client import VeritaskOpenEnvClient  # noqa: E402
from veritask.task import TaskPackage  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openenv"
OPENENV_CLI = Path(sys.executable).parent / "openenv"
SESSIONS = 50


@pytest.fixture(scope="module")
def dataset(generated: Callable[[str, int, int], Path]) -> str:
    return str(generated("travel", 6, 11))


@pytest.fixture(scope="module")
def tasks(dataset: str) -> list[TaskPackage]:
    return [p for p in VeritaskEnv(dataset).source.packages if p.witness]


@pytest.fixture(scope="module")
def base_url(dataset: str) -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = make_openenv_app(dataset)  # not told the port: any port is served
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def _calls(task: TaskPackage, i: int) -> list[VeritaskAction]:
    """Session ``i``'s calls: a prefix of the witness, and on every third a rejected call."""
    witness = list(task.witness)[: i % (len(task.witness) + 1)]
    calls = [VeritaskAction(type="call_tool", tool_name=c.tool, arguments=c.args) for c in witness]
    if i % 3 == 0:
        calls.insert(0, VeritaskAction(type="call_tool", tool_name="no_such_tool", arguments={}))
    return calls


def _alone(dataset: str, task: TaskPackage, calls: list[VeritaskAction]) -> str:
    env = VeritaskOpenEnv(dataset)
    env.reset(task_id=task.id)
    for call in calls:
        env.step(call)
    digest = env.state.state_sha256
    env.close()
    return digest


async def _play(base_url: str, task: TaskPackage, calls: list[VeritaskAction]) -> Any:
    async with VeritaskOpenEnvClient(base_url=base_url) as env:
        first = await env.reset(task_id=task.id, episode_id="e1")
        assert first.observation.task_id == task.id and first.observation.tool_schemas
        for call in calls:
            await env.step(call)
        return await env.state()


def test_fifty_concurrent_sessions_match_the_same_calls_run_alone(
    base_url: str, dataset: str, tasks: list[TaskPackage]
) -> None:
    plan = [(tasks[i % len(tasks)], _calls(tasks[i % len(tasks)], i)) for i in range(SESSIONS)]

    async def run_all() -> list[Any]:
        return await asyncio.gather(*(_play(base_url, t, c) for t, c in plan))

    states = asyncio.run(run_all())
    for (task, calls), state in zip(plan, states, strict=True):
        assert state.task_id == task.id and state.step_count == len(calls)
        assert state.state_sha256 == _alone(dataset, task, calls)
    assert len({s.state_sha256 for s in states}) > 1


@pytest.mark.parametrize("mode", ["oracle", "noop"])
def test_episode_over_the_client(base_url: str, tasks: list[TaskPackage], mode: str) -> None:
    task = next(t for t in tasks if not t.refusal)
    calls = _calls(task, len(task.witness)) if mode == "oracle" else []

    async def play() -> Any:
        async with VeritaskOpenEnvClient(base_url=base_url) as env:
            await env.reset(task_id=task.id)
            listed = await env.step(VeritaskAction(type="list_tools"))
            assert {t.name for t in listed.observation.tools} >= {c.tool_name for c in calls}
            for call in calls:
                out = await env.step(call)
                assert isinstance(out.observation.result["isError"], bool) and not out.done
            for _ in range(20):
                out = await env.step(VeritaskAction(type="reply", content="All done."))
                if out.done:
                    return out
            raise AssertionError("the user never stopped")

    out = asyncio.run(play())
    assert out.reward == (1.0 if mode == "oracle" else 0.0)


def test_mcp_tool_client_plays_an_episode_to_the_verified_reward(
    base_url: str, tasks: list[TaskPackage]
) -> None:
    """OpenEnv's generic MCP tool client: list_tools, call_tool, then replies until done."""
    task = next(t for t in tasks if not t.refusal)

    async def play() -> Any:
        async with MCPToolClient(base_url=base_url) as env:
            first = await env.reset(task_id=task.id)
            assert first.observation.task_id == task.id and first.observation.user
            names = {t.name for t in await env.list_tools()}
            assert {c.tool for c in task.witness} <= names
            for call in task.witness:
                out = await env.step(CallToolAction(tool_name=call.tool, arguments=call.args))
                assert out.observation.tool_name == call.tool
                assert out.observation.result["content"][0]["type"] == "text"
            refused = await env.call_tool("no_such_tool")
            assert refused["isError"] is True
            assert refused["structuredContent"]["code"]
            for _ in range(20):
                out = await env.step(VeritaskAction(type="reply", content="All done."))
                if out.done:
                    return out
            raise AssertionError("the user never stopped")

    assert asyncio.run(play()).reward == 1.0


def test_http_step_errors_are_json_with_a_reason(base_url: str) -> None:
    """OpenEnv's HTTP /step runs on a fresh environment: a 409 that says so, never a text 500;
    a body that is no action is FastAPI's JSON 422."""
    step = httpx.post(f"{base_url}/step", json={"action": {"type": "reply", "content": "hi"}})
    assert step.status_code == 409
    assert step.json()["error"]["code"] == "BAD_ACTION"
    assert "/ws" in step.json()["error"]["message"]
    bad = httpx.post(f"{base_url}/step", json={"action": {"type": "dance"}})
    assert bad.status_code == 422 and bad.json()["detail"]
    unknown = httpx.post(f"{base_url}/reset", json={"task_id": "no-such-task"})
    assert unknown.status_code == 409 and "no-such-task" in unknown.json()["error"]["message"]
    assert httpx.post(f"{base_url}/reset", json={}).json()["observation"]["task_id"]


def test_foreign_host_and_origin_are_refused(base_url: str) -> None:
    port = base_url.rsplit(":", 1)[1]
    assert httpx.get(f"{base_url}/health").status_code == 200
    assert httpx.get(f"{base_url}/schema").json()["action"]["properties"]["type"]
    evil_host = httpx.get(f"{base_url}/health", headers={"Host": f"evil.example:{port}"})
    assert evil_host.status_code == 400
    evil_origin = httpx.get(f"{base_url}/health", headers={"Origin": "http://evil.example"})
    assert evil_origin.status_code == 403
    assert evil_origin.json()["error"]["code"] == "ORIGIN_NOT_ALLOWED"

    async def handshake(headers: dict[str, str]) -> None:
        url = base_url.replace("http", "ws") + "/ws"
        async with websockets.connect(url, additional_headers=headers):
            pass

    asyncio.run(handshake({}))
    for headers in ({"Host": f"evil.example:{port}"}, {"Origin": "http://evil.example"}):
        with pytest.raises(websockets.exceptions.InvalidStatus):
            asyncio.run(handshake(headers))


@pytest.mark.skipif(not OPENENV_CLI.exists(), reason="needs the openenv command")
def test_openenv_validate_passes_on_the_example_and_the_running_server(base_url: str) -> None:
    static = subprocess.run(
        [str(OPENENV_CLI), "validate", str(EXAMPLE)], capture_output=True, text=True, timeout=120
    )
    assert static.returncode == 0, static.stdout + static.stderr
    running = subprocess.run(
        [str(OPENENV_CLI), "validate", base_url], capture_output=True, text=True, timeout=120
    )
    assert running.returncode == 0, running.stdout + running.stderr


def test_serve_openenv_command_answers_on_the_port_it_bound(dataset: str) -> None:
    """``veritask serve-openenv DIR --port 0``: loopback, a free port, /health answered there
    (no PORT variable, no 421 or 400 for the port it chose)."""
    argv = [sys.executable, "-m", "veritask._cli.main", "serve-openenv", dataset, "--port", "0"]
    env = {k: v for k, v in os.environ.items() if k != "PORT"}
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        url = line.split(" at ", 1)[1].split()[0]
        assert url.startswith("http://127.0.0.1:") and not url.endswith(":8000")
        health = httpx.get(f"{url}/health", timeout=30)
        assert health.status_code == 200 and health.json()["status"] == "healthy"
        meta = httpx.get(f"{url}/metadata", headers={"Host": f"localhost:{url.rsplit(':', 1)[1]}"})
        assert meta.json()["name"] == "veritask"
    finally:
        proc.terminate()
        proc.wait(30)
