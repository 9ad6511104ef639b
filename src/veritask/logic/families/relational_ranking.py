"""Relational: recover a total order from pairwise comparisons and name the k-th person."""

from __future__ import annotations

import heapq
import random
import re
from typing import Any

from veritask.logic._family import Family
from veritask.logic._textonly import Undetermined

_NAMES = [
    "Ada",
    "Ben",
    "Cleo",
    "Dan",
    "Eve",
    "Finn",
    "Gus",
    "Hal",
    "Ida",
    "Jay",
    "Kai",
    "Lou",
    "Max",
    "Ned",
    "Ola",
    "Pia",
    "Ray",
    "Sam",
    "Tia",
    "Uma",
]
# (more, less, most, least)
_ATTRS = (
    ("taller", "shorter", "tallest", "shortest"),
    ("older", "younger", "oldest", "youngest"),
    ("faster", "slower", "fastest", "slowest"),
    ("heavier", "lighter", "heaviest", "lightest"),
)


def _ordinal(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """``3 + d`` people; every adjacent pair plus ``d`` redundant comparisons, shuffled."""
    n = 3 + difficulty
    order = rng.sample(_NAMES, n)  # order[0] has the most of the attribute
    pairs = {(i, i + 1) for i in range(n - 1)}
    others = [(i, j) for i in range(n) for j in range(i + 2, n)]
    pairs |= set(rng.sample(others, min(difficulty, len(others))))
    comparisons = [[order[i], order[j]] for i, j in sorted(pairs)]
    rng.shuffle(comparisons)
    attr = rng.randrange(len(_ATTRS))
    more, less, most, least = _ATTRS[attr]
    lines = []
    for a, b in comparisons:
        if rng.random() < 0.5:
            lines.append(f"{a} is {more} than {b}.")
        else:
            lines.append(f"{b} is {less} than {a}.")
    k = rng.randint(1, n)
    direction = rng.choice(("most", "least"))
    word = most if direction == "most" else least
    inputs = {"comparisons": comparisons, "k": k, "direction": direction, "attr": attr}
    rank = word if k == 1 else f"{_ordinal(k)} {word}"
    return inputs, [" ".join(lines), rank]


def solve_kahn(inputs: dict[str, Any]) -> str:
    """Topological sort (Kahn, unique by construction) then index."""
    succ: dict[str, list[str]] = {}
    indeg: dict[str, int] = {}
    for a, b in inputs["comparisons"]:
        succ.setdefault(a, []).append(b)
        succ.setdefault(b, [])
        indeg[b] = indeg.get(b, 0) + 1
        indeg.setdefault(a, 0)
    ready = [p for p, d in indeg.items() if d == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        if len(ready) != 1:
            raise ValueError("order is not unique")
        p = heapq.heappop(ready)
        order.append(p)
        for q in succ[p]:
            indeg[q] -= 1
            if indeg[q] == 0:
                heapq.heappush(ready, q)
    k = int(inputs["k"])
    return order[k - 1] if inputs["direction"] == "most" else order[-k]


def solve_closure(inputs: dict[str, Any]) -> str:
    """Count, for every person, everyone transitively above them; rank = that count + 1."""
    above: dict[str, set[str]] = {}
    for a, b in inputs["comparisons"]:
        above.setdefault(b, set()).add(a)
        above.setdefault(a, set())
    people = list(above)
    n = len(people)
    closure = {p: set(above[p]) for p in people}
    changed = True
    while changed:
        changed = False
        for p in people:
            extra: set[str] = set()
            for q in closure[p]:
                extra |= closure[q]
            if not extra <= closure[p]:
                closure[p] |= extra
                changed = True
    k = int(inputs["k"])
    rank = k if inputs["direction"] == "most" else n + 1 - k
    (who,) = [p for p in people if len(closure[p]) == rank - 1]
    return who


def _text_order(question: str) -> list[str]:
    """The order (most first) the comparisons in the text force; Undetermined if not one."""
    above: dict[str, set[str]] = {}
    for more, less, _, _ in _ATTRS:
        pairs = re.findall(rf"(\w+) is {more} than (\w+)\.", question)
        pairs += [(a, b) for b, a in re.findall(rf"(\w+) is {less} than (\w+)\.", question)]
        for a, b in pairs:
            above.setdefault(b, set()).add(a)
            above.setdefault(a, set())
    order: list[str] = []
    while len(order) < len(above):
        ready = [p for p in above if p not in order and above[p] <= set(order)]
        if len(ready) != 1:
            raise Undetermined(f"{len(ready)} people could come next after {order}")
        order.append(ready[0])
    return order


def text_kth(question: str) -> str:
    """Read the comparisons (either direction) and the asked rank; the order from the text must
    be the only one consistent with it."""
    asked = re.search(r"Who is the (?:(\d+)\w\w )?(\w+)\?", question)
    if asked is None:
        raise ValueError("no rank asked")
    k = int(asked.group(1) or 1)
    order = _text_order(question)
    if any(asked.group(2) == most for _, _, most, _ in _ATTRS):
        return order[k - 1]
    if any(asked.group(2) == least for _, _, _, least in _ATTRS):
        return order[-k]
    raise ValueError(f"unknown rank word {asked.group(2)!r}")


FAMILIES = (
    Family(
        id="ranking_kth",
        version="2",
        category="relational",
        title="Ranking from pairwise comparisons",
        template="[Input Slot 1] Who is the [Input Slot 2]?",
        generate=generate,
        validators=(solve_kahn, solve_closure),
        answer_format="Answer with the person's name only.",
        size=lambda inputs: len(inputs["comparisons"]),
        text_solver=text_kth,
    ),
)
