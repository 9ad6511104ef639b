"""Bad inputs against every server, on loopback with real sockets: the HTTP environment server
(``serve``), MCP over streamable HTTP (``serve-mcp --transport http``) and the OpenEnv app.

For each server and each bad input (deep nesting, truncated JSON, binary, non-UTF-8, wrong
schema, huge numbers, an oversized body, a slow head, a client leaving mid-body, and for OpenEnv
a normal WebSocket close) the answer is a 4xx JSON error or the documented behaviour, and the
log holds no traceback and at most one line for the failure. The accept back-off is checked as
a unit (the rate limiter) and for real, in a child process with few file descriptors.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import json
import logging
import os
import selectors
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from veritask.env import CompiledDomain
from veritask.serve import MAX_BODY_BYTES, MAX_JSON_DEPTH, DomainSource
from veritask.serve._net import LogLimiter, TooDeep, loads_bounded, nests_deeper
from veritask.serve.server import EnvHTTPServer

TIMEOUT = 0.5
"""The request deadline the servers here are given, in seconds."""
WITHIN = 10.0
"""How long a test waits for something that must happen (a deadline, not a sleep)."""
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


# -- the log -------------------------------------------------------------------------------------


class Records(logging.Handler):
    """Every log record of the process, formatted with its traceback if it has one."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[tuple[logging.LogRecord, str]] = []
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record, self.format(record)))

    def failure_lines(self) -> list[str]:
        """Lines a failure wrote: warnings and worse, and veritask's own info lines."""
        return [
            text
            for record, text in self.records
            if record.levelno >= logging.WARNING
            or (record.name.startswith("veritask") and record.levelno >= logging.INFO)
        ]

    def text(self) -> str:
        return "\n".join(text for _, text in self.records)

    def wait_for(self, words: str) -> None:
        """Wait until a record containing ``words`` is logged (fails after :data:`WITHIN`)."""
        deadline = time.monotonic() + WITHIN
        while words not in self.text():
            assert time.monotonic() < deadline, f"nothing logged {words!r}: {self.text()}"
            time.sleep(0.01)


@pytest.fixture
def log() -> Iterator[Records]:
    handler = Records()
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.getLogger("veritask").setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)
        logging.getLogger("veritask").setLevel(logging.NOTSET)


def assert_quiet(log: Records) -> None:
    """No traceback, and at most one line for the failure."""
    assert "Traceback" not in log.text(), log.text()
    assert len(log.failure_lines()) <= 1, log.failure_lines()


# -- raw HTTP ------------------------------------------------------------------------------------


def head(method: str, path: str, port: int, length: int, extra: str = "") -> bytes:
    return (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"{extra}Content-Length: {length}\r\nConnection: close\r\n\r\n"
    ).encode()


