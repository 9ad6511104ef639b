"""AReaL itself, not a stand-in: AReaL's ``OpenAIProxyWorkflow`` (inline mode) runs one
``arun_episode`` of ``VeritaskAReaLAgent`` end to end against a small local stand-in of AReaL's
proxy (grant capacity, RL session, chat completions that play the witness, rewards, export),
served on loopback. AReaL's own session client talks to it over HTTP, its workflow hands the
agent the proxy's address and session key, and the reward the agent returns comes back on the
exported interactions: 1.0 for the oracle, 0.0 for a do-nothing policy.

Run with ``make test-areal`` (its own virtualenv with the ``areal`` extra)."""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("areal")
uvicorn = pytest.importorskip("uvicorn")
starlette = pytest.importorskip("starlette")

from areal.experimental.openai.proxy.workflow import OpenAIProxyWorkflow  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

from veritask.integrations.areal import VeritaskAReaLAgent  # noqa: E402
from veritask.task import TaskPackage  # noqa: E402


class FakeProxy:
    """AReaL's proxy endpoints, with a policy that plays ``witness`` one call per turn."""

    def __init__(self) -> None:
        self.witness: list[Any] = []
        self.sessions: dict[str, dict[str, Any]] = {}
        self.ids = itertools.count()

    def _session(self, request: Request) -> dict[str, Any]:
        key = request.headers["authorization"].removeprefix("Bearer ")
        return self.sessions[key]

    async def grant(self, request: Request) -> JSONResponse:
        return JSONResponse({})

    async def start(self, request: Request) -> JSONResponse:
        sid = f"s{next(self.ids)}"
        self.sessions[f"key-{sid}"] = {"id": sid, "interactions": {}}
        return JSONResponse({"session_id": sid, "api_key": f"key-{sid}"})

    async def chat(self, request: Request) -> JSONResponse:
        body = json.loads(await request.body())
        session = self._session(request)
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        message: dict[str, Any] = {"role": "assistant", "content": "All done."}
        if turn < len(self.witness):
            fn = {"name": self.witness[turn].tool, "arguments": json.dumps(self.witness[turn].args)}
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"c{turn}", "type": "function", "function": fn}],
            }
        cid = f"chatcmpl-{next(self.ids)}"
        session["interactions"][cid] = {
            "messages": body["messages"],
            "output_message_list": [message],
            "reward": None,
            "interaction_id": cid,
        }
        choice = {"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}
        return JSONResponse(
            {
                "id": cid,
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [choice],
            }
        )

    async def reward(self, request: Request) -> JSONResponse:
        body = json.loads(await request.body())
        interactions = self._session(request)["interactions"]
        target = body.get("interaction_id") or list(interactions)[-1]
        interactions[target]["reward"] = body["reward"]
        return JSONResponse({})

    async def end(self, request: Request) -> JSONResponse:
        return JSONResponse({})

    async def export(self, request: Request) -> JSONResponse:
        body = json.loads(await request.body())
        session = next(s for s in self.sessions.values() if s["id"] == body["session_id"])
        return JSONResponse({"interactions": session["interactions"]})

    def app(self) -> Starlette:
        post = ["POST"]
        return Starlette(
            routes=[
                Route("/grant_capacity", self.grant, methods=post),
                Route("/rl/start_session", self.start, methods=post),
                Route("/chat/completions", self.chat, methods=post),
                Route("/rl/set_reward", self.reward, methods=post),
                Route("/rl/end_session", self.end, methods=post),
                Route("/export_trajectories", self.export, methods=post),
            ]
        )


@pytest.fixture(scope="module")
def proxy() -> Iterator[tuple[FakeProxy, str]]:
    fake = FakeProxy()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    server = uvicorn.Server(uvicorn.Config(fake.app(), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    yield fake, f"http://127.0.0.1:{sock.getsockname()[1]}"
    server.should_exit = True
    thread.join()
    sock.close()


@pytest.mark.parametrize("mode", ["oracle", "noop"])
def test_areal_proxy_workflow_runs_an_episode(
    dataset: str, solvable: list[TaskPackage], proxy: tuple[FakeProxy, str], mode: str
) -> None:
    fake, address = proxy
    task = solvable[0]
    fake.witness = list(task.witness) if mode == "oracle" else []
    agent = VeritaskAReaLAgent(dataset=dataset)
    workflow = OpenAIProxyWorkflow(mode="inline", agent=agent, proxy_addr=address)

    interactions = asyncio.run(workflow.arun_episode(None, {"task_id": task.id}))

    assert interactions, "the workflow exported the session's completions"
    last = interactions[list(interactions)[-1]]
    assert last.reward == (1.0 if mode == "oracle" else 0.0)
    assert len(interactions) >= len(fake.witness) + 1
