"""The text-only gate: every built-in question determines its answer from its text alone;
adjacent levels are different levels; kinship questions are answerable; grammar agrees."""

from __future__ import annotations

import itertools
import re
import statistics
import warnings
from dataclasses import replace

import pytest

from veritask.logic import (
    MAX_OVERLAP,
    SeedOnlySplitWarning,
    Undetermined,
    adjacent_overlap,
    be,
    builtin_families,
    check_text_only,
    count_noun,
    create_dataset,
    family_from_source,
    gate1_static,
    join_and,
    make_instance,
    plural,
    split_and,
    text_only_gate,
)

FAMILIES = sorted(builtin_families())
PER_LEVEL = 40


@pytest.mark.parametrize("family_id", FAMILIES)
def test_text_solver_agrees_with_the_pool_at_every_level(family_id: str) -> None:
    family = builtin_families()[family_id]
    assert family.text_solver is not None, f"{family_id} has no text solver"
    gate = text_only_gate(family, PER_LEVEL, seed=5, split="train")
    assert gate.text.checked == 10 * PER_LEVEL
    assert gate.passed, gate.problems


@pytest.mark.parametrize("family_id", FAMILIES)
def test_adjacent_levels_share_at_most_five_percent(family_id: str) -> None:
    family = builtin_families()[family_id]
    questions = {
        d: [make_instance(family, d, seed=2, index=i).question for i in range(PER_LEVEL)]
        for d in range(1, 11)
    }
    overlap = adjacent_overlap(questions)
    assert set(overlap) == set(range(1, 10))
    assert max(overlap.values()) <= MAX_OVERLAP, overlap


@pytest.mark.parametrize("family_id", FAMILIES)
def test_size_strictly_grows_with_every_level(family_id: str) -> None:
    family = builtin_families()[family_id]
    assert family.size is not None
    means = [
        statistics.mean(
            family.size(dict(make_instance(family, d, seed=4, index=i).inputs)) for i in range(50)
        )
        for d in range(1, 11)
    ]
    assert all(b > a for a, b in itertools.pairwise(means)), means


def test_kinship_questions_are_all_determined() -> None:
    family = builtin_families()["kinship_ancestor"]
    assert family.text_solver is not None
    for difficulty in range(1, 11):
        instances = [make_instance(family, difficulty, seed=9001, index=i) for i in range(50)]
        result = check_text_only(family, instances)
        assert result.failures == 0, result.problems
        for inst in instances:
            assert " is a son of " not in inst.question
            assert " is a daughter of " not in inst.question


def test_kinship_link_without_a_role_is_undetermined() -> None:
    family = builtin_families()["kinship_ancestor"]
    assert family.text_solver is not None
    question = (
        "Facts about a family: Felix is a son of Agnes. Felix is a son of Hugo. "
        "Who is Felix's father?\n\nAnswer with the person's name only."
    )
    with pytest.raises(Undetermined):
        family.text_solver(question)
    stated = question.replace("a son of Agnes.", "the son of Agnes, his mother.").replace(
        "a son of Hugo.", "the son of Hugo, his father."
    )
    assert family.text_solver(stated) == "Hugo"


def test_gate1_names_the_instance_whose_text_drops_a_fact() -> None:
    family = builtin_families()["arithmetic_chain"]
    assert family.generate is not None

    def drop_start(difficulty: int, rng: object) -> tuple[dict[str, object], list[str]]:
        inputs, slots = family.generate(difficulty, rng)  # type: ignore[arg-type]
        return inputs, ["some number", slots[1]]

    report = gate1_static(replace(family, generate=drop_start), per_level=3)
    assert not report.passed
    assert any(
        re.match(r"d=1 #0 \(split gate1, seed 0\): the text solver", p) for p in report.problems
    )
    assert report.figures["text_only"]["errors"] == 30


