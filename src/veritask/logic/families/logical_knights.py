"""Logical: knights (always truthful) and knaves (always lying); find the set of knights."""

from __future__ import annotations

import functools
import random
from typing import Any

from veritask.logic._family import Family
from veritask.logic._textonly import Undetermined, between, findall

_NAMES = ("Alice", "Bob", "Cara", "Dan", "Eve", "Finn", "Gus")
_POOL = (*_NAMES, "Hana", "Ivan", "Jude", "Kim", "Lena", "Milo", "Nina")


def _truth(stmt: list[Any], mask: int) -> bool:
    """Truth of one statement when bit i of ``mask`` says person i is a knight."""
    kind = stmt[0]
    if kind == "is":
        return bool(mask >> stmt[1] & 1) is bool(stmt[2])
    if kind == "and":
        return bool(mask >> stmt[1] & 1) and bool(mask >> stmt[2] & 1)
    if kind == "or":
        return bool(mask >> stmt[1] & 1) or bool(mask >> stmt[2] & 1)
    if kind == "same":
        return bool((mask >> stmt[1] & 1) == (mask >> stmt[2] & 1))
    return bool(int(mask).bit_count() == stmt[1])  # "count"


_PEOPLE = (3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
"""Per level: how many inhabitants speak (2^12 = 4,096 role assignments at level 10)."""


@functools.cache
def _tables(k: int) -> tuple[list[int], list[int], int]:
    """Bit-sliced tables over the 2**k assignments: who is a knight, and how many are.

    Person i is a knight in the assignments whose bit i is set: runs of 2^i zeros then 2^i
    ones, built as one block times a repunit. The count tables grow one person at a time."""
    rows = 1 << k
    full = (1 << rows) - 1
    knight = [
        (((1 << (1 << i)) - 1) << (1 << i)) * (full // ((1 << (2 << i)) - 1)) for i in range(k)
    ]
    count = [1]  # zero people: the one empty assignment has no knight
    for i in range(k):
        half = 1 << i
        count = [
            (count[n] if n < len(count) else 0) | ((count[n - 1] << half) if n else 0)
            for n in range(i + 2)
        ]
    return knight, count, full


def _consistent_table(statements: list[list[Any]], k: int) -> int:
    """Bit m of the result is set when assignment m is consistent with every statement."""
    knight, count, full = _tables(k)
    table = full
    for i, stmt in enumerate(statements):
        kind = stmt[0]
        if kind == "is":
            said = knight[stmt[1]] if stmt[2] else full ^ knight[stmt[1]]
        elif kind == "and":
            said = knight[stmt[1]] & knight[stmt[2]]
        elif kind == "or":
            said = knight[stmt[1]] | knight[stmt[2]]
        elif kind == "same":
            said = full ^ knight[stmt[1]] ^ knight[stmt[2]]
        else:
            said = count[stmt[1]]
        table &= full ^ said ^ knight[i]
    return table


def _describe(stmt: list[Any], names: list[str]) -> str:
    kind = stmt[0]
    if kind == "is":
        return f"{names[stmt[1]]} is a {'knight' if stmt[2] else 'knave'}."
    if kind == "and":
        return f"{names[stmt[1]]} and {names[stmt[2]]} are both knights."
    if kind == "or":
        return f"At least one of {names[stmt[1]]} and {names[stmt[2]]} is a knight."
    if kind == "same":
        return f"{names[stmt[1]]} and {names[stmt[2]]} are of the same kind."
    n = stmt[1]
    return f"Exactly {n} of us {'is a knight' if n == 1 else 'are knights'}."


def _random_statement(rng: random.Random, speaker: int, k: int, compound: bool) -> list[Any]:
    others = [j for j in range(k) if j != speaker]
    if not compound:
        return ["is", rng.choice(others), rng.randint(0, 1)]
    a, b = rng.sample(others, 2)
    kind = rng.choice(("and", "or", "same", "same", "count"))
    if kind == "count":
        return ["count", rng.randint(0, k)]
    return [kind, a, b]


def _compound_count(difficulty: int, k: int) -> int:
    """How many people make a compound statement: one more at each level."""
    return min(k, difficulty)


def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """k people (3-12, one more at each level), each making one statement; unique solution.

    Each level also gives one more person a compound statement (and, or, same kind, count)."""
    k = _PEOPLE[difficulty - 1]
    while True:
        mask = rng.getrandbits(k)
        compound = set(rng.sample(range(k), _compound_count(difficulty, k)))
        statements: list[list[Any]] = []
        for i in range(k):
            want = bool(mask >> i & 1)
            while True:
                stmt = _random_statement(rng, i, k, i in compound)
                if _truth(stmt, mask) == want:
                    break
            statements.append(stmt)
        if _consistent_table(statements, k).bit_count() == 1:
            break
    names = sorted(rng.sample(_POOL, k))
    people = ", ".join(names)
    lines = "\n".join(f'{names[i]} says: "{_describe(s, names)}"' for i, s in enumerate(statements))
    return {"k": k, "names": names, "statements": statements}, [str(k), people, lines]


def solve_masks(inputs: dict[str, Any]) -> list[str] | str:
    """Brute force over bitmasks of who is a knight (a table of consistent assignments)."""
    k = int(inputs["k"])
    table = _consistent_table(inputs["statements"], k)
    if table == 0:
        raise ValueError("no consistent assignment")
    mask = (table & -table).bit_length() - 1
    return [inputs["names"][i] for i in range(k) if mask >> i & 1] or "none"


def _refs(stmt: list[Any], k: int) -> set[int]:
    """The people a statement is about."""
    if stmt[0] == "count":
        return set(range(k))
    if stmt[0] == "is":
        return {stmt[1]}
    return {stmt[1], stmt[2]}


def _holds(stmt: list[Any], kinds: dict[int, bool]) -> bool:
    """The truth of a statement once every person it is about has a kind."""
    kind = stmt[0]
    if kind == "is":
        return kinds[stmt[1]] is (stmt[2] == 1)
    if kind == "and":
        return kinds[stmt[1]] and kinds[stmt[2]]
    if kind == "or":
        return kinds[stmt[1]] or kinds[stmt[2]]
    if kind == "same":
        return kinds[stmt[1]] is kinds[stmt[2]]
    return bool(sum(kinds.values()) == stmt[1])


def solve_backtrack(inputs: dict[str, Any]) -> list[str] | str:
    """Backtracking over people with a dict of kinds, checking statements once decidable."""
    k = int(inputs["k"])
    statements = inputs["statements"]
    # due[n]: the statements decidable once person n has a kind (the last person each needs)
    due: list[list[int]] = [[] for _ in range(k)]
    for i, s in enumerate(statements):
        due[max(_refs(s, k) | {i})].append(i)
    solutions: list[dict[int, bool]] = []

    def search(kinds: dict[int, bool]) -> None:
        n = len(kinds)
        if n == k:
            solutions.append(dict(kinds))
            return
        for value in (False, True):
            kinds[n] = value
            ok = all(_holds(statements[i], kinds) == kinds[i] for i in due[n])
            if ok:
                search(kinds)
            del kinds[n]

    search({})
    chosen = solutions[0]
    knights = sorted(name for i, name in enumerate(inputs["names"]) if chosen[i])
    return knights or "none"


def _claim(text: str, knight: dict[str, bool]) -> bool:
    """The truth of one quoted statement under an assignment of kinds."""
    words = text.rstrip(".").split()
    if text.startswith("Exactly"):
        return sum(knight.values()) == int(words[1])
    if text.startswith("At least one of"):
        return knight[words[4]] or knight[words[6]]
    if text.endswith("are both knights."):
        return knight[words[0]] and knight[words[2]]
    if text.endswith("are of the same kind."):
        return knight[words[0]] == knight[words[2]]
    if len(words) == 4 and words[1:3] == ["is", "a"]:
        return knight[words[0]] == (words[3] == "knight")
    raise ValueError(f"unknown statement {text!r}")


def text_knights(question: str) -> list[str] | str:
    """Read the people and what each says; try every assignment of kinds. Exactly one must
    be consistent (a knight's statement true, a knave's false)."""
    people = between(question, "inhabitants: ", ". They say").split(", ")
    said = findall(r'(\w+) says: "([^"]*)"', question)
    found = []
    for mask in range(1 << len(people)):
        knight = {p: bool(mask >> i & 1) for i, p in enumerate(people)}
        if all(_claim(text, knight) == knight[who] for who, text in said):
            found.append(sorted(p for p in people if knight[p]))
    if len(found) != 1:
        raise Undetermined(f"{len(found)} assignments of kinds fit the statements")
    return found[0] or "none"


FAMILIES = (
    Family(
        id="knights_and_knaves",
        version="4",
        category="logical",
        title="Knights and knaves",
        template=(
            "On an island every inhabitant is either a knight, who always tells the truth, or a "
            "knave, who always lies. You meet [Input Slot 1] inhabitants: [Input Slot 2]. "
            "They say:\n[Input Slot 3]\nWhich of them are knights?"
        ),
        generate=generate,
        validators=(solve_masks, solve_backtrack),
        answer_format=(
            "Answer with the names of the knights in alphabetical order, separated by commas, "
            "or 'none' if there are no knights."
        ),
        size=lambda inputs: int(inputs["k"]) * 2 + sum(s[0] != "is" for s in inputs["statements"]),
        text_solver=text_knights,
    ),
)
