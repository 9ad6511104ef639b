"""Robustness evaluation under perturbation: lossless for an agent that reads its schema,
and reaching an agent that does not."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from veritask.agent._llm import LLMAgent
from veritask.model import ScriptedProvider
from veritask.pipeline import run_batch
from veritask.rollout import (
    KINDS,
    PerturbedRoles,
    RoleFactory,
    Surface,
    TaskSource,
    parse_kinds,
    perturbed_agent,
    run_episode,
    score,
    summarize,
)
from veritask.rollout._batch import BUILTIN_USERS
from veritask.synth import generate
from veritask.task import TaskPackage


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> TaskSource:
    root = tmp_path_factory.mktemp("perturb") / "travel"
    generate("travel", 8, 3, root)
    return TaskSource.load(root)


def _faithful(source: TaskSource, kind: str | None, seed: int = 0) -> dict[str, Any]:
    roles: RoleFactory = (
        RoleFactory(agent="faithful")
        if kind is None
        else PerturbedRoles(agent="faithful", perturbation=kind, perturb_seed=seed)
    )
    return summarize(asyncio.run(run_batch(source, roles, concurrency=4)), 1)


def test_faithful_agent_passes_the_clean_run(source: TaskSource) -> None:
    assert _faithful(source, None)["pass^1"] == 1.0


@pytest.mark.parametrize("kind", KINDS)
def test_faithful_agent_is_unaffected_by_every_kind(source: TaskSource, kind: str) -> None:
    summary = _faithful(source, kind)
    assert summary["pass^1"] == 1.0, summary["per_task"]


def _clean_names_script(package: TaskPackage) -> Any:
    """A model that learnt the clean schema: it replays the witness by the spec's names,
    whatever catalogue it is shown."""
    calls = [{"name": c.tool, "arguments": c.args} for c in package.witness]

    def script(messages: list[dict[str, Any]], _tools: Any) -> Any:
        made = sum(len(m.get("tool_calls") or []) for m in messages if m["role"] == "assistant")
        return {"tool_calls": [calls[made]]} if made < len(calls) else "All done."

    return script


def _scripted_pass(source: TaskSource, kind: str | None) -> float:
    wins = 0
    for package in source.packages:
        task = source.episode_task(package)
        agent: Any = LLMAgent(ScriptedProvider(_clean_names_script(package)))
        if kind is not None:
            agent = perturbed_agent(agent, kind, f"0:{package.id}")
        user = BUILTIN_USERS["scripted"](task)
        traj = score(asyncio.run(run_episode(task, agent, user)), source, package)
        wins += traj.reward == 1.0
    return wins / len(source.packages)


def test_renames_reach_a_model_that_ignores_its_catalogue(source: TaskSource) -> None:
    writes = [p for p in source.packages if p.witness and not p.refusal][:4]
    assert writes, "the fixture needs tasks with writes"
    only_writes = TaskSource(source.root, writes)
    assert _scripted_pass(only_writes, None) == 1.0
    assert _scripted_pass(only_writes, "rename-tools") == 0.0
    assert _scripted_pass(only_writes, "rename-args") == 0.0
    for kind in ("reorder-fields", "extra-fields", "noisy-observations", "truncate-observations"):
        assert _scripted_pass(only_writes, kind) == 1.0, kind


def test_the_model_sees_the_perturbed_catalogue(source: TaskSource) -> None:
    package = next(p for p in source.packages if p.witness)
    provider = ScriptedProvider(_clean_names_script(package))
    agent = perturbed_agent(LLMAgent(provider), "rename-tools", "0:x")
    task = source.episode_task(package)
    traj = asyncio.run(run_episode(task, agent, BUILTIN_USERS["scripted"](task)))
    shown = {t["function"]["name"] for t in provider.requests[0]["tools"]}
    real = {t["function"]["name"] for t in traj.tools}
    assert shown and not shown & real
    assert all("veritask" not in t for t in provider.requests[0]["tools"])
    assert traj.agent == "llm:scripted~rename-tools"
    # the clean name reached the environment as an unlisted one and was refused
    called = [c["function"]["name"] for m in traj.messages for c in m.get("tool_calls") or []]
    assert called and all(name.startswith("unlisted:") for name in called)


def test_the_model_reads_perturbed_results_and_the_record_keeps_real_ones(
    source: TaskSource,
) -> None:
    package = next(p for p in source.packages if p.witness and not p.refusal)
    provider = ScriptedProvider(_clean_names_script(package))
    agent = perturbed_agent(LLMAgent(provider), "extra-fields", "0:x")
    task = source.episode_task(package)
    traj = asyncio.run(run_episode(task, agent, BUILTIN_USERS["scripted"](task)))
    shown = [m for m in provider.requests[-1]["messages"] if m["role"] == "tool"]
    recorded = [m for m in traj.messages if m["role"] == "tool"]
    assert shown and all("request_id" in json.loads(m["content"]) for m in shown)
    assert recorded and not any("request_id" in m["content"] for m in recorded)


def test_surface_is_seeded_and_maps_calls_both_ways(source: TaskSource) -> None:
    task = source.episode_task(source.packages[0])
    from veritask.policy import openai_tools

    real = openai_tools(task.domain.spec)
    one, two = Surface("rename-args", real, "7:a"), Surface("rename-args", real, "7:a")
    assert one.tools == two.tools
    assert Surface("rename-args", real, "8:a").tools != one.tools
    name = real[0]["function"]["name"]
    param = next(iter(real[0]["function"]["parameters"]["properties"]))
    view = one.param_map[param]
    call = {
        "id": "c",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps({view: 1})},
    }
    back = one.real_call(call)
    assert json.loads(back["function"]["arguments"]) == {param: 1}
    assert one.view_call(back) == call
    clean = one.real_call({**call, "function": {"name": name, "arguments": json.dumps({param: 1})}})
    assert json.loads(clean["function"]["arguments"]) == {f"unlisted:{param}": 1}


def test_observation_kinds_keep_every_value() -> None:
    rows = [{"id": i, "name": f"Row {i}"} for i in range(25)]
    text = json.dumps({"rows": rows, "total": 25, "limit": 100, "offset": 0})
    for kind in ("reorder-fields", "extra-fields", "noisy-observations"):
        seen = json.loads(Surface(kind, [], "k").observation(text, 3))
        assert [{k: r[k] for k in ("id", "name")} for r in seen["rows"]] == rows, kind
    cut = json.loads(Surface("truncate-observations", [], "k").observation(text, 3))
    assert cut["rows"] == rows[:10] and cut["next_offset"] == 10 and "offset=10" in cut["truncated"]
    error = json.dumps({"error": {"message": "Seat is taken", "violated_rule": "R1"}})
    noisy = json.loads(Surface("noisy-observations", [], "k").observation(error, 1))
    assert noisy["error"]["violated_rule"] == "R1"
    assert noisy["error"]["message"].split() != [] and noisy["error"]["message"] != "Seat is taken"


def test_parse_kinds() -> None:
    assert parse_kinds(["all"]) == list(KINDS)
    assert parse_kinds(["extra-fields,rename-tools", "rename-tools"]) == [
        "rename-tools",
        "extra-fields",
    ]
    with pytest.raises(ValueError, match="unknown perturbation 'bogus'"):
        parse_kinds(["bogus"])


def test_eval_cli_reports_each_kind_beside_the_clean_run(
    source: TaskSource, tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from veritask._cli.main import cli

    out = tmp_path / "t.jsonl"
    args = ["eval", str(source.root), "--agent", "faithful", "--perturb", "rename-tools"]
    args += ["--perturb", "extra-fields", "--json", "--out", str(out), "--limit", "3"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["pass^1"] == 1.0
    assert set(report["perturbations"]) == {"rename-tools", "extra-fields"}
    assert report["perturbations"]["rename-tools"]["pass^1"] == 1.0
    assert report["perturbations"]["rename-tools"]["drop^1"] == 0.0
    kinds = tmp_path / "t.rename-tools.jsonl"
    agents = {json.loads(line)["agent"] for line in kinds.read_text().splitlines()}
    assert agents == {"faithful~rename-tools"}
    table = CliRunner().invoke(cli, [*args[:-5], "--limit", "3"])
    assert "rename-tools" in table.output and "clean" in table.output, table.output


def test_eval_refuses_an_unknown_kind_before_running(source: TaskSource) -> None:
    from click.testing import CliRunner

    from veritask._cli.main import cli

    args = ["eval", str(source.root), "--agent", "faithful", "--perturb", "rename-tools,bogus"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 2
    assert "unknown perturbation 'bogus'" in result.output
    assert "truncate-observations" in result.output
    assert "pass^1" not in result.output
