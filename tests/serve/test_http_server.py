"""The HTTP environment server on loopback: endpoints, structured errors, expiry, isolation.

Every server here binds 127.0.0.1 on a free port, runs in a background thread and is shut down
by its fixture; the isolation test runs 200 concurrent sessions and compares each one with the
same calls run alone on a fresh Environment.
"""

from __future__ import annotations

import json
import random
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from veritask._cli.serve_http import serve_cmd
from veritask.env import CompiledDomain, Environment
from veritask.rollout import TaskSource
from veritask.serve import (
    DomainSource,
    EnvService,
    RequestError,
    is_loopback,
    open_source,
    state_digest,
    state_rows,
)
from veritask.synth import generate

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

from veritask.serve.client import EnvClient, EnvClientError
from veritask.serve.server import EnvHTTPServer

GOOD_LOAN = {"member_id": "m_ana", "book_id": "b_dune", "due_step": 10}
LAPSED_LOAN = {"member_id": "m_lapsed", "book_id": "b_dune", "due_step": 10}
SESSIONS = 200
CALLS = 5


def jsonable(value: Any) -> Any:
    """``value`` as it looks after a JSON round trip."""
    return json.loads(json.dumps(value))


@pytest.fixture(scope="module")
def server(compiled: dict[str, CompiledDomain]) -> Iterator[EnvHTTPServer]:
    with EnvHTTPServer(DomainSource(compiled["mock"]), port=0) as srv:
        srv.start()
        yield srv


@pytest.fixture
def client(server: EnvHTTPServer) -> Iterator[EnvClient]:
    with EnvClient(server.url, timeout=10) as c:
        yield c


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("http-dataset")
    generate("mock", 4, 0, root)
    return root


def test_reset_step_state_round_trip(
    client: EnvClient, compiled: dict[str, CompiledDomain]
) -> None:
    local = Environment(compiled["mock"])
    health = client.health()
    assert health["status"] == "ok" and health["mode"] == "domain"

    reset = client.reset()
    sid = reset["session_id"]
    assert reset["reward"] is None and reset["done"] is False
    assert reset["observation"]["tools"] == jsonable(local.openai_tools())
    assert reset["observation"]["task"] is None
    assert reset["observation"]["policy"].startswith("#")
    assert client.state(sid)["state_sha256"] == state_digest(local)

    step = client.step(sid, "insert_loans", GOOD_LOAN)
    expected = local.call("insert_loans", GOOD_LOAN)
    assert step["observation"] == jsonable(expected.to_json())
    assert step["observation"]["ok"] and step["observation"]["state_changed"]
    assert step["reward"] is None and step["done"] is False
    assert step["info"] == {"distance_to_target": None, "steps": 1}

    # arguments may also be a JSON string, as an LLM's tool call carries them
    query = client.step(sid, "query_loans", json.dumps({"member_id": "m_ana"}))
    assert query["observation"]["result"]["total"] == 1

    state = client.state(sid, rows=True)
    assert state["session_id"] == sid and state["steps"] == 2 and state["task_id"] is None
    assert state["distance_to_target"] is None
    assert state["state_sha256"] == state_digest(local)
    assert state["rows"] == jsonable(state_rows(local))

    # resetting in place keeps the id and goes back to the seed state
    again = client.reset(session_id=sid)
    assert again["session_id"] == sid
    assert client.state(sid)["steps"] == 0
    assert client.state(sid)["state_sha256"] == state_digest(Environment(compiled["mock"]))
    assert client.delete(sid) == {"session_id": sid, "deleted": True}
    local.close()


