"""Logical: people standing in a row, placed by clues that admit exactly one arrangement."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping
from typing import Any

from veritask.logic._family import Family
from veritask.logic._textonly import Undetermined, between

_NAMES = ("Ann", "Ben", "Cid", "Dee", "Eli", "Fay", "Gil", "Hal", "Ivy", "Jon", "Kai", "Lou")


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


_PEOPLE = (3, 3, 4, 4, 5, 5, 6, 7, 8, 10)
"""Per level: how many people stand in the row (10! = 3,628,800 orders at level 10)."""
_TIER = (0, 1, 0, 1, 0, 1, 2, 1, 2, 2)
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


# --- propagation search (generator, validator, text solver) ------------------------------------


Link = tuple[int, int, str, int]
"""A pair clue on people indices: (a, b, kind, distance for next-to and gap clues)."""


def _revise(link: Link, da: int, db: int, full: int) -> tuple[int, int]:
    """The two people's position sets (bit p - 1: position p) narrowed by one pair clue."""
    _, _, kind, shift = link
    if kind == "left":
        return da & ((1 << (db.bit_length() - 1)) - 1), db & ~((da & -da) * 2 - 1)
    if kind == "notadj":
        if db & (db - 1) == 0:
            da &= ~((db << 1) | (db >> 1))
        if da & (da - 1) == 0:
            db &= ~((da << 1) | (da >> 1))
        return da, db
    return da & ((db << shift) | (db >> shift)) & full, db & ((da << shift) | (da >> shift))


def _settle(dom: list[int], links: list[list[Link]], full: int, queue: list[int]) -> bool:
    """Apply the pair clues about people whose positions changed (``queue``), and
    all-different for the people fixed, until nothing changes (False: a conflict)."""
    pending = sum(1 << i for i in queue)
    while queue:
        who = queue.pop()
        pending &= ~(1 << who)
        for link in links[who]:
            a, b = link[0], link[1]
            na, nb = _revise(link, dom[a], dom[b], full)
            if not na or not nb:
                return False
            changed = (na != dom[a]) << a | (nb != dom[b]) << b
            dom[a], dom[b] = na, nb
            fresh = changed & ~pending
            if fresh:
                queue.extend(i for i in (a, b) if fresh >> i & 1)
                pending |= fresh
        d = dom[who]
        if d & (d - 1) == 0:
            for other, od in enumerate(dom):
                if od & d and other != who:
                    if od == d:
                        return False
                    dom[other] = od & ~d
                    if not pending >> other & 1:
                        pending |= 1 << other
                        queue.append(other)
    return True


def _links(names: list[str], clues: list[list[Any]]) -> tuple[list[int], list[list[Link]]]:
    """Position sets after the position clues, and each person's pair clues as links."""
    full = (1 << len(names)) - 1
    index = {name: i for i, name in enumerate(names)}
    dom = [full] * len(names)
    links: list[list[Link]] = [[] for _ in names]
    for clue in clues:
        kind = clue[0]
        if kind in ("pos", "notpos"):
            bit = 1 << (clue[2] - 1)
            i = index[clue[1]]
            dom[i] &= bit if kind == "pos" else ~bit
            continue
        shift = clue[3] + 1 if kind == "gap" else 1
        link = (index[clue[1]], index[clue[2]], kind, shift)
        links[link[0]].append(link)
        links[link[1]].append(link)
    return dom, links


def orders(names: list[str], clues: list[list[Any]], limit: int = 2) -> list[tuple[str, ...]]:
    """Up to ``limit`` orders (left to right) that fit the clues: position sets narrowed by
    propagation, then a split on a person with the fewest positions left."""
    full = (1 << len(names)) - 1
    start, links = _links(names, clues)
    found: list[tuple[str, ...]] = []

    def search(dom: list[int], queue: list[int]) -> None:
        if not _settle(dom, links, full, queue):
            return
        open_ = [i for i, d in enumerate(dom) if d & (d - 1)]
        if not open_:
            found.append(tuple(names[i] for i in sorted(range(len(dom)), key=dom.__getitem__)))
            return
        who = min(open_, key=lambda i: dom[i].bit_count())
        rest = dom[who]
        while rest and len(found) < limit:
            bit = rest & -rest
            rest ^= bit
            split = dom[:]
            split[who] = bit
            search(split, [who])

    search(start, list(range(len(names))))
    return found


def _about(clue: list[Any], moved: list[str], rng: random.Random) -> list[Any]:
    """The clue made about a person whose position differs between two orders (the pair's
    first person, or both at random), so that it can tell them apart."""
    first = rng.choice(moved)
    if clue[0] in ("pos", "notpos"):
        return [clue[0], first, *clue[2:]]
    second = rng.choice(moved) if rng.random() < 0.5 else clue[2]
    if second == first:
        second = clue[1] if clue[1] != first else clue[2]
    return [clue[0], first, second, *clue[3:]]


