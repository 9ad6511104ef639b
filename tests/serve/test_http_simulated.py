"""A simulated session served over HTTP: a source whose starts open any ``task.Session``."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from veritask.model import ScriptedProvider
from veritask.rollout import TaskSource
from veritask.serve import DatasetSource, EnvService
from veritask.serve._source import TaskStart
from veritask.simulate import JUDGE_MARK, SimSession
from veritask.synth import generate
from veritask.task import Session

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

from veritask.serve.client import EnvClient
from veritask.serve.server import EnvHTTPServer


def simulator(messages: list[dict[str, Any]], _tools: Any) -> str:
    assert not messages[0]["content"].startswith(JUDGE_MARK)
    action = json.loads(messages[-1]["content"].split("Action to simulate:\n")[1])
    return json.dumps({"ok": True, "result": expected(action["tool"])})


def expected(tool: str) -> dict[str, Any]:
    """The scripted simulator's result for a tool (a query's shape for queries)."""
    if tool.startswith("query_"):
        return {"rows": [], "total": 0, "limit": 20, "offset": 0}
    return {"simulated": tool}


class SimulatedSource:
    """The tasks of a dataset, each session answered by a simulator instead of SQLite."""

    mode = "dataset"

    def __init__(self, root: Path, provider: ScriptedProvider) -> None:
        self.inner = DatasetSource(root)
        self.packages = {p.id: p for p in TaskSource.load(root).packages}
        self.provider = provider

    @property
    def name(self) -> str:
        return f"simulated:{self.inner.name}"

    def task_ids(self) -> list[str]:
        return self.inner.task_ids()

    def start(self, task_id: str | None, seed: int | None) -> TaskStart:
        return replace(self.inner.start(task_id, seed), opener=self.open)

    def open(self, start: TaskStart) -> Session:
        assert start.task_id is not None
        package = self.packages[start.task_id]
        return SimSession(package, start.domain, start.origin, self.provider)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("http-simulated")
    generate("mock", 3, 1, root)
    return root


def test_a_simulated_session_is_served_over_http(dataset: Path) -> None:
    provider = ScriptedProvider(simulator)
    source = SimulatedSource(dataset, provider)
    package = next(p for p in source.packages.values() if p.witness)
    with EnvHTTPServer(source, port=0) as srv, EnvClient(srv.start().url, timeout=10) as c:
        reset = c.reset(task_id=package.id)
        sid = reset["session_id"]
        assert reset["observation"]["task"] == package.task_description
        assert reset["info"]["distance_to_target"] is None
        call = package.witness[0]
        step = c.step(sid, call.tool, call.args)
        assert step["observation"]["ok"] is True
        assert step["observation"]["result"] == expected(call.tool)
        assert step["reward"] is None and step["info"]["steps"] == 1
        state = c.state(sid)
        assert state["steps"] == 1 and state["state_sha256"] is None
        assert c.request("GET", f"/state?session_id={sid}&rows=1")[1]["rows"] is None
    assert len(provider.requests) == 1
    action = provider.requests[0]["messages"][-1]["content"]
    assert call.tool in action


def test_the_service_still_opens_sqlite_sessions_by_default(dataset: Path) -> None:
    service = EnvService(DatasetSource(dataset))
    sid = service.reset({})["session_id"]
    with service.store.use(sid) as served:
        assert served.env_session is not None
