"""Tool catalogues from a spec, an OpenAI tools JSON, an MCP server over stdio, trajectories."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.simulate.conftest import Exports

from veritask._cli.main import cli
from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment
from veritask.simulate import catalog_from_json, catalog_from_spec, load_catalog


def test_spec_catalogue_matches_the_environment_tools() -> None:
    catalog = catalog_from_spec(load_domain("mock"))
    env = Environment(CompiledDomain.from_spec(load_domain("mock")))
    assert catalog.openai_tools() == env.openai_tools()
    insert = catalog.get("insert_loans")
    assert insert is not None and insert.writes is True
    assert [p.name for p in insert.params if p.required] == ["member_id", "book_id", "due_step"]
    query = catalog.get("query_loans")
    assert query is not None and query.returns is not None
    assert set(query.returns["properties"]) == {"rows", "total", "limit", "offset"}


def test_openai_tools_json_round_trips(tmp_path: Path) -> None:
    spec = catalog_from_spec(load_domain("travel"))
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"tools": spec.openai_tools()}))
    loaded = load_catalog(str(path))
    assert loaded.openai_tools() == spec.openai_tools()
    saved = catalog_from_json(spec.to_json())
    assert saved.openai_tools() == spec.openai_tools()
    assert saved.get("query_trips") == spec.get("query_trips")


def test_mcp_server_over_stdio_lists_the_same_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(sys.path))
    code = "from veritask._cli.serve_mcp import serve_mcp_cmd; serve_mcp_cmd()"
    ref = "mcp:" + shlex.join([sys.executable, "-c", code, "mock"])
    catalog = load_catalog(ref)
    spec = catalog_from_spec(load_domain("mock"))
    assert catalog.names == spec.names
    for name in spec.names:
        ours, theirs = spec.get(name), catalog.get(name)
        assert theirs is not None and ours is not None
        assert theirs.params == ours.params and theirs.description == ours.description


def test_catalogue_from_seed_trajectories(exports: Exports, tmp_path: Path) -> None:
    path = tmp_path / "seeds.jsonl"
    rows = [r for d, r in exports.rows["sharegpt"] if d == "retail"]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    catalog = load_catalog(str(path))
    spec = catalog_from_spec(load_domain("retail"))
    assert catalog.names and set(catalog.names) <= set(spec.names)
    for tool in catalog.tools.values():
        declared = spec.get(tool.name)
        assert declared is not None
        assert set(tool.param_names) <= set(declared.param_names)
        for param in tool.params:
            ref = declared.param(param.name)
            assert ref is not None and param.type in (None, ref.type)
            assert not param.required or param.name in tool.param_names


def test_tools_command_prints_the_catalogue() -> None:
    result = CliRunner().invoke(cli, ["simulate", "tools", "mock", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["source"] == "spec:mock" and len(data["tools"]) == 5
