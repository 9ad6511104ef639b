"""Logical: knights (always truthful) and knaves (always lying); find the set of knights.

Level 10 has 20 inhabitants (2^20 role assignments), so nothing here tries every assignment:
the generator, one validator and the text solver search with constraint propagation (each
statement a small table over the people it involves, count statements bounded by how many
knights are already fixed and how many people are open), counting solutions up to two; the
other validator runs DPLL with unit propagation on a clause encoding of the statements and
checks the count statements on each model it finds."""

from __future__ import annotations

import functools
import itertools
import random
import re
from collections.abc import Iterator, Mapping
from typing import Any

from veritask.logic._family import Family
from veritask.logic._textonly import Undetermined, between, findall

_POOL = (
    "Alice", "Bob", "Cara", "Dan", "Eve", "Finn", "Gus", "Hana", "Ivan", "Jude", "Kim", "Lena",
    "Milo", "Nina", "Omar", "Pia", "Quin", "Rosa", "Saul", "Tara", "Uma", "Vic", "Wes", "Yara",
)  # fmt: skip

_PEOPLE = (3, 4, 5, 6, 8, 10, 12, 14, 17, 20)
"""Per level: how many inhabitants speak (2^20 = 1,048,576 role assignments at level 10)."""


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


# --- propagation search (generator, validator, text solver) ------------------------------------

Table = tuple[int, tuple[int, ...]]


@functools.lru_cache(maxsize=8192)
def _table(i: int, stmt: tuple[Any, ...]) -> Table:
    """Speaker ``i``'s non-count statement as (scope, allowed patterns): the people it involves
    (speaker included) as a bit mask, and every assignment of them, as a mask of the knights,
    that is consistent with it."""
    refs = (stmt[1],) if stmt[0] == "is" else (stmt[1], stmt[2])
    people = tuple(dict.fromkeys((i, *refs)))
    allowed = []
    for bits in range(1 << len(people)):
        mask = sum((bits >> j & 1) << v for j, v in enumerate(people))
        if _truth(list(stmt), mask) == bool(mask >> i & 1):
            allowed.append(mask)
    return sum(1 << v for v in people), tuple(allowed)


def _compile(statements: list[list[Any]]) -> tuple[list[Table], list[tuple[int, int]]]:
    """The non-count statements as tables (:func:`_table`); each count statement as
    (speaker, count)."""
    tables = [_table(i, tuple(s)) for i, s in enumerate(statements) if s[0] != "count"]
    counts = [(i, int(s[1])) for i, s in enumerate(statements) if s[0] == "count"]
    return tables, counts


def _narrow(table: Table, known: int, value: int) -> tuple[int, int] | None:
    """Fix what one statement's table forces given the fixed people (None: a conflict)."""
    scope, allowed = table
    fixed = known & scope
    both, either = scope, 0
    fits = False
    for t in allowed:
        if (t ^ value) & fixed == 0:
            fits = True
            both &= t
            either |= t
    if not fits:
        return None
    open_ = scope & ~known
    return known | (open_ & (both | ~either)), value | (open_ & both)


def _bound(i: int, n: int, known: int, value: int, full: int) -> tuple[int, int] | None:
    """What "exactly n of us are knights", said by ``i``, forces (None: a conflict)."""
    ones = value.bit_count()
    free = (full & ~known).bit_count()
    possible = ones <= n <= ones + free
    if not known >> i & 1:
        return (known | 1 << i, value) if not possible else (known, value)
    if not value >> i & 1:
        return None if free == 0 and ones == n else (known, value)
    if not possible:
        return None
    if ones == n:
        return full, value
    if ones + free == n:
        return full, value | (full & ~known)
    return known, value


def _propagate(
    tables: list[Table],
    counts: list[tuple[int, int]],
    state: tuple[int, int],
    full: int,
    changed: int,
) -> tuple[int, int] | None:
    """Apply the statements about newly fixed people (``changed``) and every count statement
    until nothing more is forced (None: a conflict)."""
    known, value = state
    while changed:
        before = known
        now: tuple[int, int] | None = known, value
        for table in tables:
            if now and table[0] & changed:
                now = _narrow(table, *now)
        for i, n in counts:
            now = _bound(i, n, *now, full) if now else None
        if now is None:
            return None
        known, value = now
        changed = known & ~before
    return known, value


