"""The HTTP server under attack, on loopback with real sockets: foreign Host and Origin, huge and
slow request heads, sessions that grow without bound, a large state read, and error bodies.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import selectors
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from veritask.env import CompiledDomain
from veritask.serve import (
    ANY_HOST,
    DomainSource,
    EnvService,
    TaskStart,
    host_names,
    origin_allowed,
)

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

from veritask.serve.client import EnvClient
from veritask.serve.server import EnvHTTPServer

GOOD_LOAN = {"member_id": "m_ana", "book_id": "b_dune", "due_step": 10}
SLOW_CONNECTIONS = 400
TIMEOUT = 0.5


@pytest.fixture(scope="module")
def server(compiled: dict[str, CompiledDomain]) -> Iterator[EnvHTTPServer]:
    source = DomainSource(compiled["mock"])
    with EnvHTTPServer(source, port=0, request_timeout=TIMEOUT) as srv:
        srv.start()
        yield srv


def exchange(port: int, request: bytes, timeout: float = 10) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes, read until the server hangs up; (status, headers, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, body


def request(method: str, path: str, host: str, extra: str = "", body: bytes = b"") -> bytes:
    """A raw HTTP/1.1 request that closes its connection."""
    head = f"{method} {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n"
    return head.encode() + f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def error_code(status: int, headers: dict[str, str], body: bytes, expected: int) -> str:
    """The JSON error's code, after checking the status and the content type."""
    assert status == expected, body
    assert headers["content-type"].startswith("application/json")
    code: str = json.loads(body)["error"]["code"]
    return code


# -- Host and Origin -------------------------------------------------------------------------------


def test_allow_list_entries() -> None:
    names = host_names(["env.example", "10.0.0.5:9000", "::2", "[fe80::1]:81"])
    assert names == [
        "127.0.0.1",
        "localhost",
        "[::1]",
        "env.example",
        "10.0.0.5",
        "[::2]",
        "[fe80::1]",
    ]
    assert host_names(["*"]) == [ANY_HOST]
    assert origin_allowed("http://evil.example", [ANY_HOST])
    assert origin_allowed(None, names)  # no browser
    assert origin_allowed("https://[::1]:8000", names) and origin_allowed(
        "http://LOCALHOST:1", names
    )
    assert not origin_allowed("null", names)
    assert not origin_allowed("http://evil.example:8000", names)
    assert not origin_allowed("file://localhost", names)


@pytest.mark.parametrize(
    "host", ["127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}", "127.0.0.1:1", "localhost"]
)
def test_loopback_names_are_served_on_any_port(server: EnvHTTPServer, host: str) -> None:
    """The guard compares host names only: a server started without being told its port (or
    behind a port mapping) still answers."""
    host = host.format(port=server.port)
    status, _, body = exchange(server.port, request("GET", "/health", host))
    assert status == 200 and json.loads(body)["status"] == "ok"


def test_foreign_host_never_reaches_reset(server: EnvHTTPServer) -> None:
    """DNS rebinding: Starlette's TrustedHostMiddleware answers 400 before the app."""
    before = server.service.health()["sessions"]
    answer = exchange(
        server.port, request("POST", "/reset", f"evil.example:{server.port}", "", b"{}")
    )
    assert answer[0] == 400 and b"Invalid host header" in answer[2]
    assert server.service.health()["sessions"] == before


@pytest.mark.parametrize(
    ("host", "origin", "status", "code"),
    [
        ("127.0.0.1:{port}", "http://evil.example", 403, "ORIGIN_NOT_ALLOWED"),  # cross-site
        ("127.0.0.1:{port}", "null", 403, "ORIGIN_NOT_ALLOWED"),
        ("127.0.0.1:{port}", "http://evil.example:{port}", 403, "ORIGIN_NOT_ALLOWED"),
    ],
)
def test_foreign_origin_never_reaches_reset(
    server: EnvHTTPServer, host: str, origin: str | None, status: int, code: str
) -> None:
    before = server.service.health()["sessions"]
    extra = f"Origin: {origin.format(port=server.port)}\r\n" if origin else ""
    host = host.format(port=server.port)
    answer = exchange(server.port, request("POST", "/reset", host, extra, b"{}"))
    assert error_code(*answer, status) == code
    assert answer[1]["connection"] == "close"
    assert server.service.health()["sessions"] == before  # no session was opened


