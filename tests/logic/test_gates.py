"""Gate 1 (static): built-in families pass; broken families are caught with a reason."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from veritask.logic import builtin_families, gate1_static

FAMILIES = sorted(builtin_families())


@pytest.mark.parametrize("family_id", FAMILIES)
def test_builtin_families_pass_gate1(family_id: str) -> None:
    report = gate1_static(builtin_families()[family_id], per_level=200)
    assert report.passed, report.problems


def _base() -> Any:
    return builtin_families()["arithmetic_chain"]


def test_disagreeing_validators_are_rejected() -> None:
    family = _base()
    broken = replace(
        family, validators=(family.validators[0], lambda inputs: family.validators[0](inputs) + 1)
    )
    report = gate1_static(broken, per_level=5)
    assert not report.passed and "validators disagree" in report.problems[0]


def test_nondeterministic_generator_is_rejected() -> None:
    family = _base()
    leaky = random.Random(99)

    def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
        return family.generate(difficulty, random.Random(leaky.random()))

    report = gate1_static(replace(family, generate=generate), per_level=5)
    assert any("not deterministic" in p for p in report.problems)


def test_degenerate_answers_are_rejected() -> None:
    family = _base()
    report = gate1_static(replace(family, validators=(lambda i: 7, lambda i: 7)), per_level=20)
    assert any("answer '7'" in p for p in report.problems)


def test_slot_mismatch_is_rejected() -> None:
    family = _base()
    report = gate1_static(replace(family, template="Just [Input Slot 1]?"), per_level=3)
    assert any("slots" in p for p in report.problems)