def solutions(statements: list[list[Any]], k: int, limit: int = 2) -> list[int]:
    """Up to ``limit`` consistent assignments (bit i set: person i is a knight), found by
    propagation and branching on the first open person."""
    tables, counts = _compile(statements)
    full = (1 << k) - 1
    found: list[int] = []

    def search(known: int, value: int, changed: int) -> None:
        state = _propagate(tables, counts, (known, value), full, changed)
        if state is None:
            return
        known, value = state
        open_ = full & ~known
        if not open_:
            found.append(value & full)
            return
        bit = open_ & -open_
        for v in (0, bit):
            if len(found) < limit:
                search(known | bit, value | v, bit)

    search(0, 0, -1)
    return found


def solve_propagation(inputs: dict[str, Any]) -> list[str] | str:
    """Propagation and branching (see :func:`solutions`); the first assignment found."""
    k = int(inputs["k"])
    found = solutions(inputs["statements"], k, limit=1)
    if not found:
        raise ValueError("no consistent assignment")
    return [inputs["names"][i] for i in range(k) if found[0] >> i & 1] or "none"


# --- DPLL on clauses (the other validator) -----------------------------------------------------


def _clauses(i: int, stmt: list[Any]) -> list[list[int]]:
    """Speaker ``i`` is a knight iff the statement holds, as clauses over people 1..k."""
    x = i + 1
    if stmt[0] == "is":
        lit = stmt[1] + 1 if stmt[2] else -(stmt[1] + 1)
        return [[-x, lit], [x, -lit]]
    a, b = stmt[1] + 1, stmt[2] + 1
    if stmt[0] == "and":
        return [[-x, a], [-x, b], [x, -a, -b]]
    if stmt[0] == "or":
        return [[-x, a, b], [x, -a], [x, -b]]
    return [[-x, -a, b], [-x, a, -b], [x, a, b], [x, -a, -b]]  # "same"


def _models(clauses: list[list[int]], true: frozenset[int]) -> Iterator[frozenset[int]]:
    """Every model of ``clauses`` extending the true literals ``true`` (as its set of true
    literals): unit propagation (a clause left with one open literal makes it true at once),
    then a split on the first literal of a shortest clause."""
    lits = set(true)
    grew = True
    while grew:
        grew = False
        left = []
        for c in clauses:
            if not lits.isdisjoint(c):
                continue
            open_lits = [lit for lit in c if -lit not in lits]
            if not open_lits:
                return
            if len(open_lits) == 1:
                lits.add(open_lits[0])
                grew = True
            else:
                left.append(open_lits)
        clauses = left
    if not clauses:
        yield frozenset(lits)
        return
    lit = min(clauses, key=len)[0]
    for pick in (lit, -lit):
        yield from _models(clauses, frozenset((*lits, pick)))


def solve_clauses(inputs: dict[str, Any]) -> list[str] | str:
    """DPLL over a clause encoding of every statement but the counts; each model, with its
    unmentioned people tried both ways, is kept when the count statements agree with it."""
    k = int(inputs["k"])
    statements = inputs["statements"]
    clauses = [c for i, s in enumerate(statements) if s[0] != "count" for c in _clauses(i, s)]
    counting = [(i + 1, s[1]) for i, s in enumerate(statements) if s[0] == "count"]
    for model in _models(clauses, frozenset()):
        rest = [p for p in range(1, k + 1) if p not in model and -p not in model]
        for values in itertools.product((False, True), repeat=len(rest)):
            full = {abs(lit): lit > 0 for lit in model} | dict(zip(rest, values, strict=True))
            knights = sum(full[p] for p in range(1, k + 1))
            if all((knights == n) is full[x] for x, n in counting):
                return [inputs["names"][p - 1] for p in range(1, k + 1) if full[p]] or "none"
    raise ValueError("no consistent assignment")


# --- generation --------------------------------------------------------------------------------


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
    a = rng.randrange(k - 1)
    a += a >= speaker  # anyone but the speaker
    if not compound:
        return ["is", a, rng.randint(0, 1)]
    kind = rng.choice(("and", "or", "same", "same", "count"))
    if kind == "count":
        return ["count", rng.randint(0, k)]
    b = rng.randrange(k - 2)
    b += b >= min(a, speaker)
    b += b >= max(a, speaker)  # anyone but the speaker and a
    return [kind, a, b]


def _compound_count(difficulty: int, k: int) -> int:
    """How many people make a compound statement: one more at each level."""
    return min(k, difficulty)