def test_gate1_fails_a_level_that_repeats_the_one_below() -> None:
    family = builtin_families()["arithmetic_chain"]

    def flat(difficulty: int, rng: object) -> tuple[dict[str, object], list[str]]:
        import random

        return family.generate(1, random.Random(7))

    report = gate1_static(replace(family, generate=flat), per_level=10)
    assert any("share 100.0% of questions" in p for p in report.problems)


def test_undetermined_text_fails_the_gate_with_the_reason() -> None:
    family = builtin_families()["ranking_kth"]

    def never(question: str) -> str:
        raise Undetermined("two orders fit")

    gate = text_only_gate(replace(family, text_solver=never), 2)
    assert gate.text.undetermined == 20 and not gate.passed
    assert "does not determine the answer: two orders fit" in gate.problems[0]
    assert "more failing instance(s) not listed" in gate.problems[-1]


def test_family_without_a_text_solver_fails_the_gate() -> None:
    """Every family, evolved ones included, must supply a text-only solver (issue: "Evolved
    families must supply one too")."""
    family = replace(builtin_families()["arithmetic_chain"], text_solver=None)
    report = gate1_static(family, per_level=5)
    assert not report.passed
    assert report.problems[0].startswith("no text solver")
    assert report.figures["text_only"] == "no text solver"


_FILE = """
FAMILY = {
    "id": "evolved_add",
    "version": "1",
    "category": "symbolic",
    "title": "Add",
    "template": "What is [Input Slot 1] plus [Input Slot 2]?",
    "answer_format": "Answer with the integer only.",
}


def generate(difficulty, rng):
    a, b = rng.randint(1, 10 ** difficulty), rng.randint(1, 10 ** difficulty)
    return {"a": a, "b": b}, [str(a), str(b)]


def solution(inputs):
    return inputs["a"] + inputs["b"]


def solution_sum(inputs):
    return sum((inputs["a"], inputs["b"]))


def size(inputs):
    return len(str(inputs["a"])) + len(str(inputs["b"]))


def solve_text(question):
    words = question.split()
    if "unknown" in question:
        return None
    return int(words[2]) + int(words[4].rstrip("?"))
"""


def test_family_files_may_supply_a_text_solver() -> None:
    family = family_from_source(_FILE, "evolved_add.py")
    try:
        assert family.text_solver is not None
        gate = text_only_gate(family, 5)
        assert gate.passed, gate.problems
        with pytest.raises(Undetermined):
            family.text_solver("What is unknown plus 2?")
    finally:
        family.close()


def test_wording_functions() -> None:
    assert join_and(["hail"]) == "hail"
    assert join_and(["hail", "spark", "smoke"]) == "hail, spark and smoke"
    assert split_and("hail, spark and smoke") == ["hail", "spark", "smoke"]
    assert split_and("hail") == ["hail"]
    assert plural("battery") == "batteries" and plural("box") == "boxes" and plural("day") == "days"
    assert count_noun(1, "pen") == "1 pen" and count_noun(3, "pen") == "3 pens"
    assert be(1) == "is" and be(0) == "are" and be(2) == "are"
    with pytest.raises(ValueError):
        join_and([])


def test_grammar_slips_are_gone() -> None:
    bad = re.compile(
        r"\b1 (?:are|pens|apples|batteries|candles|notebooks|soaps|towels|mugs|boxes)\b"
        r"|Only \w+ and \w+ is triggered|\b(?:[02-9]|\d\d+) is in\b"
    )
    for family_id in ("causal_chain_events", "shop_inventory", "venn_region_count"):
        family = builtin_families()[family_id]
        for d in range(1, 11):
            for i in range(30):
                question = make_instance(family, d, seed=1, index=i).question
                assert not bad.search(question), question


def test_create_dataset_warns_when_only_the_seed_differs() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        create_dataset("weekday_shift", size=5, seed=101, difficulty=2)
        create_dataset("weekday_shift", size=5, seed=101, difficulty=2, split="test")
        create_dataset("weekday_shift", size=5, seed=101, difficulty=2)  # same seed again
    with pytest.warns(SeedOnlySplitWarning, match="another split"):
        create_dataset("weekday_shift", size=5, seed=102, difficulty=2)
