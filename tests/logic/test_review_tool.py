"""The quality reviewer's sandboxed ``run_python`` tool, with a scripted reviewer: a second
solution found by code rejects the family, an error comes back as text, escapes are stopped,
the call budget holds, and the gate record lists the calls."""

from __future__ import annotations

import asyncio
import json
import re
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from test_sandbox_escapes import HOOK_OFF

from veritask._cli import logic_gate_cmds
from veritask.logic import (
    Family,
    FileFamily,
    SandboxUnavailable,
    _sandbox,
    family_from_source,
    get_family,
    sandbox_support,
)
from veritask.logic._code_tool import RUN_PYTHON_TOOL
from veritask.logic._review import blind_review, review_family
from veritask.logic._sandbox import SandboxSupport
from veritask.logic._settings import EvolveSettings
from veritask.model import CostLedger, ScriptedProvider, register_provider

SUPPORTED = sandbox_support().available
needs_sandbox = pytest.mark.skipif(not SUPPORTED, reason="the OS sandbox is unavailable here")

PICK_FILE = (Path(__file__).parents[1] / "fixtures" / "families" / "pick_residue.py").read_text(
    encoding="utf-8"
)

SEARCH = """import family
most = 0
for sample in family.samples:
    i = sample["inputs"]
    found = [x for x in range(1, i["top"] + 1) if x % 3 == i["r"]]
    assert family.solution(i) in found
    most = max(most, len(found))
print("most right answers on one sample:", most)
"""
CRITERIA = (
    "well_posed",
    "unambiguous_answer_format",
    "answer_derivable",
    "difficulty_scaling",
    "no_leaked_answer",
)


def verdict(failed: dict[str, str] | None = None) -> str:
    failed = failed or {}
    criteria = {c: {"passed": c not in failed, "reason": failed.get(c, "ok")} for c in CRITERIA}
    return json.dumps({**criteria, "verdict": "fail" if failed else "pass", "feedback": ""})


def call(code: str) -> dict[str, Any]:
    return {"content": None, "tool_calls": [{"name": "run_python", "arguments": {"code": code}}]}


Script = Callable[[list[dict[str, Any]], Any], Any]


@pytest.fixture
def family() -> Iterator[FileFamily]:
    made = family_from_source(PICK_FILE, "<pick_residue>")
    yield made
    made.close()


def review(family: Family, script: Script | list[Any], calls: int) -> tuple[Any, Any]:
    provider = ScriptedProvider(script)
    ledger = CostLedger()
    report = asyncio.run(review_family(family, provider, code_calls=calls, ledger=ledger))
    assert ledger.modules["review"].calls == len(provider.requests)
    return report, provider


@needs_sandbox
def test_a_reviewer_whose_code_finds_a_second_solution_rejects_the_family(
    family: FileFamily,
) -> None:
    def reviewer(messages: list[dict[str, Any]], tools: Any) -> Any:
        if messages[-1]["role"] != "tool":
            return call(SEARCH)
        result = json.loads(messages[-1]["content"])
        most = int(result["stdout"].rsplit(":", 1)[1])
        if most > 1:
            return verdict({"well_posed": f"run_python found {most} right answers on a sample"})
        return verdict()

    report, provider = review(family, reviewer, calls=2)
    assert not report.passed and report.verdict == "fail"
    assert report.problems == ["well_posed: run_python found 11 right answers on a sample"]
    assert provider.requests[0]["tools"] == [RUN_PYTHON_TOOL]
    assert "run_python" in provider.requests[0]["messages"][1]["content"]
    assert report.tool_calls == [
        {
            "code": SEARCH,
            "kind": "ok",
            "stdout": "most right answers on one sample: 11\n",
            "error": None,
        }
    ]
    assert report.to_json()["tool_calls"] == report.tool_calls


@needs_sandbox
def test_code_that_raises_gets_the_error_back_and_the_reviewer_still_decides(
    family: FileFamily,
) -> None:
    code = "import family\nprint(len(family.samples))\nfamily.solution({'top': 0, 'r': 0})\n"
    report, provider = review(family, [call(code), verdict()], calls=1)
    assert report.passed
    sent = json.loads(provider.requests[1]["messages"][-1]["content"])
    assert sent["ok"] is False and sent["stdout"] == "3\n"
    assert sent["error"].startswith("StopIteration")
    assert "(line 3)" in sent["error"]
    assert report.tool_calls is not None and report.tool_calls[0]["kind"] == "error"
    assert provider.requests[1]["tools"] is None  # the budget of one call is spent


