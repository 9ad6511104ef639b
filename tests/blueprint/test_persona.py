"""Persona queries with information hiding: the start-up query states one pain point and none
of the values kept in the hidden profile, the spoiler check applies, generation in persona
mode stays certified and grounded, and the LLM writer parses, repairs or rejects answers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from veritask.domains import load_domain
from veritask.model import ScriptedProvider, StructuredOutputError
from veritask.synth import generate
from veritask.synth._persona import (
    HIDING_REASON,
    LEAK_REASON,
    UNSTATED_REASON,
    LLMPersonaWriter,
    Persona,
    persona_of,
    persona_problems,
    rejection_reason,
)
from veritask.synth._projector import Projection
from veritask.task import (
    DatasetDir,
    TaskPackage,
    check_dataset,
    load_dataset,
    task_asks,
    text_keys,
)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("persona")
    generate("travel", 20, 0, out, persona=True)
    return out


def _projection(pkg: TaskPackage) -> Projection:
    return Projection(pkg.task, pkg.user_profile, pkg.tags, pkg.difficulty)


def _spoiler_args(root: Path, pkg: TaskPackage) -> tuple[set[str], list[str], list[Any]]:
    origin = DatasetDir(root).read_state(pkg.origin)
    return text_keys(load_domain("travel"), origin), pkg.user_profile.known_ids, pkg.witness


def test_persona_generation_is_certified_grounded_and_hides(dataset: Path) -> None:
    report = check_dataset(dataset)
    assert report.certified == report.grounded == report.spoiler_free == report.tasks == 20
    spec = load_domain("travel")
    for pkg in load_dataset(dataset):
        assert "persona" in pkg.tags and pkg.task_description.startswith("INSTRUCTION")
        persona = persona_of(_projection(pkg), spec)
        assert pkg.task_description == persona.render()
        assert persona_problems(persona, pkg.task, spec, _spoiler_args(dataset, pkg)) == []
        # the start-up query names the first goal only; every request sits in the hidden profile
        first = pkg.task.sub_goals[0].title
        assert first[0].lower() + first[1:] in persona.startup_query
        assert all(sub.request in persona.hidden_profile for sub in pkg.task.sub_goals)
        for sub in pkg.task.sub_goals:
            assert sub.ask is not None
            for value in sub.ask.values.values():
                if isinstance(value, str) and len(value) > 2:
                    assert value.lower() not in persona.startup_query.lower()


def test_default_generation_is_not_persona(tmp_path: Path) -> None:
    generate("travel", 5, 0, tmp_path)
    assert not any("persona" in p.tags for p in load_dataset(tmp_path))
    assert "persona" not in json.loads((tmp_path / "run.json").read_text())


def _multi_goal(root: Path) -> TaskPackage:
    return next(p for p in load_dataset(root) if len({s.title for s in p.task.sub_goals}) > 1)


def test_problems_name_a_second_pain_point_a_hidden_value_and_a_spoiler(dataset: Path) -> None:
    spec = load_domain("travel")
    pkg = _multi_goal(dataset)
    persona = persona_of(_projection(pkg), spec)
    titles = [s.title for s in pkg.task.sub_goals]
    two = persona.model_copy(update={"startup_query": f"I need {titles[0]} and {titles[-1]}."})
    assert any(
        "pain points" in p
        for p in persona_problems(two, pkg.task, spec, _spoiler_args(dataset, pkg))
    )
    value = next(
        v
        for s in pkg.task.sub_goals
        if s.ask
        for v in s.ask.values.values()
        if isinstance(v, str) and len(v) > 2
    )
    told = persona.model_copy(update={"startup_query": f"I want {value}."})
    assert any(
        "gives away" in p
        for p in persona_problems(told, pkg.task, spec, _spoiler_args(dataset, pkg))
    )
    tool = persona.model_copy(update={"motivation": "Call insert_travel_requests for me."})
    assert any(
        "insert_travel_requests" in p
        for p in persona_problems(tool, pkg.task, spec, _spoiler_args(dataset, pkg))
    )


def test_llm_writer_parses_repairs_and_rejects(dataset: Path) -> None:
    spec = load_domain("travel")
    pkg = _multi_goal(dataset)
    args = _spoiler_args(dataset, pkg)
    good = Persona(
        instruction=pkg.task.total_goal,
        motivation="My manager asked me to sort out my trip paperwork before Friday.",
        startup_query="Hello! I'd like some help getting a work trip set up.",
        hidden_profile=[
            pkg.task.who_you_are,
            *(s.request for s in pkg.task.sub_goals),
            *(t for s in pkg.task.sub_goals for t in s.reactive_triggers),  # fallback values
        ],
    )
    leaking = good.model_copy(update={"startup_query": "Please run insert_travel_requests."})
    provider = ScriptedProvider(["not json", leaking.model_dump_json(), good.model_dump_json()])
    writer = LLMPersonaWriter(spec, provider, max_repairs=2)
    written = asyncio.run(writer.write(_projection(pkg), args))
    assert written == good and len(provider.requests) == 3
    last = provider.requests[-1]["messages"][-1]["content"]
    assert "insert_travel_requests" in last  # the repair names the leak
    stubborn = ScriptedProvider([leaking.model_dump_json()] * 3)
    with pytest.raises(StructuredOutputError):
        asyncio.run(LLMPersonaWriter(spec, stubborn, max_repairs=2).write(_projection(pkg), args))


def test_the_startup_query_may_not_name_a_record_or_an_amount(dataset: Path) -> None:
    """The values a request reaches records by (a trip's purpose, a flight's code) and its
    amounts are hidden too; single digits are not (they would match any small count)."""
    spec = load_domain("travel")
    checked = 0
    for pkg in load_dataset(dataset):
        persona = persona_of(_projection(pkg), spec)
        args = _spoiler_args(dataset, pkg)
        for request in task_asks(pkg.task):
            refs = [r for r in (request.target, *request.refs.values()) if r is not None]
            named = [v for r in refs for v in r.match.values() if isinstance(v, str) and len(v) > 2]
            amounts = [v for v in request.values.values() if type(v) is int and v >= 10]
            for value in [*named[:1], *amounts[:1]]:
                told = persona.model_copy(update={"startup_query": f"It is about {value}."})
                assert f"gives away {str(value)!r}" in " ".join(
                    persona_problems(told, pkg.task, spec, args)
                )
                checked += 1
        small = persona.model_copy(update={"startup_query": "I have 2 things to sort out."})
        assert persona_problems(small, pkg.task, spec, args) == []
    assert checked >= 10


def test_llm_writer_sends_back_dropped_values_and_two_goals(dataset: Path) -> None:
    spec = load_domain("travel")
    pkg = _multi_goal(dataset)
    args = _spoiler_args(dataset, pkg)
    good = persona_of(_projection(pkg), spec)
    vague = good.model_copy(
        update={"instruction": "Sort out my trip.", "hidden_profile": [pkg.task.who_you_are]}
    )
    titles = list(dict.fromkeys(s.title for s in pkg.task.sub_goals))
    two = good.model_copy(update={"startup_query": f"I need {titles[0]} and {titles[1]}."})
    provider = ScriptedProvider(
        [vague.model_dump_json(), two.model_dump_json(), good.model_dump_json()]
    )
    assert asyncio.run(LLMPersonaWriter(spec, provider).write(_projection(pkg), args)) == good
    repairs = [r["messages"][-1]["content"] for r in provider.requests[1:]]
    assert UNSTATED_REASON in repairs[0] and HIDING_REASON not in repairs[0]
    assert HIDING_REASON in repairs[1] and "2 pain points" in repairs[1]
    stubborn = ScriptedProvider([two.model_dump_json()] * 3)
    with pytest.raises(StructuredOutputError) as caught:
        asyncio.run(LLMPersonaWriter(spec, stubborn).write(_projection(pkg), args))
    assert rejection_reason(caught.value.reasons[-1]) == "persona hides too little"
    assert rejection_reason(f"{LEAK_REASON}: x. {HIDING_REASON}: y") == "spoiler leak"
    assert rejection_reason("not JSON") == "persona rejected"