def test_rejected_call_returns_the_structured_error(
    client: EnvClient, compiled: dict[str, CompiledDomain]
) -> None:
    sid = client.reset()["session_id"]
    before = client.state(sid)["state_sha256"]
    step = client.step(sid, "insert_loans", LAPSED_LOAN)
    assert step["observation"] == {
        "ok": False,
        "result": None,
        "error": {
            "code": "PREREQ_FAIL",
            "message": "Member does not exist or is not active.",
            "violated_rule": "MEMBER_ACTIVE",
            "hint": "Check the member id; lapsed members cannot borrow.",
        },
        "state_changed": False,
    }
    assert client.state(sid)["state_sha256"] == before
    unknown = client.step(sid, "delete_loans", {"id": 1})["observation"]
    assert unknown["error"]["code"] == "UNKNOWN_TOOL"
    bad_args = client.step(sid, "insert_loans", {"member_id": "m_ana"})["observation"]
    assert not bad_args["ok"] and bad_args["error"]["code"]
    client.delete(sid)


def test_unknown_session_is_404(client: EnvClient) -> None:
    action = {"tool": "query_loans", "arguments": {}}
    for method, path, body in [
        ("POST", "/step", {"session_id": "nope", "action": action}),
        ("GET", "/state?session_id=nope", None),
        ("GET", "/session/nope", None),
        ("DELETE", "/session/nope", None),
        ("POST", "/reset", {"session_id": "nope"}),
    ]:
        status, payload = client.request(method, path, body)
        assert status == 404, (method, path)
        assert payload["error"]["code"] == "UNKNOWN_SESSION"
    with pytest.raises(EnvClientError) as info:
        client.state("nope")
    assert info.value.status == 404


@pytest.mark.parametrize(
    ("path", "body", "code"),
    [
        ("/step", b"{not json", "BAD_JSON"),
        ("/step", b"NaN", "BAD_JSON"),
        ("/step", b"\xff\xfe", "BAD_JSON"),
        ("/step", b"", "BAD_REQUEST"),
        ("/step", b"[1, 2]", "BAD_REQUEST"),
        ("/step", b'{"action": {"tool": "query_loans"}}', "BAD_REQUEST"),
        ("/step", b'{"session_id": 7, "action": {"tool": "query_loans"}}', "BAD_REQUEST"),
        ("/step", b'{"session_id": "x"}', "BAD_REQUEST"),
        ("/step", b'{"session_id": "x", "action": "query_loans"}', "BAD_REQUEST"),
        ("/step", b'{"session_id": "x", "action": {"tool": 3}}', "BAD_REQUEST"),
        ("/step", b'{"session_id": "x", "action": {"tool": "t", "args": {}}}', "BAD_REQUEST"),
        ("/step", b'{"session_id": "x", "action": {"tool": "t", "arguments": 3}}', "BAD_REQUEST"),
        ("/reset", b"{oops", "BAD_JSON"),
        ("/reset", b'{"seed": "one"}', "BAD_REQUEST"),
        ("/reset", b'{"seed": true}', "BAD_REQUEST"),
        ("/reset", b'{"task_id": 5}', "BAD_REQUEST"),
        ("/reset", b'{"task_id": "t1"}', "BAD_REQUEST"),  # no tasks in domain mode
        ("/state", b"", "BAD_REQUEST"),  # GET without session_id
    ],
)
def test_malformed_requests_are_400(client: EnvClient, path: str, body: bytes, code: str) -> None:
    method = "GET" if path == "/state" else "POST"
    status, payload = client.request(method, path, body)
    assert status == 400
    assert payload["error"]["code"] == code


