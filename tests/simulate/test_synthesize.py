"""Trajectory synthesis from seeds with scripted model answers: parse, check/repair, filter."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.domains import load_domain
from veritask.export import to_openai_row
from veritask.model import ScriptedProvider, register_provider
from veritask.pipeline import run_batch
from veritask.rollout import RoleFactory, TaskSource
from veritask.simulate import (
    CONSISTENCY_MARK,
    SYNTH_MARK,
    ToolCatalog,
    catalog_from_spec,
    check_file,
    load_seeds,
    parse_text,
    render_text,
    run_synthesis,
)
from veritask.synth import generate
from veritask.task import Trajectory

EXAMPLE_HEAD = "## Example trajectory:\n"
EXAMPLE_TAIL = "\n\n## Available tools"


@pytest.fixture(scope="module")
def seed_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three oracle trajectories of the mock domain, as OpenAI chat rows."""
    root = tmp_path_factory.mktemp("synth-seeds")
    generate("mock", 8, 2, root / "mock")
    source = TaskSource.load(root / "mock")
    trajs = asyncio.run(run_batch(source, RoleFactory(agent="oracle"), concurrency=4))
    seeds = [t for t in trajs if t.steps][:3]
    assert len(seeds) == 3
    path = root / "seeds.jsonl"
    path.write_text("".join(json.dumps(to_openai_row(t)) + "\n" for t in seeds))
    return path


@pytest.fixture(scope="module")
def catalog() -> ToolCatalog:
    return catalog_from_spec(load_domain("mock"))


def _example(messages: list[dict[str, Any]]) -> str:
    text = messages[-1]["content"]
    return text.split(EXAMPLE_HEAD, 1)[1].split(EXAMPLE_TAIL, 1)[0]


def _variant(example: str, kind: str, number: int) -> str:
    """A scripted answer of one kind, made from the example in the prompt."""
    if kind == "copy":
        return example
    if kind == "prose":
        return "I would rather not write a conversation."
    turns = parse_text(example)
    user = next(t for t in turns if t.role == "user")
    user.text = f"New task {number}: please handle the request."
    call_turn = next(t for t in turns if t.calls)
    call = call_turn.calls[0]
    if kind == "repairable":
        key = next(iter(call.raw))
        call.raw = {(k.upper() if k == key else k): v for k, v in call.raw.items()}
        user.text = f"<think>plan</think> {user.text}"
    elif kind == "unknown_tool":
        call.name = "teleport_everything"
    elif kind == "inconsistent":
        user.text += " INCONSISTENT"
    elif kind == "not_json":
        next(t for t in turns if t.role == "tool").text = "done!"
    return "```\n" + render_text(turns) + "\n```"


KINDS = (
    "good",
    "repairable",
    "good",
    "unknown_tool",
    "prose",
    "copy",
    "inconsistent",
    "not_json",
    "good",
)


def scripted() -> Any:
    """Synthesis answers in the order of KINDS; the judge flags the INCONSISTENT one."""
    asked = {"n": 0}

    def answer(messages: list[dict[str, Any]], _tools: Any) -> str:
        if messages[0]["content"].startswith(CONSISTENCY_MARK):
            bad = "INCONSISTENT" in messages[-1]["content"]
            return json.dumps({"consistent": not bad, "reason": "the balance does not add up"})
        assert messages[-1]["content"].startswith(SYNTH_MARK)
        number = asked["n"]
        asked["n"] += 1
        return _variant(_example(messages), KINDS[number % len(KINDS)], number)

    return answer


BUILT: list[ScriptedProvider] = []


def _build(_arg: str, **_options: Any) -> ScriptedProvider:
    BUILT.append(ScriptedProvider(scripted()))
    return BUILT[-1]


register_provider("synthscript", _build)


def test_synthesis_from_three_seeds_accepts_repairs_and_rejects(
    seed_file: Path, catalog: ToolCatalog, tmp_path: Path
) -> None:
    seeds = load_seeds(seed_file)
    provider = ScriptedProvider(
        scripted(), prices={"prompt_per_million": 1.0, "completion_per_million": 2.0}
    )
    run = run_synthesis(
        seeds, catalog, provider, n=9, model="scripted", out=tmp_path / "r.jsonl", concurrency=1
    )
    status = [r["status"] for r in run.records]
    assert status == ["accepted", "accepted", "accepted"] + ["rejected"] * 5 + ["accepted"]
    reasons = [next(iter(r["reasons"]), None) for r in run.records]
    assert reasons[3:8] == ["check", "parse", "repetition", "consistency", "invalid_tool_use"]
    assert "unknown_tool" in run.records[3]["reasons"]["check"][0]
    repaired = {i["class"] for i in run.records[1]["issues"]}
    assert repaired == {"argument_key", "think_placement"}
    assert run.report["repaired"] == 1 and run.report["accepted"] == 4
    assert [r["unit_id"].split("-")[0] for r in run.records[:3]] == [s.id for s in seeds]
    assert len({s.id for s in seeds}) == 3
    # sampling: temperature 1.0 by default, the sample number keeps repeats apart
    assert {r["config"].temperature for r in provider.requests} == {1.0}
    assert [r["sample_index"] for r in provider.requests[:3]] == [0, 0, 0]
    ledger = run.report["ledger"]
    assert ledger["synthesize"]["attempts"] == 9 and ledger["synthesize"]["successes"] == 4
    assert run.report["cost_per_accepted"] == pytest.approx(ledger["total"]["cost"] / 4)
    assert run.report["cost_per_accepted"] > 0


def test_the_cli_writes_checked_sft_datasets_and_resumes_without_model_calls(
    seed_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "synth"
    args = ["simulate", "synthesize", str(seed_file), "--tools", "mock", "--n", "9"]
    first = CliRunner().invoke(
        cli, [*args, "--model", "synthscript", "--out", str(out), "--concurrency", "1", "--json"]
    )
    assert first.exit_code == 0, first.output
    report = json.loads(first.output)
    assert report["accepted"] == 4
    trajs = [Trajectory.model_validate_json(x) for x in (out / "trajectories.jsonl").open()]
    assert len(trajs) == 4 and all(t.reward is None for t in trajs)
    for fmt in ("hf", "openai", "sharegpt"):
        summary = check_file(out / f"sft.{fmt}.jsonl", None, tmp_path / f"{fmt}.checked.jsonl")
        assert (summary.rows, summary.clean) == (4, 4), (fmt, summary.to_json())
    costs = json.loads((out / "costs.json").read_text())
    assert costs["accepted"] == 4 and "synthesize" in costs["ledger"]
    records = (out / "records.jsonl").read_bytes()
    again = CliRunner().invoke(cli, [*args, "--model", "synthscript", "--out", str(out), "--json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.output) == report
    assert BUILT[-1].requests == []
    assert (out / "records.jsonl").read_bytes() == records


def test_a_rerun_with_other_settings_is_refused(seed_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "synth"
    base = ["simulate", "synthesize", str(seed_file), "--tools", "mock", "--n", "2"]
    assert (
        CliRunner().invoke(cli, [*base, "--model", "synthscript", "--out", str(out)]).exit_code == 0
    )
    refused = CliRunner().invoke(
        cli, [*base, "--model", "synthscript", "--out", str(out), "--no-judge"]
    )
    assert refused.exit_code != 0 and "judge" in refused.output