def test_same_origin_post_is_served(server: EnvHTTPServer) -> None:
    origin = f"Origin: http://localhost:{server.port}\r\n"
    status, _, body = exchange(
        server.port, request("POST", "/reset", f"localhost:{server.port}", origin, b"{}")
    )
    assert status == 200
    server.service.delete(json.loads(body)["session_id"])


def test_configured_names(compiled: dict[str, CompiledDomain]) -> None:
    source = DomainSource(compiled["mock"])
    with EnvHTTPServer(source, port=0, allowed_hosts=["env.example"]) as srv:
        srv.start()
        assert exchange(srv.port, request("GET", "/health", f"env.example:{srv.port}"))[0] == 200
        assert exchange(srv.port, request("GET", "/health", "other.example"))[0] == 400
    with EnvHTTPServer(source, port=0, allowed_hosts=["*"]) as srv:
        srv.start()
        assert exchange(srv.port, request("GET", "/health", "any.example"))[0] == 200


# -- request heads: size and time ------------------------------------------------------------------


def test_head_over_64_kib_is_refused(server: EnvHTTPServer) -> None:
    host = f"127.0.0.1:{server.port}"
    fits = request("GET", "/health", host, f"X-Pad: {'a' * 60_000}\r\n")
    assert exchange(server.port, fits)[0] == 200
    # the whole head in one write reaches the app, which counts it
    big = request("GET", "/health", host, f"X-Pad: {'a' * 70_000}\r\n")
    assert error_code(*exchange(server.port, big), 431) == "HEADERS_TOO_LARGE"
    many = "".join(f"X-{i}: {'b' * 100}\r\n" for i in range(1000))
    assert error_code(*exchange(server.port, request("GET", "/health", host, many)), 431)
    # a head arriving in pieces is cut off by the parser once it passes the limit
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(f"GET /health HTTP/1.1\r\nHost: {host}\r\n".encode())
        with contextlib.suppress(OSError):  # the server may hang up before the last piece
            for i in range(200):
                sock.sendall(f"X-{i}: {'c' * 1000}\r\n".encode())
        answer = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                answer += chunk
    if answer:  # when the answer was not lost to a reset, it is a JSON 400
        assert answer.startswith(b"HTTP/1.1 400")
        assert json.loads(answer.partition(b"\r\n\r\n")[2])["error"]["code"] == "BAD_REQUEST"


def wait_closed(socks: list[socket.socket], within: float) -> tuple[int, float]:
    """Wait until the server closes every socket or ``within`` seconds pass; (open, seconds)."""
    start = time.monotonic()
    selector = selectors.DefaultSelector()
    for sock in socks:
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
    open_ = len(socks)
    while open_ and time.monotonic() - start < within:
        for key, _ in selector.select(timeout=0.1):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            try:
                data = sock.recv(4096)
            except ConnectionResetError:
                data = b""
            if not data:
                selector.unregister(sock)
                open_ -= 1
    selector.close()
    return open_, time.monotonic() - start


def test_slow_heads_are_closed_after_the_request_timeout(server: EnvHTTPServer) -> None:
    host = f"127.0.0.1:{server.port}"
    partial = [b"", b"G", f"GET /health HTTP/1.1\r\nHost: {host}\r\n".encode()]
    socks = []
    try:
        for i in range(SLOW_CONNECTIONS):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            socks.append(sock)
            sock.sendall(partial[i % len(partial)])
        # a body that never finishes arriving is cut off the same way
        slow_body = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        socks.append(slow_body)
        slow_body.sendall(request("POST", "/reset", host, body=b"{}")[:-1])
        # meanwhile the server keeps answering everyone else
        with EnvClient(server.url, timeout=10) as client:
            assert client.health()["status"] == "ok"
        still_open, waited = wait_closed(socks, within=TIMEOUT + 10)
        assert still_open == 0, f"{still_open} slow connection(s) still open after {waited:.1f} s"
    finally:
        for sock in socks:
            sock.close()


