"""Honest offline gates reject leaking, hidden-fact and copied-validator families; answers keep
their case; copyable answers and level-10 hardness are measured on samples."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from veritask.logic import builtin_families, gate1_static, make_instance, score_answer
from veritask.logic._family import Family, is_trivial
from veritask.logic._filefamily import family_from_source
from veritask.logic._hardness import TABLE, hardness_of, median, meets_level10, shape_overlap
from veritask.logic._honesty import (
    degenerate_problems,
    honesty_gate,
    is_copyable,
    validator_independence,
)
from veritask.logic.families import arithmetic_chain


def _sum_family(template: str, slots: Any, **extra: Any) -> Family:
    def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
        a, b = rng.randint(1, 50 * difficulty), rng.randint(1, 50 * difficulty)
        inputs = {"a": a, "b": b, "secret": rng.randint(0, 9)}
        return inputs, slots(inputs)

    def add(inputs: dict[str, Any]) -> int:
        return int(inputs["a"]) + int(inputs["b"])

    def add_loop(inputs: dict[str, Any]) -> int:
        total = 0
        for key in ("a", "b"):
            total += int(inputs[key])
        return total

    fields: dict[str, Any] = {"validators": (add, add_loop), **extra}
    return Family(
        id="fixture_sum",
        version="1",
        category="symbolic",
        title="Sum",
        template=template,
        generate=generate,
        answer_format="Answer with the integer only.",
        **fields,
    )


def test_a_question_that_states_its_answer_is_rejected() -> None:
    leak = _sum_family(
        "What is [Input Slot 1] plus [Input Slot 2]? (It is [Input Slot 3].)",
        lambda i: [str(i["a"]), str(i["b"]), str(i["a"] + i["b"])],
        text_solver=lambda q: int(q.split("It is ")[1].split(".")[0]),
    )
    report = gate1_static(leak, per_level=30)
    assert any("leaks its answer" in p for p in report.problems), report.problems


def test_a_hidden_fact_is_rejected_even_when_the_text_solver_knows_the_rule() -> None:
    def hidden(inputs: dict[str, Any]) -> int:
        return int(inputs["a"]) % 3 + int(inputs["secret"])

    def hidden_loop(inputs: dict[str, Any]) -> int:
        total = int(inputs["secret"])
        for _ in range(int(inputs["a"]) % 3):
            total += 1
        return total

    family = _sum_family(
        "What is [Input Slot 1] modulo 3 plus the secret? [Input Slot 2]",
        lambda i: [str(i["a"] % 3), ""],
        validators=(hidden, hidden_loop),
    )
    instances = [make_instance(family, 1, index=i) for i in range(60)]
    report = honesty_gate(family, instances)
    assert any(p.startswith("hidden fact") for p in report.problems), report.problems


def test_the_same_validator_twice_counts_as_one() -> None:
    base = builtin_families()["arithmetic_chain"]
    first = base.validators[0]
    twin = replace(base, validators=(first, first))
    instances = [make_instance(base, d, index=0) for d in range(1, 11)]
    found = validator_independence(twin, instances)
    assert found.distinct == 1 and found.same == ["0-1"]
    assert validator_independence(base, instances).distinct == 2
    assert any("not independent" in p for p in honesty_gate(twin, instances).problems)


FILE_FAMILY = r"""
FAMILY = {
    "id": "file_twin",
    "version": "1",
    "category": "symbolic",
    "title": "Twin validators",
    "template": "Add up these numbers: [Input Slot 1]. What is the total?",
    "answer_format": "Answer with the integer only.",
    "tags": ["test"],
}


def generate(difficulty, rng):
    numbers = [rng.randint(1, 99) for _ in range(2 + difficulty)]
    return {"numbers": numbers}, [", ".join(map(str, numbers))]


def solution_a(inputs):
    total = 0
    for n in inputs["numbers"]:
        total += n
    return total


def solution_b(inputs):
    total = 0
    for n in inputs["numbers"]:
        total += n
    return total
"""


def test_byte_identical_validators_of_a_family_file_are_caught() -> None:
    family = family_from_source(FILE_FAMILY, unsafe_no_sandbox=True)
    try:
        instances = [make_instance(family, d, index=0) for d in (1, 2, 3)]
        found = validator_independence(family, instances, probes=3)
    finally:
        family.close()
    assert found.distinct == 1 and found.similarity == {"0-1": 1.0}
    assert found.agreement == {"0-1": 1.0}


def test_degenerate_answers_are_judged_against_the_answer_space() -> None:
    def insts(answers: list[str]) -> list[Any]:
        base = make_instance(builtin_families()["arithmetic_chain"], 1)
        return [replace(base, answer=a) for a in answers]

    assert degenerate_problems({1: insts(["yes", "no"] * 50)}) == []
    assert degenerate_problems({1: insts(["yes"] * 80 + ["no"] * 20)})
    assert degenerate_problems({1: insts(["yes"] * 100)})


def test_answers_keep_their_case_and_scoring_stays_strict() -> None:
    family = builtin_families()["kinship_ancestor"]
    inst = make_instance(family, 3, index=1)
    assert inst.answer[0].isupper() and inst.answer in inst.question
    assert score_answer(inst.answer.lower(), inst, family) == 1.0
    assert score_answer(inst.answer, inst, family) == 1.0
    assert score_answer(f"{inst.answer} probably", inst, family) == 0.0


@pytest.mark.parametrize(
    "family_id", ["weekday_shift", "pattern_transform_row", "build_order_alpha", "string_rewrite"]
)
def test_named_families_have_few_copyable_answers(family_id: str) -> None:
    family = builtin_families()[family_id]
    for d in (1, 2, 5, 10):
        insts = [make_instance(family, d, split="test", index=i) for i in range(40)]
        trivial = [i for i in insts if is_trivial(family, dict(i.inputs), i.question, i.answer)]
        assert len(trivial) <= 2, (d, [i.answer for i in trivial])
        assert sum(is_copyable(family, i) for i in insts) <= 2


def test_every_builtin_family_has_a_measure_and_level_10_meets_it_or_says_why() -> None:
    assert set(TABLE) == set(builtin_families())
    for family_id, family in builtin_families().items():
        hard = hardness_of(family_id)
        assert hard is not None and len(hard.floors) == 10
        values = [hard.measure(make_instance(family, 10, index=i).inputs) for i in range(5)]
        assert meets_level10(hard, median(values)) or hard.why_not, family_id


def test_step_families_change_shape_at_every_level() -> None:
    hard = hardness_of("arithmetic_chain")
    assert hard is not None
    shapes = {
        d: [hard.shape(arithmetic_chain.generate(d, random.Random(i))[0]) for i in range(10)]
        for d in range(1, 11)
    }
    assert max(shape_overlap(shapes).values()) == 0.0
