"""Logical: people standing in a row, placed by clues that admit exactly one arrangement."""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Callable, Mapping
from typing import Any

from veritask.logic._family import Family
from veritask.logic._textonly import Undetermined, between

_NAMES = ("Ann", "Ben", "Cid", "Dee", "Eli", "Fay", "Gil")


def _holds(clue: list[Any], pos: Mapping[str, int]) -> bool:
    """Whether a clue holds when ``pos`` maps each name to its 1-based position."""
    kind = clue[0]
    if kind == "pos":
        return bool(pos[clue[1]] == clue[2])
    if kind == "notpos":
        return bool(pos[clue[1]] != clue[2])
    if kind == "left":
        return pos[clue[1]] < pos[clue[2]]
    if kind == "adj":
        return abs(pos[clue[1]] - pos[clue[2]]) == 1
    if kind == "notadj":
        return abs(pos[clue[1]] - pos[clue[2]]) != 1
    return bool(abs(pos[clue[1]] - pos[clue[2]]) == clue[3] + 1)  # "gap": people between


def _compile(clue: list[Any], index: Mapping[str, int]) -> Callable[[tuple[int, ...]], bool]:
    """A fast test of a clue on a tuple of positions indexed like the sorted names."""
    kind = clue[0]
    a = index[clue[1]]
    if kind == "pos":
        return lambda c: c[a] == clue[2]
    if kind == "notpos":
        return lambda c: c[a] != clue[2]
    b = index[clue[2]]
    if kind == "left":
        return lambda c: c[a] < c[b]
    if kind == "adj":
        return lambda c: abs(c[a] - c[b]) == 1
    if kind == "notadj":
        return lambda c: abs(c[a] - c[b]) != 1
    gap = clue[3] + 1
    return lambda c: abs(c[a] - c[b]) == gap


def _describe(clue: list[Any]) -> str:
    kind = clue[0]
    if kind == "pos":
        return f"{clue[1]} is in position {clue[2]}."
    if kind == "notpos":
        return f"{clue[1]} is not in position {clue[2]}."
    if kind == "left":
        return f"{clue[1]} stands somewhere to the left of {clue[2]}."
    if kind == "adj":
        return f"{clue[1]} stands right next to {clue[2]}."
    if kind == "notadj":
        return f"{clue[1]} does not stand next to {clue[2]}."
    g = clue[3]
    return f"Exactly {g} {'person stands' if g == 1 else 'people stand'} between {clue[1]} and {clue[2]}."


_KEEP = (0.0, 0.3, 0.0, 0.3, 0.0, 0.3, 0.4, 0.2, 0.4, 0.5)
"""Per level: the share of the remaining orders a new clue must keep."""
_PEOPLE = (3, 3, 4, 4, 5, 5, 5, 6, 6, 6)
"""Per level: how many people stand in the row."""
_TIER = (0, 1, 0, 1, 0, 1, 2, 0, 1, 2)
"""Per level: the clue kinds about pairs (see ``_PAIR_KINDS``); every instance of a level of
tier t > 0 has a clue of its tier's own kind (a distance clue at 1, a gap clue at 2)."""
_PAIR_KINDS = (
    ("left",),
    ("left", "left", "adj", "notadj"),
    ("left", "adj", "notadj", "gap", "gap"),
)
_DISTANCE = ("adj", "notadj", "gap")


def clue_tier(clues: list[list[Any]]) -> int:
    """The highest clue tier used: 2 with a gap clue, 1 with a next-to clue, else 0."""
    kinds = {c[0] for c in clues}
    return 2 if "gap" in kinds else 1 if kinds & {"adj", "notadj"} else 0


def _random_clue(rng: random.Random, names: list[str], difficulty: int) -> list[Any]:
    n = len(names)
    r = rng.random()
    if r < 0.35 - 0.03 * difficulty:
        return [rng.choice(("pos", "notpos")), rng.choice(names), rng.randint(1, n)]
    a, b = rng.sample(names, 2)
    kind = rng.choice(_PAIR_KINDS[_TIER[difficulty - 1]])
    if kind == "gap":
        return ["gap", a, b, rng.randint(0, n - 2)]
    return [kind, a, b]


def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """3-6 people; clues true of a hidden order, each removing candidates, until one is left.

    Levels step in the row length or the clue kinds (``_PEOPLE``, ``_TIER``): position and
    order clues only, then next-to clues, then (for 5 and 6 people) exactly-g-between clues."""
    while True:
        inputs, slots = _draw(difficulty, rng)
        if clue_tier(inputs["clues"]) == _TIER[difficulty - 1]:
            return inputs, slots