def exchange(port: int, data: bytes) -> tuple[int, bytes]:
    """Send ``data``, read until the server hangs up; (status, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=WITHIN) as sock:
        with contextlib.suppress(OSError):  # the server answered a refused size and hung up
            sock.sendall(data)
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


def closed_within(port: int, first_bytes: bytes, within: float) -> float:
    """Open a connection, send ``first_bytes`` and nothing more; seconds until the server hangs
    up (fails when it is still open after ``within``)."""
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=WITHIN) as sock:
        sock.sendall(first_bytes)
        sock.setblocking(False)
        with selectors.DefaultSelector() as selector:
            selector.register(sock, selectors.EVENT_READ)
            while time.monotonic() - start < within:
                if selector.select(timeout=0.05):
                    try:
                        if not sock.recv(65536):
                            return time.monotonic() - start
                    except ConnectionResetError:
                        return time.monotonic() - start
    raise AssertionError(f"the connection was still open after {within} s")


def leave_mid_body(port: int, path: str, extra: str = "") -> None:
    """Announce a 1000-byte body, send 10 bytes of it and hang up."""
    with socket.create_connection(("127.0.0.1", port), timeout=WITHIN) as sock:
        sock.sendall(head("POST", path, port, 1000, extra) + b'{"a": "xx')


def serve_in_thread(server: Any, sock: socket.socket) -> Iterator[int]:
    """Run a uvicorn server on ``sock`` in a thread; yield its port; stop it."""
    thread = threading.Thread(target=server.run, args=([sock],), daemon=True)
    thread.start()
    deadline = time.monotonic() + WITHIN
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    yield sock.getsockname()[1]
    server.should_exit = True
    thread.join(WITHIN)
    sock.close()


# -- the bad bodies ------------------------------------------------------------------------------

DEEP = b'{"a": ' * 1000 + b"1" + b"}" * 1000
BODIES = {
    "deep nesting": DEEP,
    "deep list": b"[" * 100_000 + b"]" * 100_000,
    "truncated JSON": b'{"task_id": "t',
    "binary": bytes(range(256)),
    "non-UTF-8": b'{"task_id": "\xff\xfe"}',
    "huge number": b'{"seed": ' + b"9" * 5000 + b"}",
}


# -- serve ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def http(compiled: dict[str, CompiledDomain]) -> Iterator[EnvHTTPServer]:
    source = DomainSource(compiled["mock"])
    with EnvHTTPServer(source, port=0, request_timeout=TIMEOUT) as server:
        server.start()
        yield server


def error_of(status: int, body: bytes) -> tuple[int, str]:
    """(status, error code) of a JSON error answer."""
    error = json.loads(body)["error"]
    return status, error["code"] if isinstance(error, dict) else str(error)


SERVE_EXPECTED = {
    "deep nesting": (400, "TOO_DEEP"),
    "deep list": (400, "TOO_DEEP"),
    "truncated JSON": (400, "BAD_JSON"),
    "binary": (400, "BAD_JSON"),
    "non-UTF-8": (400, "BAD_JSON"),
    "huge number": (400, "BAD_JSON"),
}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_serve_bad_body(http: EnvHTTPServer, log: Records, name: str) -> None:
    body = BODIES[name]
    answer = exchange(http.port, head("POST", "/reset", http.port, len(body)) + body)
    assert error_of(*answer) == SERVE_EXPECTED[name]
    assert_quiet(log)


def test_serve_deep_nesting_names_the_limit(http: EnvHTTPServer, log: Records) -> None:
    status, body = exchange(http.port, head("POST", "/step", http.port, len(DEEP)) + DEEP)
    assert status == 400
    assert (
        json.loads(body)["error"]["message"] == f"request body nests deeper than {MAX_JSON_DEPTH}"
    )
    assert_quiet(log)


def test_serve_wrong_schema_unknown_tool_and_oversized(http: EnvHTTPServer, log: Records) -> None:
    wrong = b'{"seed": "seven"}'
    assert error_of(
        *exchange(http.port, head("POST", "/reset", http.port, len(wrong)) + wrong)
    ) == (
        400,
        "BAD_REQUEST",
    )
    big = head("POST", "/reset", http.port, MAX_BODY_BYTES + 1)
    assert error_of(*exchange(http.port, big)) == (413, "PAYLOAD_TOO_LARGE")
    # an unknown tool is the agent's mistake, not the request's: a step whose observation is
    # the structured tool error, as for any call the policy rejects
    reset = b"{}"
    _, started = exchange(http.port, head("POST", "/reset", http.port, 2) + reset)
    step = json.dumps(
        {"session_id": json.loads(started)["session_id"], "action": {"tool": "nope"}}
    ).encode()
    status, body = exchange(http.port, head("POST", "/step", http.port, len(step)) + step)
    assert status == 200 and json.loads(body)["observation"]["error"]["code"] == "UNKNOWN_TOOL"
    assert_quiet(log)


def test_serve_slow_head_and_body_are_cut_off(http: EnvHTTPServer, log: Records) -> None:
    assert closed_within(http.port, b"POST /reset HTTP/1.1\r\n", TIMEOUT + WITHIN) >= TIMEOUT
    partial = head("POST", "/reset", http.port, 100) + b"{"
    assert closed_within(http.port, partial, TIMEOUT + WITHIN) >= TIMEOUT
    assert_quiet(log)


def test_serve_client_leaving_mid_body(http: EnvHTTPServer, log: Records) -> None:
    leave_mid_body(http.port, "/reset")
    log.wait_for("client left during POST /reset")
    assert_quiet(log)


def test_connection_cap_answers_503_then_recovers(
    compiled: dict[str, CompiledDomain], log: Records
) -> None:
    source = DomainSource(compiled["mock"])
    with EnvHTTPServer(source, port=0, max_connections=3) as server:
        server.start()
        ask = f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode()
        held = [socket.create_connection(("127.0.0.1", server.port), timeout=WITHIN) for _ in "abc"]
        for sock in held:  # each answered: all three are accepted and open
            sock.sendall(ask)
            assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        status, body = exchange(server.port, b"")
        assert error_of(status, body) == (503, "TOO_MANY_CONNECTIONS")
        held.pop().close()
        deadline = time.monotonic() + WITHIN
        while (
            exchange(server.port, ask.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))[0]
            != 200
        ):
            assert time.monotonic() < deadline, "a freed place was never reused"
        for sock in held:
            sock.close()
    assert "Traceback" not in log.text()
    assert sum("refusing a connection" in line for line in log.failure_lines()) == 1


# -- MCP over HTTP -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mcp_port(compiled: dict[str, CompiledDomain]) -> Iterator[int]:
    pytest.importorskip("mcp")
    from veritask.serve.mcp_server import build_server, http_server

    served = build_server(compiled["mock"])
    web, sock = http_server(served.server, port=0, request_timeout=TIMEOUT)
    yield from serve_in_thread(web, sock)
    served.close()


@pytest.fixture(scope="module")
def mcp_session(mcp_port: int) -> str:
    body = json.dumps(INIT).encode()
    with socket.create_connection(("127.0.0.1", mcp_port), timeout=WITHIN) as sock:
        sock.sendall(head("POST", "/mcp", mcp_port, len(body)) + body)
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += sock.recv(65536)
    lines = answer.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
    return next(
        line.split(":", 1)[1].strip() for line in lines if line.lower().startswith("mcp-session-id")
    )


MCP_BODIES = {
    **BODIES,
    "huge number": b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "x": 1' + b"0" * 5000 + b"}",
    "wrong schema": b'{"jsonrpc": "2.0", "id": "x"}',
}


@pytest.mark.parametrize("name", sorted(MCP_BODIES))
def test_mcp_bad_body(mcp_port: int, mcp_session: str, log: Records, name: str) -> None:
    body = MCP_BODIES[name]
    extra = f"Mcp-Session-Id: {mcp_session}\r\n"
    status, answer = exchange(mcp_port, head("POST", "/mcp", mcp_port, len(body), extra) + body)
    assert 400 <= status < 500, (status, answer)
    reply = json.loads(answer)
    assert reply["jsonrpc"] == "2.0" and reply["error"]["code"] in (-32700, -32600, -32602)
    assert_quiet(log)


def test_mcp_oversized_body_is_json_413(mcp_port: int, log: Records) -> None:
    status, answer = exchange(mcp_port, head("POST", "/mcp", mcp_port, MAX_BODY_BYTES + 1))
    assert status == 413
    assert json.loads(answer)["error"]["data"]["reason"] == "PAYLOAD_TOO_LARGE"
    assert_quiet(log)


def test_mcp_deep_nesting_names_the_limit(mcp_port: int, log: Records) -> None:
    status, answer = exchange(mcp_port, head("POST", "/mcp", mcp_port, len(DEEP)) + DEEP)
    assert status == 400
    assert (
        json.loads(answer)["error"]["message"] == f"request body nests deeper than {MAX_JSON_DEPTH}"
    )
    assert_quiet(log)


def test_mcp_foreign_host_is_refused_by_the_guard(mcp_port: int, log: Records) -> None:
    request = head("POST", "/mcp", mcp_port, 2).replace(b"127.0.0.1:", b"evil.example:") + b"{}"
    status, answer = exchange(mcp_port, request)
    assert status == 400 and b"Invalid host header" in answer
    assert_quiet(log)


def test_mcp_slow_head_is_cut_off(mcp_port: int, log: Records) -> None:
    assert closed_within(mcp_port, b"POST /mcp HTTP/1.1\r\n", TIMEOUT + WITHIN) >= TIMEOUT
    assert_quiet(log)


def test_mcp_client_leaving_mid_body(mcp_port: int, log: Records) -> None:
    leave_mid_body(mcp_port, "/mcp")
    log.wait_for("client left during POST /mcp")
    assert_quiet(log)


# -- OpenEnv -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def openenv_port(generated: Callable[[str, int, int], Path]) -> Iterator[int]:
    try:
        release = importlib.metadata.version("openenv")
    except importlib.metadata.PackageNotFoundError:
        release = "0"
    if release.split(".")[:2] != ["0", "10"]:
        pytest.skip("needs the openenv 0.10 package (make test-openenv)")
    from veritask.serve.openenv_app import openenv_server

    dataset = str(generated("travel", 6, 11))
    server, sock = openenv_server(dataset, port=0, request_timeout=TIMEOUT)
    yield from serve_in_thread(server, sock)


OPENENV_BODIES = {**BODIES, "wrong schema": b'{"action": {"kind": "fly"}}'}


@pytest.mark.parametrize("name", sorted(OPENENV_BODIES))
def test_openenv_bad_body(openenv_port: int, log: Records, name: str) -> None:
    body = OPENENV_BODIES[name]
    status, answer = exchange(openenv_port, head("POST", "/step", openenv_port, len(body)) + body)
    assert 400 <= status < 500, (status, answer)
    json.loads(answer)
    assert_quiet(log)


def test_openenv_oversized_body_and_slow_head(openenv_port: int, log: Records) -> None:
    status, answer = exchange(openenv_port, head("POST", "/step", openenv_port, MAX_BODY_BYTES + 1))
    assert error_of(status, answer) == (413, "PAYLOAD_TOO_LARGE")
    assert closed_within(openenv_port, b"GET /health HTTP/1.1\r\n", TIMEOUT + WITHIN) >= TIMEOUT
    assert_quiet(log)


def test_openenv_client_leaving_mid_body(openenv_port: int, log: Records) -> None:
    leave_mid_body(openenv_port, "/step")
    log.wait_for("client left during POST /step")
    assert_quiet(log)


def websocket_session(port: int, script: Callable[[Any], Any]) -> Any:
    """Run ``script(ws)`` on a WebSocket to ``/ws`` and return what it returned."""
    websockets = pytest.importorskip("websockets.asyncio.client")

    async def main() -> Any:
        async with websockets.connect(f"ws://127.0.0.1:{port}/ws") as ws:
            return await script(ws)

    return asyncio.run(main())


def test_openenv_websocket_deep_message_keeps_the_session(openenv_port: int, log: Records) -> None:
    async def script(ws: Any) -> list[dict[str, Any]]:
        answers = []
        await ws.send(json.dumps({"type": "reset", "data": {}}))
        answers.append(json.loads(await ws.recv()))
        await ws.send('{"type": "step", "data": ' + "[" * 1000 + "]" * 1000 + "}")
        answers.append(json.loads(await ws.recv()))
        await ws.send(json.dumps({"type": "state"}))
        answers.append(json.loads(await ws.recv()))
        return answers

    reset, deep, state = websocket_session(openenv_port, script)
    assert reset["type"] == "observation"
    assert deep["type"] == "error" and "nests deeper than" in deep["data"]["message"]
    assert state["type"] == "state"  # the session outlived the bad message
    log.wait_for("websocket closed (1000)")  # a debug line, written once the session ended
    assert_quiet(log)


def test_openenv_websocket_outlives_the_request_timeout(openenv_port: int, log: Records) -> None:
    """The deadline covers the upgrade request only, not the WebSocket that follows it."""

    async def script(ws: Any) -> str:
        await ws.send(json.dumps({"type": "reset", "data": {}}))
        await ws.recv()
        await asyncio.sleep(2 * TIMEOUT)  # idle past the deadline, as a slow policy would be
        await ws.send(json.dumps({"type": "state"}))
        return str(json.loads(await ws.recv())["type"])

    assert websocket_session(openenv_port, script) == "state"
    assert "Traceback" not in log.text()


def test_openenv_normal_websocket_close_logs_nothing(openenv_port: int, log: Records) -> None:
    async def script(ws: Any) -> str:
        await ws.send(json.dumps({"type": "reset", "data": {}}))
        return str(json.loads(await ws.recv())["type"])

    for _ in range(3):
        assert websocket_session(openenv_port, script) == "observation"
    deadline = time.monotonic() + WITHIN
    while log.text().count("websocket closed (1000)") < 3:  # debug lines, once each ended
        assert time.monotonic() < deadline, log.text()
        time.sleep(0.01)
    assert "Traceback" not in log.text(), log.text()
    assert log.failure_lines() == []


def test_openenv_abnormal_websocket_close_is_one_line(openenv_port: int, log: Records) -> None:
    async def script(ws: Any) -> None:
        await ws.send(json.dumps({"type": "reset", "data": {}}))
        await ws.recv()
        ws.transport.abort()

    websocket_session(openenv_port, script)
    log.wait_for("websocket closed abnormally")
    assert_quiet(log)


# -- nesting and the rate limiter as units -------------------------------------------------------


def test_loads_bounded() -> None:
    assert loads_bounded('{"a": [1, {"b": 2}]}') == {"a": [1, {"b": 2}]}
    assert not nests_deeper([[[]]], 3) and nests_deeper([[[[]]]], 3)
    with pytest.raises(TooDeep, match="nests deeper than 3"):
        loads_bounded("[[[[1]]]]", 3)
    with pytest.raises(TooDeep):  # past Python's own recursion limit
        loads_bounded("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError):
        loads_bounded(b"\xff")


def test_log_limiter_writes_one_line_a_second_with_a_count() -> None:
    now = [0.0]
    logger = logging.getLogger("veritask.test.limiter")
    handler = Records()
    logger.addHandler(handler)
    logger.propagate = False
    try:
        limiter = LogLimiter(logger, interval=1.0, clock=lambda: now[0])
        written = 0
        for i in range(10_000):  # a burst of accept failures over 2.5 s
            now[0] = i * 0.00025
            written += limiter.log("accept", logging.ERROR, "cannot accept (%s)", "EMFILE")
        assert written == 3  # at 0, 1 and 2 s
        assert limiter.suppressed("accept") == 1999  # the rest of the last second
        lines = [text for _, text in handler.records]
        assert lines[0] == "ERROR veritask.test.limiter cannot accept (EMFILE)"
        assert lines[1].endswith("(3999 similar messages suppressed)")
        assert lines[2].endswith("(3999 similar messages suppressed)")
        assert limiter.log("other kind", logging.WARNING, "another failure")  # counted apart
        now[0] = 3.0
        assert limiter.log("accept", logging.ERROR, "cannot accept (%s)", "EMFILE")
        assert handler.records[-1][1].endswith("(1999 similar messages suppressed)")
    finally:
        logger.removeHandler(handler)
        logger.propagate = True


# -- out of file descriptors, for real -----------------------------------------------------------

CHILD = """
import logging, resource, sys
from veritask.serve import open_source
from veritask.serve.server import EnvHTTPServer
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
server = EnvHTTPServer(open_source("mock"), port=0, request_timeout=60)
print(server.port, flush=True)
server.serve_forever()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_NOFILE on Linux")
def test_out_of_descriptors_logs_a_line_a_second(tmp_path: Path) -> None:
    errors = tmp_path / "stderr"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with errors.open("wb") as sink:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=sink, env=env
        )
    try:
        assert child.stdout is not None
        port = int(child.stdout.readline())
        held = [socket.create_connection(("127.0.0.1", port), timeout=WITHIN) for _ in range(100)]
        start = time.monotonic()
        while errors.read_text().count("cannot accept connections") < 2:  # two rounds
            assert time.monotonic() - start < WITHIN, errors.read_text()
            time.sleep(0.05)
        elapsed = time.monotonic() - start
        text = errors.read_text()
        for sock in held:
            sock.close()
        # accepting resumes once descriptors are free again
        ask = head("GET", "/health", port, 0)
        deadline = time.monotonic() + WITHIN
        while exchange(port, ask)[0] != 200:
            assert time.monotonic() < deadline
    finally:
        child.terminate()
        child.wait(WITHIN)
    assert "Traceback" not in text
    assert 2 <= text.count("\n") <= elapsed + 2, text  # about one line a second, not thousands


def test_cli_options_and_limits_are_checked() -> None:
    from click.testing import CliRunner

    from veritask._cli.serve_http import serve_cmd
    from veritask._cli.serve_mcp import serve_mcp_cmd

    assert "--max-connections" in CliRunner().invoke(serve_cmd, ["--help"]).output
    mcp_help = CliRunner().invoke(serve_mcp_cmd, ["--help"]).output
    assert "--max-connections" in mcp_help and "--request-timeout" in mcp_help
    refused = CliRunner().invoke(serve_cmd, ["mock", "--port", "0", "--max-connections", "0"])
    assert refused.exit_code != 0 and "--max-connections" in refused.output
    from veritask.serve._listen import guarded_protocol

    with pytest.raises(ValueError, match="max_connections"):
        guarded_protocol(1.0, 0)
    with pytest.raises(ValueError, match="request_timeout"):
        guarded_protocol(0, 10)
