"""Logical: count the truth assignments satisfying a formula in conjunctive normal form."""

from __future__ import annotations

import random
from typing import Any

from veritask.logic._family import Family
from veritask.logic._textonly import between, findall


def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """n variables (3-7) and 2 + difficulty clauses of 2-3 literals (as signed ints)."""
    n = 3 + (difficulty - 1) // 2
    m = difficulty + rng.randint(1, 3)
    clauses: list[list[int]] = []
    for _ in range(m):
        width = rng.choice((1, 2, 2, 3, 3)) if difficulty < 3 else rng.choice((2, 2, 3))
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
        t = 0
        for a in range(rows):
            if a >> v & 1:
                t |= 1 << a
        tables.append(t)
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
        version="2",
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
