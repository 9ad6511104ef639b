"""Commonsense: scale a recipe to a new number of servings, converting kitchen units."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

from veritask.logic._family import Family
from veritask.logic._text import number, split_and
from veritask.logic._textonly import Undetermined, between, findall

_INGREDIENTS = [
    "sugar",
    "flour",
    "milk",
    "butter",
    "oil",
    "honey",
    "vinegar",
    "salt",
    "cocoa",
    "water",
    "cream",
    "yeast",
    "rice",
    "oats",
]
# (name, plural, teaspoons)
_UNITS = (("cup", "cups", 48), ("fluid ounce", "fluid ounces", 6), ("tablespoon", "tablespoons", 3))
_TSP = ("teaspoon", "teaspoons", 1)


def _amount_text(parts: list[list[Any]]) -> str:
    words = [f"{n} {unit[0] if n == 1 else unit[1]}" for unit, n in _parts_units(parts)]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _parts_units(parts: list[list[Any]]) -> list[tuple[tuple[str, str, int], int]]:
    table = {u[2]: u for u in (*_UNITS, _TSP)}
    return [(table[size], n) for size, n in parts]


def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """``2 + d`` ingredients in mixed units (more unit kinds with difficulty)."""
    n_ing = 2 + difficulty
    units = [u for u in _UNITS if u[2] <= (48 if difficulty >= 7 else 6 if difficulty >= 4 else 3)]
    names = rng.sample(_INGREDIENTS, n_ing)
    servings = rng.randint(2, 6)
    target = rng.choice([t for t in range(2, 13) if t != servings])
    recipe: list[list[Any]] = []
    for name in names:
        # at least 2 teaspoons a serving (version 3): with 1, the answer for one asked
        # ingredient was the target servings, the last number of the question
        total = rng.randint(2, 4 + 2 * difficulty) * servings
        parts: list[list[int]] = []
        left = total
        for _, _, size in units:
            if left >= size:
                n = rng.randint(left // size // 2, left // size)
                if n:
                    parts.append([size, n])
                    left -= n * size
        if left:
            parts.append([1, left])
        recipe.append([name, parts])
    asked = sorted(rng.sample(names, 1 + difficulty // 4))
    lines = [f"{_amount_text(parts)} of {name}" for name, parts in recipe]
    text = f"A recipe for {servings} servings uses " + "; ".join(lines) + "."
    inputs = {"recipe": recipe, "servings": servings, "target": target, "asked": asked}
    what = asked[0] if len(asked) == 1 else ", ".join(asked[:-1]) + " and " + asked[-1]
    return inputs, [text, str(target), what]


def solve_fraction(inputs: dict[str, Any]) -> int:
    """Per-ingredient teaspoons per serving as a Fraction, times the target servings."""
    total = Fraction(0)
    for name, parts in inputs["recipe"]:
        if name in inputs["asked"]:
            tsp = sum(size * n for size, n in parts)
            total += Fraction(tsp, inputs["servings"]) * inputs["target"]
    if total.denominator != 1:
        raise ValueError("not a whole number of teaspoons")
    return int(total)


def solve_integer(inputs: dict[str, Any]) -> int:
    """Scale every unit part up first, convert, then divide once (exact by construction)."""
    table = {"cup": 48, "fluid ounce": 6, "tablespoon": 3, "teaspoon": 1}
    by_size = {v: k for k, v in table.items()}
    asked = set(inputs["asked"])
    scaled = 0
    for name, parts in inputs["recipe"]:
        if name not in asked:
            continue
        for size, n in parts:
            scaled += n * inputs["target"] * table[by_size[size]]
    quotient, rest = divmod(scaled, inputs["servings"])
    if rest:
        raise ValueError("not a whole number of teaspoons")
    return int(quotient)


_TEXT_UNITS = {"cup": 48, "fluid ounce": 6, "tablespoon": 3, "teaspoon": 1}


def text_teaspoons(question: str) -> int:
    """Read each ingredient's amounts, the servings and the asked ingredients; scale the
    teaspoons of the asked ones exactly."""
    servings = number(between(question, "A recipe for "))
    target = number(between(question, "scaled to make "))
    asked = split_and(between(question, "How many teaspoons of ", " (in total)"))
    teaspoons: dict[str, int] = {}
    for line in between(question, " servings uses ", ". The recipe").split("; "):
        amounts, _, name = line.rpartition(" of ")
        units = findall(r"(\d+) (cup|fluid ounce|tablespoon|teaspoon)s?\b", amounts)
        teaspoons[name] = sum(int(n) * _TEXT_UNITS[unit] for n, unit in units)
    total = Fraction(sum(teaspoons[name] for name in asked) * target, servings)
    if total.denominator != 1:
        raise Undetermined(f"{total} is not a whole number of teaspoons")
    return int(total)


FAMILIES = (
    Family(
        id="recipe_scaling",
        version="3",
        category="commonsense",
        title="Recipe scaling with unit conversion",
        template=(
            "1 cup = 8 fluid ounces, 1 fluid ounce = 2 tablespoons and 1 tablespoon = 3 "
            "teaspoons. [Input Slot 1] The recipe is scaled to make [Input Slot 2] servings. "
            "How many teaspoons of [Input Slot 3] (in total) does the scaled recipe use?"
        ),
        generate=generate,
        validators=(solve_fraction, solve_integer),
        answer_format="Answer with the integer number of teaspoons only.",
        size=lambda inputs: sum(len(parts) for _, parts in inputs["recipe"]) + len(inputs["asked"]),
        text_solver=text_teaspoons,
    ),
)