def test_routing_and_protocol_errors_are_json(server: EnvHTTPServer, client: EnvClient) -> None:
    assert client.request("GET", "/nowhere")[0] == 404
    status, payload = client.request("GET", "/reset")
    assert status == 405 and payload["error"]["code"] == "METHOD_NOT_ALLOWED"
    assert client.request("GET", "/health")[0] == 200  # the connection survived the errors
    host = f"Host: 127.0.0.1:{server.port}".encode()

    def raw(request: bytes) -> bytes:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(request.replace(b"Host: x", host))
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks)

    too_big = raw(b"POST /step HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999\r\n\r\n")
    assert too_big.startswith(b"HTTP/1.1 413")
    assert json.loads(too_big.split(b"\r\n\r\n", 1)[1])["error"]["code"] == "PAYLOAD_TOO_LARGE"
    # a request that is not HTTP never reaches the app: the protocol answers 400 and hangs up
    garbage = raw(b"HELLO there / HTTP/1.1\r\n\r\n")
    assert garbage.startswith(b"HTTP/1.1 400")
    assert json.loads(garbage.split(b"\r\n\r\n", 1)[1])["error"]["code"] == "BAD_REQUEST"
    chunked = raw(b"POST /reset HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
    assert chunked.startswith(b"HTTP/1.1 411")
    # HTTP/1.0 closes after one answer; bare LF line ends are accepted; the Host guard
    # (Starlette's TrustedHostMiddleware) needs a Host even then
    assert raw(b"GET /health HTTP/1.0\nHost: 127.0.0.1\n\n").startswith(b"HTTP/1.1 200")
    assert raw(b"GET /health HTTP/1.0\n\n").startswith(b"HTTP/1.1 400")
    # a client waiting for 100 Continue gets it, then the answer
    body = json.dumps({"seed": 1, "pad": "x" * 2000}).encode()
    head = f"POST /reset HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nExpect: 100-continue\r\nContent-Length: {len(body)}\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head.encode() + b"Connection: close\r\n\r\n")
        assert sock.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200")
    client.delete(json.loads(answer.split(b"\r\n\r\n", 1)[1])["session_id"])


def test_dataset_mode_scores_steps_by_proximity(dataset: Path) -> None:
    source = open_source(dataset)
    assert source.mode == "dataset"
    packages = TaskSource.load(dataset).packages
    package = next(p for p in packages if not p.refusal)
    with EnvHTTPServer(source, port=0) as srv, EnvClient(srv.start().url, timeout=10) as c:
        assert c.request("GET", "/tasks")[1]["tasks"] == [p.id for p in packages]
        assert c.reset(seed=len(packages) + 1)["info"]["task_id"] == packages[1].id
        status, payload = c.request("POST", "/reset", {"task_id": "no-such-task"})
        assert status == 404 and payload["error"]["code"] == "UNKNOWN_TASK"

        reset = c.reset(task_id=package.id)
        sid = reset["session_id"]
        assert reset["observation"]["task"] == package.task_description
        assert reset["observation"]["policy"]
        assert reset["info"]["distance_to_target"] > 0
        step: dict[str, Any] = {}
        for call in package.witness:  # the certified solution reaches the target
            step = c.step(sid, call.tool, call.args)
            assert step["observation"]["ok"] == call.ok
            assert 0.0 <= step["reward"] <= 1.0
        assert step["reward"] == 1.0 and step["info"]["distance_to_target"] == 0
        state = c.state(sid)
        assert state["task_id"] == package.id and state["distance_to_target"] == 0


def test_idle_sessions_expire(compiled: dict[str, CompiledDomain]) -> None:
    now = [0.0]
    service = EnvService(DomainSource(compiled["mock"]), idle_timeout=10, clock=lambda: now[0])
    old = service.reset({})["session_id"]
    now[0] = 6.0
    fresh = service.reset({})["session_id"]
    now[0] = 12.0
    assert service.expire() == 1
    with pytest.raises(RequestError) as info:
        service.state(old)
    assert info.value.status == 404
    assert service.state(fresh)["steps"] == 0
    service.close()

    # the server's reaper does the same on its own
    with (
        EnvHTTPServer(DomainSource(compiled["mock"]), port=0, idle_timeout=0.2) as srv,
        EnvClient(srv.start().url, timeout=10) as c,
    ):
        sid = c.reset()["session_id"]
        deadline = time.monotonic() + 10
        while c.health()["sessions"]:  # /health does not touch sessions
            assert time.monotonic() < deadline, "the session never expired"
            time.sleep(0.05)
        assert c.request("GET", f"/state?session_id={sid}")[0] == 404


def test_session_limit_is_503(compiled: dict[str, CompiledDomain]) -> None:
    service = EnvService(DomainSource(compiled["mock"]), max_sessions=2)
    ids = [service.reset({})["session_id"] for _ in range(2)]
    with pytest.raises(RequestError) as info:
        service.reset({})
    assert info.value.status == 503
    service.delete(ids[0])
    service.reset({})
    service.close()


def test_binds_loopback_only_unless_allowed(compiled: dict[str, CompiledDomain]) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("") and not is_loopback("8.8.8.8")
    with pytest.raises(ValueError, match="allow_remote"):
        EnvHTTPServer(DomainSource(compiled["mock"]), host="0.0.0.0", port=0)
    result = CliRunner().invoke(serve_cmd, ["mock", "--host", "0.0.0.0", "--port", "0"])
    assert result.exit_code != 0 and "--allow-remote" in result.output
    result = CliRunner().invoke(serve_cmd, ["no-such-domain", "--port", "0"])
    assert result.exit_code != 0 and "unknown domain" in result.output


def test_serve_without_the_http_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # import uvicorn raises ImportError
    result = CliRunner().invoke(serve_cmd, ["mock", "--port", "0"])
    assert result.exit_code != 0 and "pip install 'veritask[http]'" in result.output


def random_calls(rng: random.Random, n: int) -> list[tuple[str, dict[str, Any]]]:
    """A seeded mix of lends, returns and reads on ``mock``; some pass, some are rejected."""
    calls: list[tuple[str, dict[str, Any]]] = []
    for _ in range(n):
        roll = rng.random()
        if roll < 0.5:
            args: dict[str, Any] = {
                "member_id": rng.choice(["m_ana", "m_ben", "m_lapsed"]),
                "book_id": rng.choice(["b_dune", "b_emma", "b_hobbit"]),
                "due_step": rng.randint(1, 1000),
            }
            calls.append(("insert_loans", args))
        elif roll < 0.9:
            args = {
                "id": rng.randint(1, 3),
                "status": "RETURNED",
                "return_step": rng.randint(1, 12),
                "late_fee": rng.choice([0, 0, 0, rng.randint(1, 20)]),
            }
            calls.append(("update_loans", args))
        else:
            calls.append(("query_loans", {"status": "OPEN"}))
    return calls


def test_concurrent_sessions_do_not_leak_state(
    server: EnvHTTPServer, compiled: dict[str, CompiledDomain]
) -> None:
    plans = [random_calls(random.Random(1000 + i), CALLS) for i in range(SESSIONS)]
    results: list[dict[str, Any] | None] = [None] * SESSIONS
    errors: list[BaseException] = []
    barrier = threading.Barrier(SESSIONS, timeout=30)

    def run(i: int) -> None:
        try:
            with EnvClient(server.url, timeout=30) as c:
                sid = c.reset()["session_id"]
                barrier.wait()  # every session exists before any step: the steps interleave
                observations = [c.step(sid, tool, args)["observation"] for tool, args in plans[i]]
                state = c.state(sid, rows=True)
                c.delete(sid)
            results[i] = {"sid": sid, "observations": observations, "state": state}
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(SESSIONS)]
    started = time.monotonic()
    for t in threads:
        t.start()
    deadline = started + 90
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "sessions still running after 90 s"
    assert not errors, errors[:3]
    assert all(r is not None for r in results)
    done = [r for r in results if r is not None]
    assert len({r["sid"] for r in done}) == SESSIONS

    outcomes = {"ok": 0, "rejected": 0}
    digests = set()
    for plan, result in zip(plans, done, strict=True):
        alone = Environment(compiled["mock"])
        expected = [jsonable(alone.call(tool, args).to_json()) for tool, args in plan]
        assert result["observations"] == expected
        assert result["state"]["state_sha256"] == state_digest(alone)
        assert result["state"]["rows"] == jsonable(state_rows(alone))
        assert result["state"]["steps"] == CALLS
        digests.add(state_digest(alone))
        for obs in expected:
            outcomes["ok" if obs["ok"] else "rejected"] += 1
        alone.close()
    # the load is meaningful: sessions end in many different states, through passes and rejections
    assert len(digests) > SESSIONS // 2
    assert outcomes["ok"] > 0 and outcomes["rejected"] > 0
    assert len(server.service) == 0