def _ruling_out(
    difficulty: int, rng: random.Random, truth: dict[str, int], other: dict[str, int]
) -> list[Any] | None:
    """A random clue true of the hidden order and false of the other (None when none turns
    up in 100 draws)."""
    names = sorted(truth)
    moved = [name for name in names if other[name] != truth[name]]
    for _ in range(100):
        clue = _about(_random_clue(rng, names, difficulty), moved, rng)
        if _holds(clue, truth) and not _holds(clue, other):
            return clue
    return None


def _open(n: int) -> int:
    """The generator adds narrowing clues until the position sets left allow at most this
    many placements (their product), then searches for the other orders that still fit:
    10^5 for 10 people, fewer for shorter rows."""
    return int(10 ** (n // 2))


def _tier_clue(
    names: list[str], truth: dict[str, int], difficulty: int, rng: random.Random
) -> list[list[Any]]:
    """At a level of tier t > 0, one clue of the tier's own kind true of the hidden order
    (a next-to clue at 1, a gap clue at 2); none at tier 0."""
    tier = _TIER[difficulty - 1]
    if not tier:
        return []
    a, b = rng.sample(names, 2)
    gap = abs(truth[a] - truth[b]) - 1
    if tier == 2:
        return [["gap", a, b, gap]]
    return [["adj" if gap == 0 else "notadj", a, b]]


def _true_clue(
    rng: random.Random, names: list[str], truth: dict[str, int], difficulty: int
) -> list[Any]:
    """A clue drawn like :func:`_random_clue` but true of the order by construction: a
    position clue names a wrong position unless it is "is in position" (as often as a
    random position would be right), an order clue is oriented, a distance clue takes the
    kind or gap the two people have."""
    n = len(names)
    if rng.random() < 0.35 - 0.03 * difficulty:
        who = names[rng.randrange(n)]
        if rng.randrange(n) == 0:
            return ["pos", who, truth[who]]
        wrong = rng.randrange(1, n)
        return ["notpos", who, wrong + (wrong >= truth[who])]
    i, j = rng.randrange(n), rng.randrange(n - 1)
    a, b = names[i], names[j + (j >= i)]
    kind = rng.choice(_PAIR_KINDS[_TIER[difficulty - 1]])
    d = truth[b] - truth[a]
    if kind == "left":
        return ["left", a, b] if d > 0 else ["left", b, a]
    if kind == "gap":
        return ["gap", a, b, abs(d) - 1]
    return ["adj" if abs(d) == 1 else "notadj", a, b]


def _narrowing_clues(
    names: list[str], truth: dict[str, int], difficulty: int, rng: random.Random
) -> list[list[Any]]:
    """Random clues true of the hidden order, each kept only when propagation narrows some
    person's position set with it, until the sets allow at most :func:`_open` placements."""
    clues = _tier_clue(names, truth, difficulty, rng)
    dom, links = _links(names, clues)
    full = (1 << len(names)) - 1
    _settle(dom, links, full, list(range(len(names))))
    misses = 0
    while misses < 30:
        clue = _true_clue(rng, names, truth, difficulty)
        trial, more = _links(names, [clue])
        trial = [a & b for a, b in zip(trial, dom, strict=True)]
        joined = [old + new for old, new in zip(links, more, strict=True)]
        queue = [i for i, name in enumerate(names) if name in clue[1:3]]
        _settle(trial, joined, full, queue)
        misses += 1
        if trial != dom:
            dom, links, misses = trial, joined, 0
            clues.append(clue)
            if math.prod(d.bit_count() for d in dom) <= _open(len(names)):
                break
    return clues


def _draw(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]] | None:
    """Names, a hidden order and clues true of it: while a second order fits, a clue that the
    second order breaks is added. None when no such clue turns up (the caller draws again)."""
    n = _PEOPLE[difficulty - 1]
    names = sorted(rng.sample(_NAMES, n))
    hidden = names[:]
    rng.shuffle(hidden)
    truth = {name: i + 1 for i, name in enumerate(hidden)}
    clues = _narrowing_clues(names, truth, difficulty, rng)
    while True:
        others = [o for o in orders(names, clues) if list(o) != hidden]
        if not others:
            break
        other = {name: i + 1 for i, name in enumerate(others[0])}
        clue = _ruling_out(difficulty, rng, truth, other)
        if clue is None:
            return None
        clues.append(clue)
    rng.shuffle(clues)
    text = "\n".join(f"- {_describe(c)}" for c in clues)
    return {"names": names, "clues": clues}, [str(n), ", ".join(names), text]


def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """3-10 people; clues true of a hidden order, each ruling out an order that still fits,
    until one is left (checked by :func:`orders`).

    Levels step in the row length or the clue kinds (``_PEOPLE``, ``_TIER``): position and
    order clues only, then next-to clues, then exactly-g-between clues."""
    while True:
        drawn = _draw(difficulty, rng)
        if drawn is not None and clue_tier(drawn[0]["clues"]) == _TIER[difficulty - 1]:
            return drawn


def solve_propagation(inputs: dict[str, Any]) -> list[str]:
    """Position sets narrowed by propagation and split (see :func:`orders`)."""
    found = orders(inputs["names"], inputs["clues"], limit=1)
    if not found:
        raise ValueError("no arrangement")
    return list(found[0])


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


def _forward(
    left: dict[str, set[int]], who: str, at: int, pairs: list[list[Any]]
) -> dict[str, set[int]]:
    """The other people's positions once ``who`` stands at ``at``: that position taken, and
    each clue joining them to ``who`` applied."""
    rest = {s: c - {at} for s, c in left.items() if s != who}
    for c in pairs:
        if who == c[1] and c[2] in rest:
            rest[c[2]] = {q for q in rest[c[2]] if _clue_holds(at, q, c)}
        elif who == c[2] and c[1] in rest:
            rest[c[1]] = {q for q in rest[c[1]] if _clue_holds(q, at, c)}
    return rest


def solve_forward(inputs: dict[str, Any]) -> list[str]:
    """Forward checking: place the person with the fewest positions left; every other
    person loses that position and, for each clue joining them to the placed person, the
    positions the clue forbids; an empty set undoes the placement."""
    names: list[str] = inputs["names"]
    start = {name: set(range(1, len(names) + 1)) for name in names}
    pairs: list[list[Any]] = []
    for clue in inputs["clues"]:
        if clue[0] == "pos":
            start[clue[1]] &= {clue[2]}
        elif clue[0] == "notpos":
            start[clue[1]].discard(clue[2])
        else:
            pairs.append(clue)

    def place(left: dict[str, set[int]], placed: dict[str, int]) -> dict[str, int] | None:
        if not left:
            return placed
        who = min(left, key=lambda s: (len(left[s]), s))
        for at in sorted(left[who]):
            rest = _forward(left, who, at, pairs)
            found = place(rest, {**placed, who: at}) if all(rest.values()) else None
            if found is not None:
                return found
        return None

    found = place(start, {})
    if found is None:
        raise ValueError("no arrangement")
    return sorted(names, key=lambda s: found[s])


_TEXT_CLUES: tuple[tuple[str, str], ...] = (
    (r"(\w+) is in position (\d+)\.", "pos"),
    (r"(\w+) is not in position (\d+)\.", "notpos"),
    (r"(\w+) stands somewhere to the left of (\w+)\.", "left"),
    (r"(\w+) stands right next to (\w+)\.", "adj"),
    (r"(\w+) does not stand next to (\w+)\.", "notadj"),
    (r"Exactly (\d+) (?:person stands|people stand) between (\w+) and (\w+)\.", "gap"),
)


def _text_clues(question: str) -> list[list[Any]]:
    """The clue lines read back into the generator's form."""
    out: list[list[Any]] = []
    for line in between(question, "These clues hold:\n", "\nGive").split("\n"):
        for pattern, kind in _TEXT_CLUES:
            match = re.fullmatch(pattern, line.removeprefix("- "))
            if match is None:
                continue
            first, second, *third = match.groups()
            if kind == "gap":
                out.append(["gap", second, third[0], int(first)])
            elif kind in ("pos", "notpos"):
                out.append([kind, first, int(second)])
            else:
                out.append([kind, first, second])
            break
        else:
            raise ValueError(f"unknown clue {line!r}")
    return out


def text_row(question: str) -> list[str]:
    """Read the people and the clues; search by propagation. Exactly one order must fit."""
    names = between(question, "people, ", ", stand in").split(", ")
    clues = _text_clues(question)
    fits = orders(names, clues)
    if len(fits) != 1:
        raise Undetermined(f"{len(fits)} orders fit the clues")
    return list(fits[0])


FAMILIES = (
    Family(
        id="row_ordering",
        version="5",
        category="logical",
        title="Ordering in a row",
        template=(
            "[Input Slot 1] people, [Input Slot 2], stand in a single row, in positions "
            "numbered from 1 on the left. These clues hold:\n[Input Slot 3]\n"
            "Give the order of the people from left to right."
        ),
        generate=generate,
        validators=(solve_forward, solve_propagation),
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
