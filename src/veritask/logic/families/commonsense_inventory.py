"""Commonsense: a shop's stock of one item after a day of deliveries, sales and returns."""

from __future__ import annotations

import random
import re
from typing import Any

from veritask.logic._family import Family
from veritask.logic._text import be, count_noun
from veritask.logic._textonly import Undetermined, between, findall

_ITEMS = ("apples", "batteries", "candles", "notebooks", "pens", "soaps", "towels", "mugs")
_SINGULAR = {
    "apples": "apple",
    "batteries": "battery",
    "candles": "candle",
    "notebooks": "notebook",
    "pens": "pen",
    "soaps": "soap",
    "towels": "towel",
    "mugs": "mug",
}
_KINDS = ("delivery", "sale", "return", "damaged")


def _count(n: int, item: str) -> str:
    return count_noun(n, _SINGULAR[item], item)


def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """``2 + d//3`` items and ``3 + 2d`` feasible transactions; some counted in boxes."""
    items = rng.sample(_ITEMS, 2 + difficulty // 3)
    stock = {item: rng.randint(5, 20 + 5 * difficulty) for item in items}
    start = dict(stock)
    sold = dict.fromkeys(items, 0)
    box = rng.choice((4, 6, 10, 12)) if difficulty >= 5 else 1
    events: list[list[Any]] = []
    for _ in range(3 + 2 * difficulty):
        item = rng.choice(items)
        kind = rng.choice(_KINDS)
        if kind == "delivery":
            boxes = difficulty >= 5 and rng.random() < 0.5
            n = rng.randint(1, 4) if boxes else rng.randint(1, 10 + 3 * difficulty)
            events.append([kind, item, n, box if boxes else 1])
            stock[item] += n * (box if boxes else 1)
            continue
        limit = sold[item] if kind == "return" else stock[item]
        if limit == 0:
            kind, limit = "delivery", 5 + difficulty
        n = rng.randint(1, min(limit, 5 + 2 * difficulty))
        events.append([kind, item, n, 1])
        if kind == "sale":
            sold[item] += n
        if kind in ("sale", "damaged"):
            stock[item] -= n
        elif kind == "return":
            sold[item] -= n
            stock[item] += n
        else:
            stock[item] += n
    opening = ", ".join(_count(n, item) for item, n in start.items())
    lines = [_event_text(kind, item, n, size) for kind, item, n, size in events]
    query = rng.choice(items)
    inputs = {"start": [[i, n] for i, n in start.items()], "events": events, "query": query}
    return inputs, [opening, " ".join(lines), query]


def _event_text(kind: str, item: str, n: int, size: int) -> str:
    if kind == "delivery":
        qty = f"{count_noun(n, 'box')} of {size} {item}" if size > 1 else _count(n, item)
        return f"A delivery brings {qty}."
    if kind == "sale":
        return f"Customers buy {_count(n, item)}."
    if kind == "return":
        return f"A customer returns {_count(n, item)} bought earlier that day."
    return f"{_count(n, item)} {be(n)} found damaged and thrown away."


def solve_simulate(inputs: dict[str, Any]) -> int:
    """Replay every transaction on a stock table."""
    stock = {item: n for item, n in inputs["start"]}
    for kind, item, n, size in inputs["events"]:
        if kind in ("delivery", "return"):
            stock[item] += n * size
        else:
            stock[item] -= n * size
            if stock[item] < 0:
                raise ValueError("negative stock")
    return int(stock[inputs["query"]])


def solve_ledger(inputs: dict[str, Any]) -> int:
    """Opening count plus signed deltas of the queried item only."""
    sign = {"delivery": 1, "return": 1, "sale": -1, "damaged": -1}
    query = inputs["query"]
    opening = next(n for item, n in inputs["start"] if item == query)
    return int(opening + sum(sign[e[0]] * e[2] * e[3] for e in inputs["events"] if e[1] == query))


_PLURAL = {**{v: k for k, v in _SINGULAR.items()}, **{k: k for k in _SINGULAR}}
_TEXT_EVENTS = (
    (r"A delivery brings (\d+) box(?:es)? of (\d+) (\w+)\.", 1),
    (r"A delivery brings (\d+) (\w+)\.", 1),
    (r"A customer returns (\d+) (\w+) bought", 1),
    (r"Customers buy (\d+) (\w+)\.", -1),
    (r"(\d+) (\w+) (?:is|are) found damaged", -1),
)


def text_stock(question: str) -> int:
    """Read the opening stock and each transaction of the asked item; add them up."""
    query = between(question, "How many ", " are in stock")
    opening = {
        _PLURAL[noun]: int(n)
        for n, noun in findall(r"(\d+) (\w+)", between(question, "opens with ", " in stock."))
    }
    if query not in opening:
        raise Undetermined(f"the opening stock of {query} is not given")
    total = opening[query]
    for pattern, sign in _TEXT_EVENTS:
        for found in re.findall(pattern, question):
            count = int(found[0]) * (int(found[1]) if len(found) == 3 else 1)
            total += sign * count if _PLURAL[found[-1]] == query else 0
    return total


FAMILIES = (
    Family(
        id="shop_inventory",
        version="2",
        category="commonsense",
        title="Inventory after transactions",
        template=(
            "A shop opens with [Input Slot 1] in stock. During the day: [Input Slot 2] "
            "How many [Input Slot 3] are in stock at closing time?"
        ),
        generate=generate,
        validators=(solve_simulate, solve_ledger),
        answer_format="Answer with the integer only.",
        size=lambda inputs: len(inputs["events"]) + len(inputs["start"]),
        text_solver=text_stock,
    ),
)