def read_answer(sock: socket.socket) -> bytes:
    """One answer on a kept-alive connection (its head, then Content-Length bytes)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head


def test_idle_keep_alive_outlives_the_request_timeout(server: EnvHTTPServer) -> None:
    """The deadline runs only while a request is arriving, not between requests."""
    ask = f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(ask)
        assert read_answer(sock).startswith(b"HTTP/1.1 200")
        time.sleep(2 * TIMEOUT)
        sock.sendall(ask)  # the same connection, idle for twice the request timeout
        assert read_answer(sock).startswith(b"HTTP/1.1 200")


# -- per-session size cap --------------------------------------------------------------------------


def loan_cycle(service: EnvService, sid: str) -> Iterator[dict[str, Any]]:
    """Lend a book, return it, again and again: each write adds to the database."""
    while True:
        lend = {"tool": "insert_loans", "arguments": GOOD_LOAN}
        lent = service.step({"session_id": sid, "action": lend})["observation"]
        yield lent
        back = {"id": lent["result"]["id"], "status": "RETURNED", "return_step": 1}
        back["late_fee"] = 0
        action = {"tool": "update_loans", "arguments": back}
        yield service.step({"session_id": sid, "action": action})["observation"]


def test_a_write_past_the_size_cap_is_undone(compiled: dict[str, CompiledDomain]) -> None:
    cap = len(compiled["mock"].seed) + 2 * 4096  # room for a couple of pages of loans
    service = EnvService(DomainSource(compiled["mock"]), max_state_bytes=cap)
    sid = service.reset({})["session_id"]
    steps = loan_cycle(service, sid)
    for _ in range(5000):
        before = service.state(sid)
        with service.store.use(sid) as served:
            image = served.session.env.image()
        observation = next(steps)
        if not observation["ok"]:
            break
    assert observation["error"]["code"] == "STATE_TOO_LARGE", observation
    assert observation["state_changed"] is False
    after = service.state(sid)
    assert after["state_sha256"] == before["state_sha256"]  # the refused write left no trace
    assert after["steps"] == before["steps"] + 1  # but it counts as a call
    with service.store.use(sid) as served:
        assert served.session.env.image() == image
        assert len(image) <= cap
    # reads still work, and so does starting over
    query = {"tool": "query_loans", "arguments": {"member_id": "m_ana"}}
    assert service.step({"session_id": sid, "action": query})["observation"]["ok"]
    service.reset({"session_id": sid})
    assert next(loan_cycle(service, sid))["ok"]
    with pytest.raises(ValueError, match="max_state_bytes"):
        EnvService(DomainSource(compiled["mock"]), max_state_bytes=0)
    service.close()


def test_size_cap_over_http(compiled: dict[str, CompiledDomain]) -> None:
    source = DomainSource(compiled["mock"])
    with EnvHTTPServer(source, port=0, max_state_bytes=1) as srv, EnvClient(srv.start().url) as c:
        sid = c.reset()["session_id"]
        before = c.state(sid)["state_sha256"]
        step = c.step(sid, "insert_loans", GOOD_LOAN)
        assert step["observation"]["error"]["code"] == "STATE_TOO_LARGE"
        assert c.state(sid)["state_sha256"] == before
        assert c.health()["max_state_bytes"] == 1


# -- a large state read does not hold up other requests -------------------------------------------


def big_domain(domain: CompiledDomain, members: int) -> CompiledDomain:
    """``domain`` whose seed state holds ``members`` more members (written with plain sqlite3)."""
    conn = sqlite3.connect(":memory:")
    conn.deserialize(domain.seed)
    conn.executemany(
        "INSERT INTO members (id, name, active, active_loans) VALUES (?, ?, 1, 0)",
        ((f"m_{i:07d}", f"Member number {i}") for i in range(members)),
    )
    conn.commit()
    seed = conn.serialize()
    conn.close()
    return dataclasses.replace(domain, seed=seed)


def test_big_state_read_runs_off_the_event_loop(
    compiled: dict[str, CompiledDomain], monkeypatch: pytest.MonkeyPatch
) -> None:
    """While one state read is in progress (held open until the test lets it finish), other
    requests are answered: the read does not run on the event loop. No timing is measured; a
    read on the loop would leave the probe requests unanswered until the client gives up."""
    real_state = EnvService.state
    entered, release = threading.Event(), threading.Event()
    held: list[str] = []

    def held_state(self: EnvService, session_id: str, *, rows: bool = False) -> dict[str, Any]:
        if session_id in held:
            entered.set()
            assert release.wait(60), "the probe requests were never answered"
        return real_state(self, session_id, rows=rows)

    monkeypatch.setattr(EnvService, "state", held_state)
    domain = big_domain(compiled["mock"], 20_000)
    with EnvHTTPServer(DomainSource(domain), port=0) as srv, EnvClient(srv.start().url) as c:
        big, small = c.reset()["session_id"], c.reset()["session_id"]
        held.append(big)
        answer: dict[str, Any] = {}
        reader = threading.Thread(target=lambda: answer.update(EnvClient(srv.url).state(big)))
        reader.start()
        assert entered.wait(60), "the big read never started"
        with EnvClient(srv.url, timeout=10) as probe:
            assert probe.health()["sessions"] == 2
            assert probe.step(small, "query_books", {"available": 1})["observation"]["ok"]
        release.set()
        reader.join(60)
    assert answer["state_sha256"]


# -- every error is JSON ---------------------------------------------------------------------------


class Broken:
    """A source whose every start fails: the server's 500 path."""

    mode = "domain"
    name = "broken"

    def task_ids(self) -> list[str]:
        """No tasks."""
        return []

    def start(self, task_id: str | None, seed: int | None) -> TaskStart:
        """Fail, naming what was asked for."""
        raise RuntimeError(f"no start for {task_id} {seed}")


