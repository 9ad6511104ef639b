"""The veritask OpenEnv server driven by OpenEnv's own client over WebSocket on loopback:
oracle and noop episodes, 50 concurrent sessions whose final states equal the same calls run
alone, and the Host/Origin checks. openenv-core is in the dev extras, so ``make test`` runs these."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openenv.core.env_client")
httpx = pytest.importorskip("httpx")
uvicorn = pytest.importorskip("uvicorn")
websockets = pytest.importorskip("websockets")

from veritask.integrations import VeritaskEnv  # noqa: E402
from veritask.serve.openenv_app import (  # noqa: E402
    VeritaskAction,
    VeritaskOpenEnv,
    make_openenv_app,
)
from veritask.serve.openenv_client import VeritaskOpenEnvClient  # noqa: E402
from veritask.task import TaskPackage  # noqa: E402

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
    app = make_openenv_app(dataset, port=port)
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
    calls = [VeritaskAction(kind="call_tool", tool_name=c.tool, arguments=c.args) for c in witness]
    if i % 3 == 0:
        calls.insert(0, VeritaskAction(kind="call_tool", tool_name="no_such_tool", arguments={}))
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
        assert first.observation.task_id == task.id and first.observation.tools
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
            listed = await env.step(VeritaskAction(kind="list_tools"))
            assert {t["function"]["name"] for t in listed.observation.tools} >= {
                c.tool_name for c in calls
            }
            for call in calls:
                out = await env.step(call)
                assert out.observation.result is not None and not out.done
            for _ in range(20):
                out = await env.step(VeritaskAction(kind="reply", content="All done."))
                if out.done:
                    return out
            raise AssertionError("the user never stopped")

    out = asyncio.run(play())
    assert out.reward == (1.0 if mode == "oracle" else 0.0)


def test_foreign_host_and_origin_are_refused(base_url: str) -> None:
    port = base_url.rsplit(":", 1)[1]
    assert httpx.get(f"{base_url}/health").status_code == 200
    assert httpx.get(f"{base_url}/schema").json()["action"]["properties"]["kind"]
    evil_host = httpx.get(f"{base_url}/health", headers={"Host": f"evil.example:{port}"})
    assert evil_host.status_code == 421 and evil_host.json()["error"]["code"] == "HOST_NOT_ALLOWED"
    evil_origin = httpx.get(f"{base_url}/health", headers={"Origin": "http://evil.example"})
    assert evil_origin.status_code == 403

    async def handshake(headers: dict[str, str]) -> None:
        url = base_url.replace("http", "ws") + "/ws"
        async with websockets.connect(url, additional_headers=headers):
            pass

    asyncio.run(handshake({}))
    for headers in ({"Host": f"evil.example:{port}"}, {"Origin": "http://evil.example"}):
        with pytest.raises(websockets.exceptions.InvalidStatus):
            asyncio.run(handshake(headers))
