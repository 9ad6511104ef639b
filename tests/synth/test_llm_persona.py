"""Persona mode with an LLM projector, offline: the scripted Client and Consultant of the LLM-mode
tests explore, and a scripted persona writer turns each symbolic draft into a persona task in its
own words. Every package is certified, grounded and spoiler-free, its start-up query states one
pain point, the faithful agent solves every task from what the scripted user says, a writer that
tells too much is repaired or its candidate rejected with the reason, and a replay (or a resumed
replay) gives the same bytes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_llm_mode import PRICES, Counting, Message, Script, travel_script

from veritask._cli.main import cli
from veritask.agent import FaithfulAgent, ScriptedUser
from veritask.domains import load_domain
from veritask.env import CompiledDomain
from veritask.model import (
    RecordingProvider,
    ReplayProvider,
    ScriptedProvider,
    register_provider,
)
from veritask.rollout import EpisodeTask, run_episode
from veritask.synth import generate
from veritask.synth._persona import (
    HIDING_REASON,
    LEAK_REASON,
    PERSONA_PROMPT,
    Persona,
    persona_problems,
)
from veritask.task import (
    DatasetDir,
    TaskPackage,
    check_dataset,
    load_dataset,
    text_keys,
    unstated_in,
)

Writer = Callable[[list[Message]], str]
VOICE = "My week is packed, so I would like this settled in one go."


def _lower(text: str) -> str:
    return text[0].lower() + text[1:]


def writer(messages: list[Message]) -> str:
    """A persona in the writer's own words, built on the symbolic draft it is given."""
    payload = json.loads(str(messages[1]["content"]))
    draft = payload["symbolic_persona"]
    reason = draft["motivation"].removeprefix("You are reaching out because you need to ")
    return json.dumps(
        {
            "instruction": draft["instruction"],
            "motivation": f"I am writing because I need to {_lower(reason)} {VOICE}",
            "startup_query": f"Hello! Could you give me a hand? I want to "
            f"{_lower(payload['requests'][0]['goal'])}.",
            "hidden_profile": draft["hidden_profile"],
        }
    )


def with_writer(the_writer: Writer = writer) -> Script:
    """The LLM-mode travel script, with ``the_writer`` answering the persona prompt."""
    roles = travel_script()

    def script(messages: list[Message], tools: list[Message] | None) -> Any:
        if messages[0]["content"] == PERSONA_PROMPT:
            return the_writer(messages)
        return roles(messages, tools)

    return script


def scripted(the_writer: Writer = writer) -> ScriptedProvider:
    return ScriptedProvider(with_writer(the_writer), prices=PRICES)


def persona_generate(out: Path, provider: Any, n: int = 20, **kw: Any) -> Any:
    kw.setdefault("explorer", "llm")
    return generate("travel", n, 1, out, model=provider, persona=True, **kw)


@pytest.fixture(scope="module")
def persona_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, Path]:
    """A recorded persona run of 20 travel packages (two units), every role a model."""
    root = tmp_path_factory.mktemp("llm-persona")
    recording = root / "calls.jsonl"
    summary = persona_generate(root / "ds", RecordingProvider(scripted(), recording))
    return root / "ds", summary, recording


def parse_persona(text: str) -> Persona:
    """The persona a package's text renders (the inverse of ``Persona.render``)."""
    parts = text.split("\n\n")
    body = ["\n".join(part.splitlines()[1:]) for part in parts]
    return Persona(
        instruction=body[0],
        motivation=body[1],
        startup_query=body[2],
        hidden_profile=[line.removeprefix("- ") for line in body[3].splitlines()],
    )


def _spoiler_args(root: Path, pkg: TaskPackage) -> tuple[set[str], list[str], list[Any]]:
    origin = DatasetDir(root).read_state(pkg.origin)
    return text_keys(load_domain("travel"), origin), pkg.user_profile.known_ids, pkg.witness


def assert_personas(root: Path) -> list[TaskPackage]:
    """Every package of ``root`` is a usable persona task in the writer's words."""
    report = check_dataset(root)
    assert report.certified == report.grounded == report.spoiler_free == report.tasks > 0
    assert report.ok, report.failures[:3]
    spec = load_domain("travel")
    packages = load_dataset(root)
    for pkg in packages:
        assert "persona" in pkg.tags and VOICE in pkg.task_description
        persona = parse_persona(pkg.task_description)
        assert persona.render() == pkg.task_description
        assert persona_problems(persona, pkg.task, spec, _spoiler_args(root, pkg)) == []
        assert unstated_in(pkg.task, pkg.task_description) == []
        assert all(sub.ask is not None for sub in pkg.task.sub_goals)
    return packages


def test_llm_persona_packages_are_certified_grounded_and_hide(
    persona_run: tuple[Path, Any, Path],
) -> None:
    out, summary, _ = persona_run
    assert summary.tasks == 20
    packages = assert_personas(out)
    assert any(len({s.title for s in p.task.sub_goals}) > 1 for p in packages)
    assert all(p.generator.startswith("veritask-llm/") for p in packages)
    run = json.loads((out / "run.json").read_text())
    assert run["persona"] is True and run["projector"] == "llm"
    modules = summary.costs.modules
    assert set(modules) == {"client", "consultant", "persona"}  # the writer is the projector
    assert modules["persona"].attempts == modules["persona"].successes >= 20