def test_every_error_is_json(server: EnvHTTPServer) -> None:
    host = f"127.0.0.1:{server.port}"
    cases = [
        (request("GET", "/nowhere", host), 404),
        (request("GET", "/reset", host), 405),
        (request("POST", "/step", host, "", b"{not json"), 400),
        (request("GET", "/state?session_id=nope", host), 404),
        (
            b"POST /step HTTP/1.1\r\nHost: %b\r\nContent-Length: 99999999\r\n\r\n" % host.encode(),
            413,
        ),
        (
            b"POST /step HTTP/1.1\r\nHost: %b\r\nTransfer-Encoding: chunked\r\n\r\n"
            % host.encode(),
            411,
        ),
        (b"HELLO there / HTTP/1.1\r\n\r\n", 400),
        (b"GET /health HTTP/1.1\r\n\r\n", 400),  # HTTP/1.1 without Host
        (b"GET /health HTTP/1.1\r\nHost: %b\r\nContent-Length: -1\r\n\r\n" % host.encode(), 400),
        (request("GET", "/health", host, "X-Pad: " + "a" * 70_000 + "\r\n"), 431),
    ]
    for raw, expected in cases:
        error_code(*exchange(server.port, raw), expected)


def test_internal_errors_are_json_500() -> None:
    service = EnvService(Broken())
    with pytest.raises(RuntimeError):
        service.reset({})
    with EnvHTTPServer(Broken(), port=0) as srv:
        srv.start()
        answer = exchange(srv.port, request("POST", "/reset", f"127.0.0.1:{srv.port}"))
        assert error_code(*answer, 500) == "INTERNAL"
        assert b"Traceback" not in answer[2] and b"no start" not in answer[2]
