"""Knights, row ordering and CNF counting at level 10: solved by search, not enumeration.

At small levels every instance's answer is checked against an independent brute force over
all assignments (or orders); the search solvers equal brute force on random inputs that may
have many solutions or none; at level 10 uniqueness is checked with the families' own
solvers (counting solutions up to two) and the measured quantity meets the goal."""

from __future__ import annotations

import itertools
import random
import re
from typing import Any

import pytest

from veritask.logic import Undetermined, builtin_families, make_instance
from veritask.logic._family import canonical
from veritask.logic._hardness import hardness_of, median, meets_level10
from veritask.logic.families import logical_cnf_count as cnf
from veritask.logic.families import logical_knights as knights
from veritask.logic.families import logical_ordering as ordering

FAMILIES = ("knights_and_knaves", "row_ordering", "cnf_model_count")


def _knight_masks(k: int, statements: list[list[Any]]) -> list[int]:
    """Every assignment of kinds (bit i: person i is a knight) that fits, by brute force."""
    return [
        mask
        for mask in range(1 << k)
        if all(knights._truth(s, mask) == bool(mask >> i & 1) for i, s in enumerate(statements))
    ]


def _row_orders(names: list[str], clues: list[list[Any]]) -> list[tuple[str, ...]]:
    """Every order of the names that fits the clues, by brute force."""
    out = []
    for order in itertools.permutations(names):
        pos = {name: i + 1 for i, name in enumerate(order)}
        if all(ordering._holds(c, pos) for c in clues):
            out.append(order)
    return out


def _cnf_count(n: int, clauses: list[list[int]]) -> int:
    """Models by brute force over all 2^n assignments."""
    return sum(
        all(any(bool(mask >> (abs(lit) - 1) & 1) == (lit > 0) for lit in c) for c in clauses)
        for mask in range(1 << n)
    )


@pytest.mark.parametrize("difficulty", range(1, 7))
def test_knights_answers_equal_brute_force(difficulty: int) -> None:
    family = builtin_families()["knights_and_knaves"]
    for index in range(12):
        inst = make_instance(family, difficulty, split="test", index=index)
        inputs = inst.inputs
        masks = _knight_masks(inputs["k"], inputs["statements"])
        assert len(masks) == 1
        expected = [n for i, n in enumerate(inputs["names"]) if masks[0] >> i & 1] or "none"
        assert inst.answer == canonical(expected)


@pytest.mark.parametrize("difficulty", range(1, 8))
def test_row_answers_equal_brute_force(difficulty: int) -> None:
    family = builtin_families()["row_ordering"]
    for index in range(12 if difficulty < 7 else 4):
        inst = make_instance(family, difficulty, split="test", index=index)
        found = _row_orders(inst.inputs["names"], inst.inputs["clues"])
        assert len(found) == 1
        assert inst.answer == ", ".join(found[0])
        assert ordering.clue_tier(inst.inputs["clues"]) == ordering._TIER[difficulty - 1]


@pytest.mark.parametrize("difficulty", range(1, 8))
def test_cnf_answers_equal_brute_force(difficulty: int) -> None:
    family = builtin_families()["cnf_model_count"]
    for index in range(12):
        inst = make_instance(family, difficulty, split="test", index=index)
        assert inst.answer == str(_cnf_count(inst.inputs["n"], inst.inputs["clauses"]))


def test_knights_search_finds_every_fitting_assignment() -> None:
    rng = random.Random(5)
    for _ in range(200):
        k = rng.randint(3, 8)
        statements = [knights._random_statement(rng, i, k, rng.random() < 0.6) for i in range(k)]
        expected = _knight_masks(k, statements)
        assert sorted(knights.solutions(statements, k, limit=1 << k)) == expected
        assert len(knights.solutions(statements, k)) == min(2, len(expected))


def test_row_search_finds_every_fitting_order() -> None:
    rng = random.Random(3)
    for _ in range(200):
        names = sorted(rng.sample(ordering._NAMES, rng.randint(3, 6)))
        clues = [
            ordering._random_clue(rng, names, rng.randint(1, 10)) for _ in range(rng.randint(1, 6))
        ]
        expected = _row_orders(names, clues)
        assert sorted(ordering.orders(names, clues, limit=10**6)) == sorted(expected)
        assert len(ordering.orders(names, clues)) == min(2, len(expected))


def test_cnf_counters_equal_brute_force_on_random_formulas() -> None:
    rng = random.Random(9)
    for _ in range(200):
        n = rng.randint(1, 9)
        clauses = [
            [v if rng.random() < 0.5 else -v for v in rng.sample(range(1, n + 1), width)]
            for width in (rng.randint(1, min(4, n)) for _ in range(rng.randint(0, 12)))
        ]
        inputs = {"n": n, "clauses": clauses}
        expected = _cnf_count(n, clauses)
        assert cnf.solve_dpll(inputs) == expected
        assert cnf.solve_elimination(inputs) == expected


@pytest.mark.parametrize("family_id", FAMILIES)
def test_level_10_is_unique_by_the_solver_and_meets_the_goal(family_id: str) -> None:
    family = builtin_families()[family_id]
    hard = hardness_of(family_id)
    assert hard is not None and not hard.why_not
    insts = [make_instance(family, 10, split="test", index=i) for i in range(4)]
    for inst in insts:
        inputs = inst.inputs
        if family_id == "knights_and_knaves":
            assert inputs["k"] == 20
            assert len(knights.solutions(inputs["statements"], 20)) == 1
        elif family_id == "row_ordering":
            assert len(inputs["names"]) == 10
            assert len(ordering.orders(inputs["names"], inputs["clues"])) == 1
        else:
            assert inputs["n"] == 20
            assert cnf.solve_dpll(dict(inputs)) == cnf.solve_elimination(dict(inputs))
        assert family.text_solver is not None
        assert canonical(family.text_solver(inst.question)) == inst.answer
    assert meets_level10(hard, median([hard.measure(i.inputs) for i in insts]))


def test_knights_text_with_two_fitting_assignments_is_undetermined() -> None:
    family = builtin_families()["knights_and_knaves"]
    question = family.render(
        [
            "3",
            "Alice, Bob, Cara",
            'Alice says: "Bob is a knight."\nBob says: "Alice is a knight."\n'
            'Cara says: "Alice and Bob are of the same kind."',
        ]
    )
    assert family.text_solver is not None
    with pytest.raises(Undetermined, match="2 assignments"):
        family.text_solver(question)


def test_row_text_with_clues_dropped_is_undetermined() -> None:
    family = builtin_families()["row_ordering"]
    inst = make_instance(family, 10, split="test", index=0)
    first = re.search(r"\n- [^\n]*", inst.question)
    assert first is not None
    start = inst.question.index("These clues hold:\n") + len("These clues hold:\n")
    end = inst.question.index("\nGive")
    question = inst.question[:start] + first.group(0).lstrip("\n") + inst.question[end:]
    assert family.text_solver is not None
    with pytest.raises(Undetermined):
        family.text_solver(question)