def _draw(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """One draw of names, hidden order and clues (see :func:`generate`)."""
    n = _PEOPLE[difficulty - 1]
    names = sorted(rng.sample(_NAMES, n))
    hidden = names[:]
    rng.shuffle(hidden)
    truth = {name: i + 1 for i, name in enumerate(hidden)}
    # candidates as position tuples indexed like ``names``
    candidates = list(itertools.permutations(range(1, n + 1)))
    index = {name: i for i, name in enumerate(names)}
    clues: list[list[Any]] = []
    share = _KEEP[difficulty - 1]
    misses = 0
    while len(candidates) > 1:
        clue = _random_clue(rng, names, difficulty)
        if not _holds(clue, truth):
            continue
        test = _compile(clue, index)
        kept = [c for c in candidates if test(c)]
        # a clue must leave a share of the candidates (after 20 misses any cut will do), so
        # the higher levels of one row length need more, weaker clues
        weak = len(kept) >= share * len(candidates) or misses >= 20
        misses += 1
        if len(kept) < len(candidates) and weak:
            candidates = kept
            clues.append(clue)
            misses = 0
    rng.shuffle(clues)
    text = "\n".join(f"- {_describe(c)}" for c in clues)
    return {"names": names, "clues": clues}, [str(n), ", ".join(names), text]


def solve_permutations(inputs: dict[str, Any]) -> list[str]:
    """Try every order of the names, each clue checked on a dict of positions."""
    clues = inputs["clues"]
    for order in itertools.permutations(inputs["names"]):
        pos = {name: i + 1 for i, name in enumerate(order)}
        for c in clues:
            if not _holds(c, pos):
                break
        else:
            return list(order)
    raise ValueError("no arrangement")


def _clue_holds(a: int, b: int, clue: list[Any]) -> bool:
    """A binary clue on the positions ``a`` and ``b`` of its two people."""
    d = b - a
    kind = clue[0]
    if kind == "left":
        return d > 0
    if kind == "adj":
        return d in (1, -1)
    if kind == "notadj":
        return d not in (1, -1)
    return d in (clue[3] + 1, -clue[3] - 1)


def _domains(
    names: list[str], clues: list[list[Any]]
) -> tuple[dict[str, set[int]], list[list[Any]]]:
    """Position domains narrowed by the unary clues, and the binary clues left."""
    domains = {name: set(range(1, len(names) + 1)) for name in names}
    binary: list[list[Any]] = []
    for clue in clues:
        if clue[0] == "pos":
            domains[clue[1]] &= {clue[2]}
        elif clue[0] == "notpos":
            domains[clue[1]].discard(clue[2])
        else:
            binary.append(clue)
    return domains, binary


def solve_domains(inputs: dict[str, Any]) -> list[str]:
    """Position domains per person, narrowed by unary clues, then a backtracking search that
    checks every clue as soon as both of its people are placed."""
    names: list[str] = inputs["names"]
    n = len(names)
    domains, binary = _domains(names, inputs["clues"])
    ok = _clue_holds

    order = sorted(names, key=lambda s: len(domains[s]))
    placed: dict[str, int] = {}

    def search(i: int) -> bool:
        if i == n:
            return True
        who = order[i]
        for p in sorted(domains[who]):
            if p in placed.values():
                continue
            placed[who] = p
            if all(
                ok(placed[c[1]], placed[c[2]], c)
                for c in binary
                if who in (c[1], c[2]) and c[1] in placed and c[2] in placed
            ) and search(i + 1):
                return True
            del placed[who]
        return False

    if not search(0):
        raise ValueError("no arrangement")
    return sorted(names, key=lambda s: placed[s])


_TEXT_CLUES: tuple[tuple[str, Callable[[int, int, int], bool]], ...] = (
    (r"(\w+) is in position (\d+)\.", lambda a, p, _: a == p),
    (r"(\w+) is not in position (\d+)\.", lambda a, p, _: a != p),
    (r"(\w+) stands somewhere to the left of (\w+)\.", lambda a, b, _: a < b),
    (r"(\w+) stands right next to (\w+)\.", lambda a, b, _: abs(a - b) == 1),
    (r"(\w+) does not stand next to (\w+)\.", lambda a, b, _: abs(a - b) != 1),
    (
        r"Exactly (\d+) (?:person stands|people stand) between (\w+) and (\w+)\.",
        lambda a, b, g: abs(a - b) == g + 1,
    ),
)


def _text_clues(question: str) -> list[tuple[Callable[[int, int, int], bool], list[str]]]:
    out = []
    for line in between(question, "These clues hold:\n", "\nGive").split("\n"):
        for pattern, test in _TEXT_CLUES:
            match = re.fullmatch(pattern, line.removeprefix("- "))
            if match:
                out.append((test, list(match.groups())))
                break
        else:
            raise ValueError(f"unknown clue {line!r}")
    return out


def text_row(question: str) -> list[str]:
    """Read the people and the clues; try every order. Exactly one must fit."""
    names = between(question, "people, ", ", stand in").split(", ")
    clues = _text_clues(question)
    fits = []
    for order in itertools.permutations(names):
        pos = {name: i + 1 for i, name in enumerate(order)}
        if all(_fits(test, [pos.get(a) or int(a) for a in args]) for test, args in clues):
            fits.append(list(order))
    if len(fits) != 1:
        raise Undetermined(f"{len(fits)} orders fit the clues")
    return fits[0]


def _fits(test: Callable[[int, int, int], bool], values: list[int]) -> bool:
    if len(values) == 3:  # a gap clue: (gap, a, b)
        return test(values[1], values[2], values[0])
    return test(values[0], values[1], 0)


FAMILIES = (
    Family(
        id="row_ordering",
        version="4",
        category="logical",
        title="Ordering in a row",
        template=(
            "[Input Slot 1] people, [Input Slot 2], stand in a single row, in positions "
            "numbered from 1 on the left. These clues hold:\n[Input Slot 3]\n"
            "Give the order of the people from left to right."
        ),
        generate=generate,
        validators=(solve_permutations, solve_domains),
        answer_format="Answer with the names from left to right, separated by commas.",
        size=lambda inputs: (
            len(inputs["names"]) ** 3
            + len(inputs["clues"])
            + 2 * sum(c[0] in _DISTANCE for c in inputs["clues"])
            + 4 * sum(c[0] == "gap" for c in inputs["clues"])
        ),
        text_solver=text_row,
    ),
)
