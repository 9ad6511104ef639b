"""Logical: count the truth assignments satisfying a formula in conjunctive normal form.

Level 10 has 20 variables (2^20 assignments), so nothing here enumerates assignments: one
validator and the text solver count by DPLL (unit propagation, independent components), the
other by eliminating variables one at a time (sum-product over clause tables)."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from veritask.logic._family import Family
from veritask.logic._textonly import between, findall

_VARIABLES = (3, 4, 5, 6, 7, 8, 10, 12, 15, 20)
"""Per level: how many variables (2^20 = 1,048,576 assignments at level 10)."""


def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """n variables (``_VARIABLES``, one count per level) and n - 1 to n + 1 clauses (as
    signed ints).

    Clause widths step too: levels 1-2 mix unit clauses in, levels 3-6 use 2-3 literals, levels
    7-10 add clauses of 4 literals."""
    n = _VARIABLES[difficulty - 1]
    m = n - 2 + rng.randint(1, 3)
    widths = (1, 2, 2, 3, 3) if difficulty < 3 else (2, 2, 3) if difficulty < 7 else (2, 3, 3, 4)
    clauses: list[list[int]] = []
    for _ in range(m):
        width = rng.choice(widths)
        chosen = rng.sample(range(1, n + 1), width)
        clauses.append(sorted((v if rng.random() < 0.5 else -v for v in chosen), key=abs))
    names = ", ".join(f"x{i}" for i in range(1, n + 1))
    text = " AND ".join(
        "(" + " OR ".join(f"x{lit}" if lit > 0 else f"NOT x{-lit}" for lit in c) + ")"
        for c in clauses
    )
    return {"n": n, "clauses": clauses}, [str(n), names, text]


Clauses = list[frozenset[int]]


def _assign(clauses: Clauses, lit: int) -> Clauses:
    """The clauses once ``lit`` is true: satisfied clauses dropped, ``-lit`` removed."""
    gone = frozenset((-lit,))
    return [c - gone if -lit in c else c for c in clauses if lit not in c]


def _components(clauses: Clauses) -> list[Clauses]:
    """The clauses grouped into components that share no variable: each clause joins every
    group it shares a variable with (groups stay disjoint, so one pass suffices)."""
    groups: list[tuple[set[int], Clauses]] = []
    for c in clauses:
        own = {abs(lit) for lit in c}
        joined: Clauses = [c]
        apart = []
        for seen, members in groups:
            if seen.isdisjoint(own):
                apart.append((seen, members))
            else:
                own |= seen
                joined += members
        groups = [*apart, (own, joined)]
    return [members for _, members in groups]


def count_models(
    clauses: Clauses, variables: frozenset[int], cache: dict[frozenset[frozenset[int]], int]
) -> int:
    """Models of ``clauses`` over ``variables`` (a superset of the variables they mention):
    unit propagation, then independent components counted apart (each once: ``cache``) and
    multiplied."""
    while True:
        if any(not c for c in clauses):
            return 0
        unit = next((c for c in clauses if len(c) == 1), None)
        if unit is None:
            break
        (lit,) = unit
        clauses = _assign(clauses, lit)
        variables = variables - {abs(lit)}
    mentioned = frozenset(abs(lit) for c in clauses for lit in c)
    total = 1 << len(variables - mentioned)
    for part in _components(clauses):
        key = frozenset(part)
        if key not in cache:
            cache[key] = _split(part, cache)
        total *= cache[key]
        if not total:
            return 0
    return total


def _split(part: Clauses, cache: dict[frozenset[frozenset[int]], int]) -> int:
    """Models of one component over the variables it mentions: split on its most frequent
    variable."""
    seen = Counter(abs(lit) for c in part for lit in c)
    var = seen.most_common(1)[0][0]
    rest = frozenset(seen) - {var}
    return count_models(_assign(part, var), rest, cache) + count_models(
        _assign(part, -var), rest, cache
    )


def solve_dpll(inputs: dict[str, Any]) -> int:
    """Model counting by DPLL with unit propagation and independent components."""
    n = int(inputs["n"])
    clauses = [frozenset(c) for c in inputs["clauses"]]
    return count_models(clauses, frozenset(range(1, n + 1)), {})


def _product_sum(
    factors: list[tuple[tuple[int, ...], list[int]]], var: int
) -> tuple[tuple[int, ...], list[int]]:
    """Multiply factors (scope, table indexed by the scope's bits) and sum ``var`` out.

    The product is tabled over the union of the scopes with ``var`` as the top bit; each
    factor's index into its own table is built for every row by doubling, one variable at a
    time."""
    scope = tuple(sorted({v for s, _ in factors for v in s} - {var}))
    product = [1] * (2 << len(scope))
    for own, table in factors:
        index = [0]
        for v in (*scope, var):
            step = 1 << own.index(v) if v in own else 0
            index += [i + step for i in index]
        product = [p * table[i] for p, i in zip(product, index, strict=True)]
    half = len(product) // 2
    return scope, [a + b for a, b in zip(product[:half], product[half:], strict=True)]


def _fewest_neighbours(factors: list[tuple[tuple[int, ...], list[int]]], pending: set[int]) -> int:
    """The pending variable that shares tables with the fewest variables (lowest on ties)."""
    near: dict[int, set[int]] = {}
    for scope, _ in factors:
        for v in scope:
            near.setdefault(v, set()).update(scope)
    return min(sorted(pending), key=lambda v: len(near.get(v, ())))


def _clause_table(clause: list[int]) -> tuple[tuple[int, ...], list[int]] | None:
    """A clause as a 0/1 table over its variables (bit i of a row: the i-th variable true):
    1 except on the one row that makes every literal false; None for a tautology."""
    lits = set(clause)
    if any(-lit in lits for lit in lits):
        return None
    scope = tuple(sorted(abs(lit) for lit in lits))
    table = [1] * (1 << len(scope))
    table[sum(1 << scope.index(abs(lit)) for lit in lits if lit < 0)] = 0
    return scope, table


def solve_elimination(inputs: dict[str, Any]) -> int:
    """Variable elimination: each clause a 0/1 table over its variables; eliminate the
    variable in the fewest-variable neighbourhood first, multiplying the tables that mention
    it and summing it out. Unmentioned variables double the count."""
    n = int(inputs["n"])
    factors = [t for t in map(_clause_table, inputs["clauses"]) if t is not None]
    pending = {v for scope, _ in factors for v in scope}
    scalar = 1 << (n - len(pending))
    while pending:
        var = _fewest_neighbours(factors, pending)
        pending.discard(var)
        touching = [f for f in factors if var in f[0]]
        factors = [f for f in factors if var not in f[0]]
        factors.append(_product_sum(touching, var))
    for _, table in factors:
        scalar *= table[0]
    return scalar


def text_models(question: str) -> int:
    """Read the variables and the clauses; count the models by DPLL (no enumeration)."""
    names = between(question, "Boolean variables ", ", each true").split(", ")
    clauses = [
        frozenset(
            -(names.index(lit.removeprefix("NOT ")) + 1)
            if lit.startswith("NOT ")
            else names.index(lit) + 1
            for lit in c.split(" OR ")
        )
        for c in findall(r"\(([^)]*)\)", between(question, "formula true?\n", "\n"))
    ]
    return count_models(clauses, frozenset(range(1, len(names) + 1)), {})


FAMILIES = (
    Family(
        id="cnf_model_count",
        version="4",
        category="logical",
        title="CNF model count",
        template=(
            "Consider the [Input Slot 1] Boolean variables [Input Slot 2], each true or false. "
            "How many of the possible truth assignments make the following formula true?\n"
            "[Input Slot 3]"
        ),
        generate=generate,
        validators=(solve_elimination, solve_dpll),
        answer_format="Answer with the integer only.",
        size=lambda inputs: int(inputs["n"]) + len(inputs["clauses"]),
        text_solver=text_models,
    ),
)
