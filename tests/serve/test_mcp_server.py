"""The MCP server: an in-process MCP client lists the tools, calls them, gets structured errors."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from click.testing import CliRunner
from mcp import ClientSession
from tests._mcp_memory import in_session

from veritask._cli.serve_mcp import serve_mcp_cmd
from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment
from veritask.serve.mcp_server import build_server

LAPSED_LOAN = {"member_id": "m_lapsed", "book_id": "b_dune", "due_step": 10}
GOOD_LOAN = {"member_id": "m_ana", "book_id": "b_dune", "due_step": 10}


async def call(session: ClientSession, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """Call a tool; the result as its wire-form dict (``isError``, ``structuredContent``...)."""
    result = await session.call_tool(tool, args)
    wire: dict[str, Any] = result.model_dump(by_alias=True, mode="json")
    return wire


def text_payload(wire: dict[str, Any]) -> Any:
    """The JSON carried by the single text content block."""
    (block,) = wire["content"]
    assert block["type"] == "text"
    return json.loads(block["text"])


def test_lists_every_tool_with_schema(compiled: dict[str, CompiledDomain]) -> None:
    served = build_server("mock")

    async def body(session: ClientSession) -> list[dict[str, Any]]:
        listed = await session.list_tools()
        return [t.model_dump(by_alias=True, mode="json") for t in listed.tools]

    tools = in_session(served, body)
    expected = compiled["mock"].tools
    assert [t["name"] for t in tools] == list(expected)
    for tool in tools:
        spec = expected[tool["name"]]
        assert tool["description"] == spec.description
        assert tool["inputSchema"] == spec.json_schema()
    insert = next(t for t in tools if t["name"] == "insert_loans")
    assert "[PREREQ_FAIL]" in insert["description"]


def test_query_succeeds_with_structured_content() -> None:
    served = build_server("mock")
    wire = in_session(served, lambda s: call(s, "query_books", {"available": 1}))
    assert wire["isError"] is False
    payload = text_payload(wire)
    assert payload == wire["structuredContent"]
    assert payload["total"] == 2
    assert {r["id"] for r in payload["rows"]} == {"b_dune", "b_hobbit"}


def test_policy_violation_is_a_structured_tool_error() -> None:
    served = build_server("mock")
    before = served.env.image()
    wire = in_session(served, lambda s: call(s, "insert_loans", LAPSED_LOAN))
    assert wire["isError"] is True
    payload = text_payload(wire)
    assert payload == wire["structuredContent"]
    assert set(payload) == {"code", "message", "violated_rule", "hint"}
    assert payload["violated_rule"] == "MEMBER_ACTIVE"
    assert payload["code"] == "PREREQ_FAIL"
    assert payload["hint"]
    assert served.env.image() == before


def test_unknown_tool_and_bad_arguments_are_tool_errors() -> None:
    served = build_server("mock")

    async def body(session: ClientSession) -> tuple[dict[str, Any], dict[str, Any]]:
        unknown = await call(session, "delete_members", {"id": "m_ana"})
        bad = await call(session, "insert_loans", {"member_id": "m_ana"})
        return unknown, bad

    unknown, bad = in_session(served, body)
    assert unknown["isError"] is True
    assert text_payload(unknown)["code"] == "UNKNOWN_TOOL"
    assert "query_books" in text_payload(unknown)["hint"]
    assert bad["isError"] is True
    assert text_payload(bad)["violated_rule"] is None
    assert text_payload(bad)["code"]


def test_state_persists_across_calls() -> None:
    served = build_server("mock")

    async def body(session: ClientSession) -> tuple[dict[str, Any], dict[str, Any]]:
        inserted = await call(session, "insert_loans", GOOD_LOAN)
        loans = await call(session, "query_loans", {"member_id": "m_ana", "book_id": "b_dune"})
        return inserted, loans

    inserted, loans = in_session(served, body)
    assert inserted["isError"] is False
    row = text_payload(inserted)
    assert row["member_id"] == "m_ana"
    assert row["status"] == "OPEN"
    assert [r["id"] for r in text_payload(loans)["rows"]] == [row["id"]]
    assert served.env.rows("books")[0]["available"] == 0


def test_state_file_is_loaded(tmp_path: Path, compiled: dict[str, CompiledDomain]) -> None:
    env = Environment(compiled["mock"])
    assert env.call("insert_loans", GOOD_LOAN).ok
    state = tmp_path / "state.db"
    env.save(state)
    served = build_server(load_domain("mock"), state)

    async def body(session: ClientSession) -> tuple[dict[str, Any], dict[str, Any]]:
        loans = await call(session, "query_loans", {"book_id": "b_dune"})
        again = await call(session, "insert_loans", {**GOOD_LOAN, "member_id": "m_ben"})
        return loans, again

    loans, again = in_session(served, body)
    assert text_payload(loans)["total"] == 1
    assert again["isError"] is True
    assert text_payload(again)["violated_rule"] == "BOOK_AVAILABLE"


def test_stdio_transport_end_to_end(tmp_path: Path) -> None:
    """The command itself, spawned as a real stdio MCP server."""
    from mcp import StdioServerParameters, stdio_client

    code = "from veritask._cli.serve_mcp import serve_mcp_cmd; serve_mcp_cmd()"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", code, "mock"],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        cwd=str(tmp_path),
    )

    async def main() -> dict[str, Any]:
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await call(session, "insert_loans", LAPSED_LOAN)

    async def bounded() -> dict[str, Any]:
        with anyio.fail_after(60):
            return await main()

    wire = anyio.run(bounded)
    assert wire["isError"] is True
    assert text_payload(wire)["violated_rule"] == "MEMBER_ACTIVE"


def test_http_transport_end_to_end() -> None:
    """The streamable-HTTP app under a real uvicorn on a loopback port."""
    import importlib
    import socket

    import uvicorn

    from veritask.serve.mcp_server import HTTP_PATH, http_app

    module: Any = importlib.import_module("mcp.client.streamable_http")
    # mcp 2.x: streamable_http_client yields (read, write); 1.x: streamablehttp_client adds a third.
    connect = getattr(module, "streamable_http_client", None) or module.streamablehttp_client
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    served = build_server("mock")
    config = uvicorn.Config(
        http_app(served.server, port=port), host="127.0.0.1", port=port, log_level="warning"
    )
    web = uvicorn.Server(config)

    async def client() -> tuple[list[str], dict[str, Any]]:
        while not web.started:
            await anyio.sleep(0.05)
        async with (
            connect(f"http://127.0.0.1:{port}{HTTP_PATH}") as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            return names, await call(session, "insert_loans", LAPSED_LOAN)

    out: list[tuple[list[str], dict[str, Any]]] = []

    async def main() -> None:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(web.serve)
                try:
                    out.append(await client())
                finally:
                    web.should_exit = True

    anyio.run(main)
    ((names, wire),) = out
    assert names == list(served.env.tools)
    assert wire["isError"] is True
    assert text_payload(wire)["violated_rule"] == "MEMBER_ACTIVE"


def test_cli_help() -> None:
    result = CliRunner().invoke(serve_mcp_cmd, ["--help"], catch_exceptions=False)
    assert result.exit_code == 0
    for option in ("DOMAIN", "--state", "--transport", "stdio|http", "--host", "--port"):
        assert option in result.output


def test_cli_rejects_unknown_domain() -> None:
    result = CliRunner().invoke(serve_mcp_cmd, ["no_such_domain"])
    assert result.exit_code != 0
    assert "unknown domain" in result.output