def test_the_faithful_agent_solves_every_llm_persona_task(
    persona_run: tuple[Path, Any, Path], compiled: dict[str, CompiledDomain]
) -> None:
    out, _, _ = persona_run
    ds = DatasetDir(out)
    failed = []
    for pkg in load_dataset(out):
        task = EpisodeTask(
            pkg, compiled["travel"], "policy", ds.read_state(pkg.origin), ds.read_state(pkg.target)
        )
        agent = FaithfulAgent(compiled["travel"].spec)
        traj = asyncio.run(run_episode(task, agent, ScriptedUser(pkg)))
        if traj.final_distance != 0:
            failed.append(pkg.id)
    assert failed == []


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_replay_and_resume_give_the_same_bytes(
    tmp_path: Path, persona_run: tuple[Path, Any, Path]
) -> None:
    full, _, recording = persona_run
    out = tmp_path / "replayed"
    persona_generate(out, ReplayProvider(recording))
    assert _tree(out) == _tree(full)
    ds = DatasetDir(out)
    ds.part_path(1).unlink()
    ds.costs_path(1).unlink()
    ds.manifest.unlink()
    counting = Counting(ReplayProvider(recording))
    again = persona_generate(out, counting)
    assert again.resumed_units == 1 and counting.calls > 0
    assert _tree(out) == _tree(full)


def _repairs_of(messages: list[Message]) -> list[str]:
    return [str(m["content"]) for m in messages[3::2]]


def telling(rounds: int, how: str) -> tuple[Writer, list[str]]:
    """A writer whose first ``rounds`` answers per candidate tell too much (``how``: the first
    request with its values in the start-up query, or every goal there); the repair messages it
    receives are collected."""
    repairs: list[str] = []

    def answer(messages: list[Message]) -> str:
        repairs.extend(_repairs_of(messages)[-1:])
        good = json.loads(writer(messages))
        requests = json.loads(str(messages[1]["content"]))["requests"]
        goals = list(dict.fromkeys(r["goal"] for r in requests))
        if (len(messages) - 2) // 2 >= rounds:
            return json.dumps(good)
        if how == "values":
            good["startup_query"] = f"Hi! {requests[0]['request']}"
        elif len(goals) > 1:
            good["startup_query"] = f"Hi! I want to {_lower(goals[0])} and {_lower(goals[1])}."
        return json.dumps(good)

    return answer, repairs


def test_a_startup_query_that_gives_values_away_is_repaired(tmp_path: Path) -> None:
    answer, repairs = telling(rounds=1, how="values")
    summary = persona_generate(
        tmp_path / "ds", scripted(answer), n=6, explorer="symbolic", projector="llm"
    )
    assert summary.tasks == 6 and "persona hides too little" not in summary.discarded
    assert repairs and all(HIDING_REASON in r and "gives away" in r for r in repairs)
    record = summary.costs.modules["persona"]
    # one persona per candidate the projector wrote: the packages and those discarded after
    # projection (grounding reads the text); a spoiler leak may be found before the persona
    # is asked; every kept package's first answer was repaired
    leaks = summary.discarded.get("spoiler leak", 0)
    projected = summary.tasks + sum(summary.discarded.values()) - leaks
    assert record.successes == record.attempts
    assert projected <= record.attempts <= projected + leaks
    assert summary.tasks <= len(repairs) <= record.attempts
    assert record.calls == record.attempts + len(repairs)
    assert_personas(tmp_path / "ds")


@pytest.mark.parametrize(
    ("mutation", "reason", "said"),
    [
        ("goals", "persona hides too little", "pain points"),
        ("spoiler", "spoiler leak", LEAK_REASON),
    ],
)
def test_a_writer_that_keeps_telling_too_much_is_rejected_with_its_reason(
    tmp_path: Path, mutation: str, reason: str, said: str
) -> None:
    if mutation == "goals":
        answer, repairs = telling(rounds=99, how="goals")
    else:
        repairs = []

        def answer(messages: list[Message]) -> str:
            repairs.extend(_repairs_of(messages)[-1:])
            good = json.loads(writer(messages))
            good["motivation"] += " Please use insert_travel_requests."
            return json.dumps(good)

    out = tmp_path / "ds"
    summary = persona_generate(out, scripted(answer), n=10, explorer="symbolic", projector="llm")
    record = summary.costs.modules["persona"]
    rejected = record.attempts - record.successes
    assert rejected > 0 and summary.discarded[reason] == rejected
    assert record.calls == record.successes + 3 * rejected  # two repair rounds each
    assert len(repairs) == 2 * rejected and all(said in r for r in repairs)
    if summary.tasks:
        kept = assert_personas(out)
        assert all(len({s.title for s in p.task.sub_goals}) == 1 for p in kept)


def test_cli_persona_with_the_llm_projector(tmp_path: Path) -> None:
    register_provider("personatest", lambda argument, **options: scripted())
    out = tmp_path / "ds"
    args = ["generate", "--domain", "travel", "--n", "4", "--seed", "3", "--out", str(out)]
    args += ["--persona", "--projector", "llm", "--model", "personatest", "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["tasks"] == 4 and set(summary["costs"]) == {"persona", "total"}
    packages = assert_personas(out)
    assert all(
        p.generator.startswith("veritask-symbolic-explorer-llm-projector/") for p in packages
    )
    result = CliRunner().invoke(cli, ["check", str(out), "--json"])
    assert result.exit_code == 0, result.output


def test_llm_explorer_with_the_symbolic_projector_writes_the_symbolic_persona(
    tmp_path: Path,
) -> None:
    summary = persona_generate(tmp_path / "ds", scripted(), n=3, projector="symbolic")
    assert summary.tasks == 3 and "persona" not in summary.costs.modules
    assert check_dataset(tmp_path / "ds").ok
    for pkg in load_dataset(tmp_path / "ds"):
        assert "persona" in pkg.tags and VOICE not in pkg.task_description
        assert pkg.task_description.startswith("INSTRUCTION")
