"""Commonsense: the fewest coins that make an amount in an unusual coin system."""

from __future__ import annotations

import random
from typing import Any

from veritask.logic._family import Family
from veritask.logic._text import number
from veritask.logic._textonly import Undetermined, between


def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """A 1-cent coin plus ``2 + d`` other coins; the amount grows with difficulty.

    Only draws where paying largest-coin-first uses more coins than needed are kept, so the
    greedy habit never gives the answer; at level 10 the median amount can be paid in over
    10^6 different combinations of coins."""
    while True:
        others = rng.sample(range(2, 14 + 2 * difficulty), 2 + difficulty)
        coins = sorted([1, *others])
        amount = rng.randint(10 + 2 * difficulty, 60 + 30 * difficulty)
        inputs = {"coins": coins, "amount": amount}
        if greedy_count(inputs) > solve_dp(inputs):
            break
    text = ", ".join(str(c) for c in coins)
    return inputs, [text, str(amount)]


def greedy_count(inputs: dict[str, Any]) -> int:
    """How many coins paying the largest coin that fits, again and again, uses."""
    left, used = int(inputs["amount"]), 0
    for coin in sorted(inputs["coins"], reverse=True):
        used, left = used + left // coin, left % coin
    return used


def solve_dp(inputs: dict[str, Any]) -> int:
    """Unbounded-knapsack dynamic programme: coins in the outer loop, amounts inside."""
    amount = int(inputs["amount"])
    best = [0] + [amount + 1] * amount
    for c in inputs["coins"]:
        for value in range(c, amount + 1):
            cand = best[value - c] + 1
            if cand < best[value]:
                best[value] = cand
    return best[amount]


def solve_bfs(inputs: dict[str, Any]) -> int:
    """Level-by-level breadth-first search over remaining amounts, one coin per level."""
    coins = list(inputs["coins"])
    frontier = {int(inputs["amount"])}
    seen = set(frontier)
    used = 0
    while frontier:
        if 0 in frontier:
            return used
        frontier = {x - c for x in frontier for c in coins if x >= c} - seen
        seen |= frontier
        used += 1
    raise ValueError("amount cannot be made")


def text_coins(question: str) -> int:
    """Read the coin values and the amount; fewest coins by dynamic programming."""
    coins = [int(c) for c in between(question, "coins are worth ", " cents").split(", ")]
    amount = number(between(question, "add up to exactly "))
    best = [0] + [amount + 1] * amount
    for value in range(1, amount + 1):
        best[value] = 1 + min((best[value - c] for c in coins if c <= value), default=amount)
    if best[amount] > amount:
        raise Undetermined(f"{amount} cents cannot be made")
    return best[amount]


FAMILIES = (
    Family(
        id="fewest_coins",
        version="3",
        category="commonsense",
        title="Making change with fewest coins",
        template=(
            "A country's coins are worth [Input Slot 1] cents, and you have as many of each "
            "as you like. What is the smallest number of coins that add up to exactly "
            "[Input Slot 2] cents?"
        ),
        generate=generate,
        validators=(solve_dp, solve_bfs),
        answer_format="Answer with the integer only.",
        size=lambda inputs: len(inputs["coins"]),
        text_solver=text_coins,
    ),
)
