"""Semantic templates (motivation, placeholders) and the template judge's five dimensions."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from veritask._cli.blueprint_path_tasks import grounded_instruction
from veritask.blueprint import build_tool_graph, enumerate_paths, task_template
from veritask.blueprint._dag_paths import model_judged, with_templates
from veritask.blueprint._dag_stages import Asker
from veritask.blueprint._semantic import (
    DIMENSIONS,
    SemanticTemplate,
    grammar_template,
    rubric_judge,
    step_goals,
)
from veritask.blueprint._toolgraph import TaskTemplate
from veritask.domains import load_domain
from veritask.model import CostLedger, ScriptedProvider
from veritask.policy import DomainSpec
from veritask.task import WitnessCall


def _skeletons(domain: str) -> tuple[DomainSpec, list[TaskTemplate]]:
    spec = load_domain(domain)
    graph = build_tool_graph(spec)
    return spec, [task_template(spec, graph, p) for p in enumerate_paths(graph)]


def _loan_path(spec: DomainSpec, skeletons: list[TaskTemplate]) -> TaskTemplate:
    return next(
        s for s in skeletons if s.tools == ("query_members", "insert_loans", "update_loans")
    )


@pytest.mark.parametrize("domain", ["travel", "clinic"])
def test_grammar_templates_pass_the_judge_and_are_not_mechanical(domain: str) -> None:
    spec, skeletons = _skeletons(domain)
    texts = set()
    for skeleton in skeletons:
        template = grammar_template(spec, skeleton, seed=0)
        assert template == grammar_template(spec, skeleton, seed=0)  # seeded
        verdict = rubric_judge(spec, skeleton, template)
        assert verdict.passed, (template.text, verdict.reasons)
        assert "; then" not in template.text and "look up" not in template.text
        assert template.motivation and "<" not in template.motivation
        required = {h for _, _, holes in step_goals(spec, skeleton) for h in holes}
        assert required <= {f"<{p}>" for p in template.placeholders}
        texts.add(template.text)
    assert len(texts) == len(skeletons)  # each path its own instruction


def test_the_grammar_varies_with_the_seed() -> None:
    spec, skeletons = _skeletons("travel")
    drawn = {
        (grammar_template(spec, s, seed).motivation, grammar_template(spec, s, seed).text)
        for s in skeletons[:5]
        for seed in range(4)
    }
    assert len(drawn) > 10


def test_the_judge_fails_the_mechanical_skeleton_and_a_wrong_order() -> None:
    spec, skeletons = _skeletons("mock")
    skeleton = _loan_path(spec, skeletons)
    steps = "; then ".join(goal for _, goal, _ in step_goals(spec, skeleton))
    text = f"As a user of mock (<members.id>): look up members; then {steps}."
    mechanical = SemanticTemplate(skeleton.id, skeleton.tools, "", text, "model")
    verdict = rubric_judge(spec, skeleton, mechanical)
    assert not verdict.passed and verdict.scores["naturalness"] <= 2
    good = grammar_template(spec, skeleton, seed=0)
    lend, close = (goal for _, goal, _ in step_goals(spec, skeleton))
    swapped = good.text.replace(lend, "@@").replace(close, lend).replace("@@", close)
    verdict = rubric_judge(spec, skeleton, SemanticTemplate(*_fields(good, text=swapped)))
    assert verdict.scores["logical_coherence"] == 2
    dropped = SemanticTemplate(*_fields(good, text="I'd like to borrow something."))
    verdict = rubric_judge(spec, skeleton, dropped)
    assert not verdict.passed and verdict.scores["completeness"] == 1
    assert verdict.scores["specificity"] == 1  # the required placeholders are gone
    assert set(verdict.scores) == set(DIMENSIONS)


def _fields(t: SemanticTemplate, text: str) -> tuple[str, tuple[str, ...], str, str, str]:
    return (t.id, t.tools, t.motivation, text, t.author)


def _answer(good: dict[str, Any], judge: dict[str, Any]) -> Any:
    """A scripted model: a bad template first (repaired), then the good one; the judge's
    scores by template."""

    def answer(messages: list[dict[str, Any]], tools: Any) -> str:
        head = messages[1]["content"].splitlines()[0]
        if head.startswith("Task: template"):
            if len(messages) == 2:  # first try: an invented placeholder
                return json.dumps({"motivation": "m", "text": "Do it for <loans.colour>."})
            return json.dumps(good)
        return json.dumps(judge)

    return answer


def test_model_templates_are_repaired_and_gated_by_the_model_judge() -> None:
    spec, skeletons = _skeletons("mock")
    skeleton = _loan_path(spec, skeletons)
    holes = " and ".join(h for _, _, hs in step_goals(spec, skeleton) for h in hs)
    good = {"motivation": "I am moving house next week.", "text": f"Lend me a book ({holes})."}
    scores = dict.fromkeys(DIMENSIONS, 5) | {"naturalness": 1, "specificity": 1}
    provider = ScriptedProvider(_answer(good, {**scores, "reason": "terse"}))
    ledger = CostLedger()
    judged = asyncio.run(model_judged(Asker(provider, 2), spec, [skeleton], ledger))
    [(template, verdict)] = judged
    assert template.author == "model" and template.text == good["text"]
    assert verdict.scores["naturalness"] == 1 and not verdict.passed  # mean 3.8 < 4
    assert len(provider.requests) == 3  # template, its repair, the judge
    result = with_templates({}, judged)
    assert result["templates_judged"] == 1 and result["kept_paths"] == []


def test_the_instruction_is_instantiated_from_the_witness() -> None:
    spec, skeletons = _skeletons("mock")
    template = grammar_template(spec, _loan_path(spec, skeletons), seed=0)

    witness = [
        WitnessCall(tool="insert_loans", args={"book_id": "B7", "due_step": 14}, ok=True),
        WitnessCall(tool="update_loans", args={"id": "L1"}, ok=False),
    ]
    text = grounded_instruction(template.text, witness)
    assert "B7" in text and "14" in text and "<loans.book_id>" not in text
    assert template.instantiate({"loans.book_id": "B7"}).count("B7") == 1
