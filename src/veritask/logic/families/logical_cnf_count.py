"""Logical: count the truth assignments satisfying a formula in conjunctive normal form."""

from __future__ import annotations

import random
from typing import Any

from veritask.logic._family import Family
from veritask.logic._textonly import between, findall


def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """n variables (3-12, one count per level) and n - 1 to n + 1 clauses (as signed ints).

    Clause widths step too: levels 1-2 mix unit clauses in, levels 3-6 use 2-3 literals, levels
    7-10 add clauses of 4 literals."""
    n = 2 + difficulty
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


def solve_bitsliced(inputs: dict[str, Any]) -> int:
    """Bit-parallel truth tables: bit a of each integer is the value under assignment a."""
    n = int(inputs["n"])
    rows = 1 << n
    full = (1 << rows) - 1
    tables = []
    for v in range(n):
        # bits a with bit v of a set: 2^v zeros then 2^v ones, repeated over the rows
        period = 2 << v
        block = ((1 << (1 << v)) - 1) << (1 << v)
        tables.append(block * (full // ((1 << period) - 1)))
    formula = full
    for clause in inputs["clauses"]:
        c = 0
        for lit in clause:
            t = tables[abs(lit) - 1]
            c |= t if lit > 0 else full ^ t
        formula &= c
    return formula.bit_count()


def solve_dpll(inputs: dict[str, Any]) -> int:
    """Model counting by splitting on variables and simplifying clauses (DPLL style)."""
    n = int(inputs["n"])

    def count(clauses: list[frozenset[int]], free: int) -> int:
        if not clauses:
            return 1 << free
        if any(not c for c in clauses):
            return 0
        var = abs(next(iter(clauses[0])))
        total = 0
        for lit in (var, -var):
            reduced = [c - {-lit} for c in clauses if lit not in c]
            total += count(reduced, free - 1)
        return total

    start = [frozenset(c) for c in inputs["clauses"]]
    used = {abs(lit) for c in start for lit in c}
    # variables never mentioned double the count; the recursion handles the mentioned ones
    return count(start, len(used)) << (n - len(used))


def text_models(question: str) -> int:
    """Read the variables and the clauses; try every assignment."""
    names = between(question, "Boolean variables ", ", each true").split(", ")
    clauses = [
        [(lit.startswith("NOT "), names.index(lit.removeprefix("NOT "))) for lit in c.split(" OR ")]
        for c in findall(r"\(([^)]*)\)", between(question, "formula true?\n", "\n"))
    ]
    count = 0
    for mask in range(1 << len(names)):
        if all(any(bool(mask >> v & 1) != neg for neg, v in c) for c in clauses):
            count += 1
    return count


FAMILIES = (
    Family(
        id="cnf_model_count",
        version="3",
        category="logical",
        title="CNF model count",
        template=(
            "Consider the [Input Slot 1] Boolean variables [Input Slot 2], each true or false. "
            "How many of the possible truth assignments make the following formula true?\n"
            "[Input Slot 3]"
        ),
        generate=generate,
        validators=(solve_bitsliced, solve_dpll),
        answer_format="Answer with the integer only.",
        size=lambda inputs: int(inputs["n"]) + len(inputs["clauses"]),
        text_solver=text_models,
    ),
)
