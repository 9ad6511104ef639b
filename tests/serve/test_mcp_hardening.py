"""The MCP server under attack: every stdio line gets a JSON-RPC answer (the real server process
driven over its stdin and stdout), and the HTTP transport keeps to loopback and its own names.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from veritask._cli.serve_mcp import serve_mcp_cmd
from veritask.serve.mcp_server import (
    HTTP_PATH,
    build_server,
    http_app,
    request_id,
    rpc_error,
    run_http,
)

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


def call_line(request: int, arguments: str) -> str:
    """A ``tools/call`` of ``query_loans`` whose arguments are the raw JSON text given."""
    params = f'{{"name": "query_loans", "arguments": {arguments}}}'
    return f'{{"jsonrpc": "2.0", "id": {request}, "method": "tools/call", "params": {params}}}'


def test_request_id_is_found_without_parsing_the_rest() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert request_id(call_line(7, f'{{"x": {deep}}}')) == 7
    assert request_id('{"method": "id", "params": {"id": 3}, "id": "abc"}') == "abc"
    assert request_id('{"params": {"id": 3}}') is None  # only the top level counts
    assert request_id('{"id": true}') is None and request_id('{"id": {"a": 1}}') is None
    assert request_id('{"id": 5, "params": {bad') == 5
    assert request_id("[1, 2]") is None and request_id("not json") is None


def test_rpc_error_classifies_lines() -> None:
    assert rpc_error(call_line(1, '{"member_id": "m_ana"}')) is None
    parse = rpc_error("{not json").model_dump(by_alias=True, mode="json")
    assert parse["id"] is None and parse["error"]["code"] == -32700
    invalid = rpc_error('{"jsonrpc": "2.0", "id": 4}').model_dump(by_alias=True, mode="json")
    assert invalid["id"] == 4 and invalid["error"]["code"] == -32600


class StdioServer:
    """``veritask serve-mcp mock`` as a child process, spoken to line by line."""

    def __init__(self, cwd: Path) -> None:
        code = "from veritask._cli.serve_mcp import serve_mcp_cmd; serve_mcp_cmd()"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, "mock"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            cwd=cwd,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        """Queue every line the server writes."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, line: str | dict[str, Any]) -> None:
        """Write one line (a lone surrogate in ``line`` goes out as its raw bytes)."""
        assert self.proc.stdin is not None
        text = line if isinstance(line, str) else json.dumps(line)
        self.proc.stdin.write(text.encode("utf-8", "surrogatepass") + b"\n")
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        """The next message, within 30 s (a missing answer fails the test, it does not hang)."""
        try:
            line = self.lines.get(timeout=30)
        except queue.Empty:
            raise AssertionError("the server did not answer") from None
        message: dict[str, Any] = json.loads(line)
        return message

    def close(self) -> None:
        """Close stdin, as a client does to stop the server, and wait for it to exit."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture
def stdio(tmp_path: Path) -> Iterator[StdioServer]:
    server = StdioServer(tmp_path)
    try:
        server.send(INIT)
        assert server.receive()["id"] == 0
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield server
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()


def test_stdio_answers_every_line(stdio: StdioServer) -> None:
    deep = '{"a": ' * 5_000 + "1" + "}" * 5_000
    hostile = [
        ("{not json", None, -32700),
        (call_line(2, f'{{"member_id": {deep}}}'), 2, -32600),  # deeper than the parser goes
        (call_line(3, '{"member_id": "\\ud800"}'), 3, -32600),  # a lone surrogate
        (call_line(4, '{"member_id": "\ud800"}'), 4, None),  # a raw one: invalid UTF-8 bytes
        ('{"jsonrpc": "2.0", "id": 5}', 5, -32600),  # neither request nor response
        ("[1, 2, 3]", None, -32600),
        (call_line(6, '{"member_id": ' + "[" * 150 + "]" * 150 + "}"), 6, None),
        (call_line(7, '{"id": 1180591620717411303424}'), 7, None),  # 2**70
    ]
    for line, _, _ in hostile:
        stdio.send(line)
    answers = [stdio.receive() for _ in hostile]
    by_id = {a.get("id"): a for a in answers if a.get("id") is not None}
    for line, request, code in hostile:
        if request is None:
            assert any(a["id"] is None and a["error"]["code"] == code for a in answers), line
            continue
        answer = by_id[request]
        if code is not None:
            assert answer["error"]["code"] == code, answer
        else:  # accepted by the transport: a tool result or a JSON-RPC error, never silence
            assert "result" in answer or "error" in answer
    assert len(answers) == len(hostile)
    # and the server still works
    stdio.send({"jsonrpc": "2.0", "id": 99, "method": "tools/list"})
    assert any(t["name"] == "query_loans" for t in stdio.receive()["result"]["tools"])
    stdio.close()
    assert stdio.proc.returncode == 0


def free_port() -> int:
    """A loopback port nothing listens on (at the time of asking)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_http_transport_refuses_foreign_host_and_origin() -> None:
    import uvicorn

    port = free_port()
    served = build_server("mock")
    config = uvicorn.Config(
        http_app(served.server, port=port), host="127.0.0.1", port=port, log_level="warning"
    )
    web = uvicorn.Server(config)
    body = json.dumps(INIT).encode()

    def status(host: str, origin: str | None = None) -> int:
        """The status of an ``initialize`` POST naming ``host`` (and ``origin``)."""
        head = (
            f"POST {HTTP_PATH} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n"
            + (f"Origin: {origin}\r\n" if origin else "")
            + "Connection: close\r\n\r\n"
        )
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(head.encode() + body)
            return int(sock.recv(100).split()[1])

    results: dict[str, int] = {}

    async def probe() -> None:
        while not web.started:
            await anyio.sleep(0.02)
        results["evil"] = await anyio.to_thread.run_sync(status, f"evil.example:{port}")
        results["port"] = await anyio.to_thread.run_sync(status, "127.0.0.1:1")
        results["origin"] = await anyio.to_thread.run_sync(
            status, f"127.0.0.1:{port}", "http://evil.example"
        )
        results["good"] = await anyio.to_thread.run_sync(
            status, f"localhost:{port}", f"http://localhost:{port}"
        )

    async def main() -> None:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(web.serve)
                try:
                    await probe()
                finally:
                    web.should_exit = True

    anyio.run(main)
    served.close()
    assert results["evil"] == 400 and results["port"] == 200  # host names, on any port
    assert results["origin"] == 403
    assert results["good"] == 200


def test_http_transport_binds_loopback_unless_allowed() -> None:
    with pytest.raises(ValueError, match="allow_remote"):
        run_http("mock", host="0.0.0.0", port=free_port())
    result = CliRunner().invoke(
        serve_mcp_cmd, ["mock", "--transport", "http", "--host", "0.0.0.0", "--port", "8765"]
    )
    assert result.exit_code != 0 and "--allow-remote" in result.output
    help_text = CliRunner().invoke(serve_mcp_cmd, ["--help"]).output
    assert "--allow-remote" in help_text and "--allowed-host" in help_text
