"""Every tool of every built-in domain, called with fuzzed arguments through each door.

Arguments are drawn from hostile values (wrong JSON types, integers past 64 bits, non-finite
floats, long and NUL-bearing strings, lone surrogates, nested objects, SQL-injection text in
every argument, unknown and missing keys, text that is not JSON). Through ``Environment.call``,
the HTTP app and the MCP server: nothing raises, nothing answers 500, a rejected call leaves the
database byte-identical, and every rejection carries a structured error code.
"""

from __future__ import annotations

import json
import math
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests._mcp_memory import in_session

from veritask.domains import builtin_domains, load_domain
from veritask.env import CompiledDomain, Environment
from veritask.serve import DomainSource, EnvService
from veritask.serve.mcp_server import build_server

INJECTION = [
    "1); DROP TABLE loans; --", "' OR '1'='1", '" OR ""="', "x'; DELETE FROM members; --",
    "1 UNION SELECT sql FROM sqlite_master", "rowid", "NEW.id", "RAISE(ABORT, 'x')",
    "nul\x00byte", "\x00", "\ud800", "é" * 40, "x" * 70_000, "%s%n", "../../etc/passwd",
]  # fmt: skip
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([2**63, -(2**63) - 1, 2**70, 0, -1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e308, 5e-324]),
    st.text(max_size=12),
    st.sampled_from(INJECTION),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
SETTINGS = settings(
    max_examples=40,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@cache
def _compiled(name: str) -> CompiledDomain:
    return CompiledDomain.from_spec(load_domain(name))


@st.composite
def _call(draw: st.DrawFn, domain: str) -> tuple[str, Any]:
    """A tool of ``domain`` and hostile arguments: its own parameters (and some others) with
    hostile values, sometimes sent as JSON text, sometimes as text that is not JSON."""
    tools = _compiled(domain).tools
    tool = draw(st.sampled_from(sorted(tools)))
    names = st.one_of(st.sampled_from(sorted(tools[tool].params)), st.sampled_from(INJECTION))
    args = draw(st.dictionaries(names, VALUES, max_size=5))
    how = draw(st.sampled_from(["dict", "json", "text"]))
    if how == "json":
        return tool, json.dumps(args)
    if how == "text":
        return tool, draw(st.one_of(st.text(max_size=20), st.sampled_from(INJECTION)))
    return tool, args


@pytest.mark.parametrize("domain", builtin_domains())
def test_environment_call(domain: str) -> None:
    env = Environment(_compiled(domain))

    @SETTINGS
    @given(_call(domain))
    def run(call: tuple[str, Any]) -> None:
        before = env.image()
        result = env.call(*call)  # must not raise
        json.dumps(result.to_json(), ensure_ascii=False).encode("utf-8")
        if not result.ok:
            assert result.error is not None and result.error.code.isupper()
            assert result.error.code != "INTERNAL_ERROR", result.error.message
            assert env.image() == before and not result.state_changed

    run()


def test_http_step() -> None:
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from veritask.serve.app import make_app

    service = EnvService(DomainSource(_compiled("retail")))
    client = TestClient(make_app(service, hosts=frozenset({"testserver"})))
    sid = client.post("/reset", json={}).json()["session_id"]
    body = st.one_of(
        _call("retail").map(
            lambda c: {"session_id": sid, "action": {"tool": c[0], "arguments": c[1]}}
        ),
        VALUES,
    )

    @SETTINGS
    @given(body, st.booleans())
    def run(payload: Any, truncate: bool) -> None:
        before = client.get("/state", params={"session_id": sid}).json()["state_sha256"]
        data = json.dumps(payload).encode("utf-8", "surrogatepass")
        reply = client.post("/step", content=data[: len(data) // 2] if truncate else data,
                            headers={"content-type": "application/json"})  # fmt: skip
        assert reply.status_code < 500, reply.text
        answer = reply.json()
        observation = answer.get("observation") or {}
        if reply.status_code != 200 or not observation.get("ok"):
            code = (answer.get("error") or observation.get("error") or {}).get("code", "")
            assert code.isupper(), answer
            after = client.get("/state", params={"session_id": sid}).json()["state_sha256"]
            assert after == before

    run()


def test_mcp_call_tool() -> None:
    served = build_server("registrar")
    calls = st.lists(_call("registrar"), min_size=20, max_size=20)

    async def body(session: Any, batch: list[tuple[str, Any]]) -> list[tuple[bytes, bytes, Any]]:
        out = []
        for tool, args in batch:
            before = served.env.image()
            arguments = args if isinstance(args, dict) else {"raw": args}
            result = await session.call_tool(tool, arguments)
            out.append((before, served.env.image(), result.model_dump(by_alias=True, mode="json")))
        return out

    @settings(SETTINGS, max_examples=3)
    @given(calls)
    def run(batch: list[tuple[str, Any]]) -> None:
        for before, after, wire in in_session(served, lambda s: body(s, batch)):
            if wire["isError"]:
                assert after == before
                assert wire["content"] and wire["content"][0]["text"]

    run()
