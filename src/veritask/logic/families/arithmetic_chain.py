"""Symbolic: evaluate a chain of integer operations applied left to right."""

from __future__ import annotations

import random
from typing import Any

from veritask.logic._family import Family
from veritask.logic._hardness import STEPS
from veritask.logic._text import number
from veritask.logic._textonly import between, findall

_OPS = ("+", "-", "*")


def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """Start value and ``STEPS[d - 1]`` operations (30 at level 10) with operands growing with difficulty."""
    start = rng.randint(1, 9 + difficulty * 3)
    steps = [
        (rng.choice(_OPS), rng.randint(2, 5 + difficulty * 2)) for _ in range(STEPS[difficulty - 1])
    ]
    text = ", then ".join(
        f"{'add' if op == '+' else 'subtract' if op == '-' else 'multiply by'} {n}"
        for op, n in steps
    )
    return {"start": start, "steps": steps}, [str(start), text]


def solve_loop(inputs: dict[str, Any]) -> int:
    """Apply each operation in turn."""
    value = int(inputs["start"])
    for op, n in inputs["steps"]:
        value = value + n if op == "+" else value - n if op == "-" else value * n
    return value


def solve_fold(inputs: dict[str, Any]) -> int:
    """Fold with a table of functions (written independently of ``solve_loop``)."""
    from functools import reduce

    table = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}
    return reduce(
        lambda acc, step: table[step[0]](acc, step[1]), inputs["steps"], int(inputs["start"])
    )


def text_chain(question: str) -> int:
    """Read the start and the operations; apply them in order."""
    value = number(between(question, "Start with "))
    for word, n in findall(r"(add|subtract|multiply by) (\d+)", question):
        k = int(n)
        value = value + k if word == "add" else value - k if word == "subtract" else value * k
    return value


FAMILIES = (
    Family(
        id="arithmetic_chain",
        version="3",
        category="symbolic",
        title="Arithmetic chain",
        template="Start with [Input Slot 1]. Apply these operations in order: [Input Slot 2]. What number do you end with?",
        generate=generate,
        validators=(solve_loop, solve_fold),
        answer_format="Answer with the integer only.",
        size=lambda inputs: len(inputs["steps"]),
        text_solver=text_chain,
    ),
)