@needs_sandbox
def test_escapes_are_stopped_by_the_sandbox_and_the_budget_holds(
    family: FileFamily, tmp_path: Path
) -> None:
    target = tmp_path / "escaped.txt"
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.setblocking(False)
    port = server.getsockname()[1]
    write = f"open({str(target)!r}, 'w').write('out')\n"
    connect = f"import socket\nsocket.create_connection(('127.0.0.1', {port}))\n"
    raw = f"import _socket\n_socket.socket().connect(('127.0.0.1', {port}))\n"
    attacks = [write, connect, HOOK_OFF + write, HOOK_OFF + raw]  # the hook, then the OS
    script = [*(call(code) for code in attacks), call("print('one more')"), verdict()]
    try:
        report, provider = review(family, script, calls=4)
        with pytest.raises(BlockingIOError):
            server.accept()  # nothing connected
    finally:
        server.close()
    assert not target.exists()
    assert report.passed and report.tool_calls is not None
    assert [c["kind"] for c in report.tool_calls] == ["forbidden"] * 4
    errors = [c["error"] for c in report.tool_calls]
    assert "outside the sandbox directory" in errors[0] and "not allowed" in errors[1]
    assert errors[2].startswith("PermissionError") and "seccomp" in errors[3], errors
    refused = json.loads(provider.requests[5]["messages"][-1]["content"])
    assert refused == {
        "ok": False,
        "stdout": "",
        "error": "no tool calls left: give your final answer",
    }


def test_the_evolve_command_passes_the_curator_and_the_reviewer_budget(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: list[EvolveSettings] = []

    def fake_evolve(family: Any, provider: Any, settings: EvolveSettings, **kw: Any) -> Any:
        del family, provider, kw
        seen.append(settings)
        raise click.ClickException("stopped after the settings")

    monkeypatch.setattr(logic_gate_cmds, "evolve", fake_evolve)
    register_provider("toolscript", lambda argument, **options: ScriptedProvider([]))
    group = click.Group("logic")
    logic_gate_cmds.register(group)
    args = ["evolve", "arithmetic_chain", "--model", "toolscript", "--out", str(tmp_path)]
    args += ["--curator", "model", "--review-code-calls", "3"]
    result = CliRunner().invoke(group, args)
    assert "stopped after the settings" in result.output
    gates = seen[0].gate_settings()
    assert seen[0].curator == "model" and gates.review_code_calls == 3
    assert gates.blind_code_calls == 0
    bad = CliRunner().invoke(group, [*args[:6], "--curator", "oracle"])
    assert bad.exit_code == 2 and "'oracle' is not one of 'rules', 'model'" in bad.output


@needs_sandbox
def test_blind_solvers_compute_with_their_own_tool_without_the_family(
    family: FileFamily,
) -> None:
    def solver(messages: list[dict[str, Any]], tools: Any) -> Any:
        last = messages[-1]
        if last["role"] == "tool":
            found = json.loads(last["content"])["stdout"].split()
            return "\\boxed{" + found[0] + "}"
        question = last["content"].split("## Problem")[1]
        top, r = (int(n) for n in re.findall(r"\d+", question.split("## Requirements")[0])[1:3])
        code = (
            "import family\n"
            "assert not family.samples and not hasattr(family, 'solution')\n"
            f"print(min(x for x in range(1, {top} + 1) if x % 3 == {r}))\n"
        )
        return call(code)

    provider = ScriptedProvider(solver)
    report = asyncio.run(
        blind_review(family, provider, n=2, tau=2, difficulties=(2,), attempts=1, code_calls=1)
    )
    assert report.passed, report.problems
    attempt = report.probes[0]["attempts"][0]
    assert attempt["correct"] == 2
    assert [[c["kind"] for c in runs] for runs in attempt["tool_calls"]] == [["ok"], ["ok"]]
    schema = provider.requests[0]["tools"][0]["function"]
    assert schema["name"] == "run_python" and "import family" not in schema["description"]
    assert "run_python" in provider.requests[0]["messages"][0]["content"]


@needs_sandbox
def test_a_built_in_family_gives_the_samples_only() -> None:
    code = "import family\nprint(len(family.samples), hasattr(family, 'solution'))\n"
    report, _ = review(get_family("arithmetic_chain"), [call(code), verdict()], calls=1)
    assert report.passed and report.tool_calls is not None
    assert report.tool_calls[0]["stdout"] == "3 False\n"


def test_without_the_os_sandbox_the_code_is_refused_not_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    missing = SandboxSupport(0, False, None, ("no Landlock here",))
    monkeypatch.setattr(_sandbox, "sandbox_support", lambda: missing)
    provider = ScriptedProvider([call("print('ran')"), verdict()])
    with pytest.raises(SandboxUnavailable, match="no Landlock here"):
        asyncio.run(review_family(get_family("arithmetic_chain"), provider, code_calls=1))
    assert len(provider.requests) == 1  # the tool result never went back to the model


def test_a_malformed_call_is_refused_unrun_and_a_malformed_verdict_is_repaired() -> None:
    bad_call = {"content": None, "tool_calls": [{"name": "run_python", "arguments": "{oops"}]}
    script = [bad_call, "I think it passes.", verdict()]
    report, provider = review(get_family("arithmetic_chain"), script, calls=1)
    assert report.passed and report.tool_calls == []
    refused = json.loads(provider.requests[1]["messages"][-1]["content"])
    assert refused["error"] == "call run_python with one string argument 'code'"
    assert "Reason: no JSON value found" in provider.requests[2]["messages"][-1]["content"]