def _statement_for(
    rng: random.Random, speaker: int, k: int, compound: bool, keep: int, drop: int | None
) -> list[Any] | None:
    """A statement the speaker can make under the hidden roles ``keep`` that the roles
    ``drop`` (if given) cannot, made about a person the two disagree on when it names
    anyone: ``None`` after 30 tries."""
    moved = [] if drop is None else [j for j in range(k) if (keep ^ drop) >> j & 1]
    for _ in range(30):
        stmt = _random_statement(rng, speaker, k, compound)
        about = rng.choice(moved) if moved else speaker
        named = stmt[1:2] if stmt[0] == "is" else stmt[1:3] if stmt[0] != "count" else [about]
        if about != speaker and about not in named:
            stmt[1] = about
        if _truth(stmt, keep) != bool(keep >> speaker & 1):
            continue
        if drop is None or _truth(stmt, drop) != bool(drop >> speaker & 1):
            return stmt
    return None


def _draw(difficulty: int, rng: random.Random) -> tuple[int, list[list[Any]]] | None:
    """Hidden roles and one statement each, repaired until they admit only the hidden roles:
    while a second assignment fits, one speaker's statement is redrawn to rule it out."""
    k = _PEOPLE[difficulty - 1]
    mask = rng.getrandbits(k)
    compound = set(rng.sample(range(k), _compound_count(difficulty, k)))
    statements: list[list[Any]] = []
    for i in range(k):
        stmt = _statement_for(rng, i, k, i in compound, mask, None)
        if stmt is None:
            return None
        statements.append(stmt)
    for _ in range(4 * k):
        other = [s for s in solutions(statements, k) if s != mask]
        if not other:
            return mask, statements
        for i in rng.sample(range(k), k):
            stmt = _statement_for(rng, i, k, i in compound, mask, other[0])
            if stmt is not None:
                statements[i] = stmt
                break
    return None


def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """k people (``_PEOPLE``, 3-20), each making one statement; exactly one assignment of
    roles fits (checked by :func:`solutions`).

    Each level also gives one more person a compound statement (and, or, same kind, count)."""
    while True:
        drawn = _draw(difficulty, rng)
        if drawn is not None:
            break
    statements = drawn[1]
    k = len(statements)
    names = sorted(rng.sample(_POOL, k))
    people = ", ".join(names)
    lines = "\n".join(f'{names[i]} says: "{_describe(s, names)}"' for i, s in enumerate(statements))
    return {"k": k, "names": names, "statements": statements}, [str(k), people, lines]


# --- text only ---------------------------------------------------------------------------------

_TEXT = (
    (r"Exactly (\d+) of us (?:is a knight|are knights)\.", "count"),
    (r"At least one of (\w+) and (\w+) is a knight\.", "or"),
    (r"(\w+) and (\w+) are both knights\.", "and"),
    (r"(\w+) and (\w+) are of the same kind\.", "same"),
    (r"(\w+) is a (knight|knave)\.", "is"),
)


def _parse(text: str, index: Mapping[str, int]) -> list[Any]:
    """One quoted statement back in the generator's form."""
    for pattern, kind in _TEXT:
        match = re.fullmatch(pattern, text)
        if match is None:
            continue
        first, second = match.groups() if kind != "count" else (match.group(1), None)
        if kind == "count":
            return ["count", int(first)]
        if kind == "is":
            return ["is", index[first], int(second == "knight")]
        return [kind, index[first], index[str(second)]]
    raise ValueError(f"unknown statement {text!r}")


def text_knights(question: str) -> list[str] | str:
    """Read the people and what each says; search by propagation. Exactly one assignment of
    kinds must be consistent (a knight's statement true, a knave's false)."""
    people = between(question, "inhabitants: ", ". They say").split(", ")
    index = {p: i for i, p in enumerate(people)}
    said = dict(findall(r'(\w+) says: "([^"]*)"', question))
    statements = [_parse(said[p], index) for p in people]
    found = solutions(statements, len(people))
    if len(found) != 1:
        raise Undetermined(f"{len(found)} assignments of kinds fit the statements")
    return sorted(p for i, p in enumerate(people) if found[0] >> i & 1) or "none"


FAMILIES = (
    Family(
        id="knights_and_knaves",
        version="5",
        category="logical",
        title="Knights and knaves",
        template=(
            "On an island every inhabitant is either a knight, who always tells the truth, or a "
            "knave, who always lies. You meet [Input Slot 1] inhabitants: [Input Slot 2]. "
            "They say:\n[Input Slot 3]\nWhich of them are knights?"
        ),
        generate=generate,
        validators=(solve_clauses, solve_propagation),
        answer_format=(
            "Answer with the names of the knights in alphabetical order, separated by commas, "
            "or 'none' if there are no knights."
        ),
        size=lambda inputs: int(inputs["k"]) * 2 + sum(s[0] != "is" for s in inputs["statements"]),
        text_solver=text_knights,
    ),
)
