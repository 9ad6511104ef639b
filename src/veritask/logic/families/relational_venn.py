"""Relational: overlapping groups given by intersection counts; count a Venn region."""

from __future__ import annotations

import random
from math import comb
from typing import Any

from veritask.logic._family import Family
from veritask.logic._text import be, count_noun, join_and, split_and
from veritask.logic._textonly import between, findall

_CLUBS = ("chess", "drama", "music", "robotics", "soccer", "debate")
_WORDS = {1: "one", 2: "two", 3: "three", 4: "four"}
_LEVELS = (
    (2, "only"),
    (2, "none"),
    (2, "exactly"),
    (3, "only"),
    (3, "none"),
    (3, "exactly"),
    (4, "only"),
    (4, "none"),
    (4, "exactly"),
    (5, "exactly"),
)
"""Per level: how many clubs, and what the question asks."""


def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """2-5 clubs and one question kind per level; every intersection count is given.

    Within one club count the question steps from one region ("only"), to the complement of the
    union ("none"), to a sum of regions ("exactly j"); level 10 has five clubs."""
    k, kind = _LEVELS[difficulty - 1]
    clubs = rng.sample(_CLUBS, k)
    hi = 5 + 2 * difficulty
    region = [rng.randint(0, hi) for _ in range(1 << k)]  # region[0] = in no club
    counts = [0] * (1 << k)  # counts[mask] = members of every club in mask; counts[0] = total
    for mask in range(1 << k):
        counts[mask] = sum(region[r] for r in range(1 << k) if r & mask == mask)
    lines = [f"A school has {count_noun(counts[0], 'student')}."]
    for mask in range(1, 1 << k):
        members = [clubs[i] for i in range(k) if mask >> i & 1]
        n = counts[mask]
        if len(members) == 1:
            lines.append(f"{n} {be(n)} in the {members[0]} club.")
        else:
            both = "both" if len(members) == 2 else "all of"
            lines.append(f"{n} {be(n)} in {both} {join_and(members)}.")
    if kind == "none":
        query: list[Any] = ["none", 0]
        text = "in none of the clubs"
    elif kind == "exactly":
        j = rng.randint(1, k - 1)  # "exactly k" is the stated all-clubs count: a copy
        query = ["exactly", j]
        text = f"in exactly {_WORDS[j]} of the clubs"
    else:
        j = rng.randrange(k)
        query = ["only", j]
        text = f"in the {clubs[j]} club and no other club"
    return {"clubs": clubs, "counts": counts, "query": query}, [" ".join(lines), text]


def solve_mobius(inputs: dict[str, Any]) -> int:
    """Recover every exact region by Moebius inversion, then add up the asked regions."""
    counts = inputs["counts"]
    k = len(inputs["clubs"])
    full = 1 << k
    exact = [0] * full
    for s in range(1, full):
        exact[s] = sum(
            (-1) ** (bin(t).count("1") - bin(s).count("1")) * counts[t]
            for t in range(full)
            if t & s == s
        )
    exact[0] = counts[0] - sum(exact[1:])
    kind, j = inputs["query"]
    if kind == "none":
        return int(exact[0])
    if kind == "exactly":
        return int(sum(exact[s] for s in range(1, full) if bin(s).count("1") == j))
    return int(exact[1 << j])


def solve_formula(inputs: dict[str, Any]) -> int:
    """Closed-form inclusion-exclusion over the given counts."""
    counts = inputs["counts"]
    k = len(inputs["clubs"])
    sets = [(t, bin(t).count("1")) for t in range(1, 1 << k)]
    kind, j = inputs["query"]
    if kind == "none":
        union = sum(counts[t] if size % 2 else -counts[t] for t, size in sets)
        return int(counts[0] - union)
    if kind == "exactly":
        return sum((-1) ** (size - j) * comb(size, j) * counts[t] for t, size in sets if size >= j)
    bit = 1 << j
    return sum((-1) ** (size - 1) * counts[t] for t, size in sets if t & bit)


def text_region(question: str) -> int:
    """Read the total and every intersection count; recover each exact region by inclusion-
    exclusion over the clubs read, then add up the asked ones."""
    total = int(between(question, "A school has ", " student"))
    counts: dict[frozenset[str], int] = {frozenset(): total}
    for n, clubs in findall(
        r"(\d+) (?:is|are) in (?:the |both |all of )?([\w, ]+?)(?: club)?\.", question
    ):
        counts[frozenset(split_and(clubs))] = int(n)
    names: set[str] = set().union(*counts)
    exact: dict[frozenset[str], int] = {}
    for subset in counts:
        exact[subset] = sum(
            (-1) ** (len(sup) - len(subset)) * n for sup, n in counts.items() if subset <= sup
        )
    asked = between(question, "How many students are in ", "?")
    if asked == "none of the clubs":
        return exact[frozenset()]
    if asked.startswith("exactly"):
        j = ("one", "two", "three", "four").index(asked.split()[1]) + 1
        return sum(n for s, n in exact.items() if len(s) == j)
    only = between(asked, "the ", " club and no other")
    if only not in names:
        raise ValueError(f"unknown club {only!r}")
    return exact[frozenset([only])]


FAMILIES = (
    Family(
        id="venn_region_count",
        version="4",
        category="relational",
        title="Venn region count",
        template="[Input Slot 1] How many students are [Input Slot 2]?",
        generate=generate,
        validators=(solve_mobius, solve_formula),
        answer_format="Answer with the integer only.",
        # regions, plus the head count to work with (it grows at every level)
        size=lambda inputs: len(inputs["counts"]) + int(inputs["counts"][0]) // 4,
        text_solver=text_region,
    ),
)
