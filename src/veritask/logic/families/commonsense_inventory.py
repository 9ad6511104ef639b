"""Commonsense: a shop's stock of one item after a day of deliveries, orders (refused when the
stock is short), returns and damage."""

from __future__ import annotations

import itertools
import random
import re
from typing import Any

from veritask.logic._family import Family
from veritask.logic._hardness import STEPS
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
_OTHER_EVENTS = (1, 1, 2, 2, 3, 3, 4, 4, 5, 5)
"""Per level: transactions on the other items (distractors), beside ``STEPS[d-1]`` on the asked
one."""


def _count(n: int, item: str) -> str:
    return count_noun(n, _SINGULAR[item], item)


def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """``2 + d//3`` items; ``STEPS[d-1]`` transactions on the asked item (30 at level 10) and
    ``_OTHER_EVENTS[d-1]`` on the others, in one shuffled day; deliveries in boxes from level 5.

    An order larger than the stock at that moment is refused, so every transaction's effect
    depends on the running balance; a draw is kept only when at least ``1 + steps // 10`` of
    the asked item's orders are refused (adding up the day's numbers gives a wrong count)."""
    steps = STEPS[difficulty - 1]
    while True:
        items = rng.sample(_ITEMS, 2 + difficulty // 3)
        query = rng.choice(items)
        start = {item: rng.randint(3, 12 + 2 * difficulty) for item in items}
        others = [i for i in items if i != query]
        plan = [query] * steps + [rng.choice(others) for _ in range(_OTHER_EVENTS[difficulty - 1])]
        rng.shuffle(plan)
        box = rng.choice((4, 6, 10, 12)) if difficulty >= 5 else 1
        events = _draw_day(plan, dict(start), difficulty, box, rng)
        if _refused(start, events, query) >= 1 + steps // 10:
            break
    opening = ", ".join(_count(n, item) for item, n in start.items())
    lines = [_event_text(kind, item, n, size) for kind, item, n, size in events]
    inputs = {"start": [[i, n] for i, n in start.items()], "events": events, "query": query}
    return inputs, [opening, " ".join(lines), query]


def _draw_day(
    plan: list[str], stock: dict[str, int], difficulty: int, box: int, rng: random.Random
) -> list[list[Any]]:
    """One transaction per planned item, drawn against the running stock: orders sometimes
    exceed it (and are refused), returns never exceed what was sold, damage never exceeds
    the stock."""
    sold = dict.fromkeys(stock, 0)
    events: list[list[Any]] = []
    for item in plan:
        kind = rng.choice(("delivery", "order", "order", "return", "damaged"))
        if (kind == "return" and not sold[item]) or (kind == "damaged" and not stock[item]):
            kind = "delivery"
        size = box if kind == "delivery" and box > 1 and rng.random() < 0.5 else 1
        if kind == "delivery":
            n = rng.randint(1, 4) if size > 1 else rng.randint(1, 6 + difficulty)
        elif kind == "order":
            n = rng.randint(1, stock[item] + 3 + difficulty // 2)
        else:
            n = rng.randint(1, min(sold[item] if kind == "return" else stock[item], 4 + difficulty))
        events.append([kind, item, n, size])
        filled = kind != "order" or n <= stock[item]
        sign = -1 if kind in ("order", "damaged") else 1
        stock[item] += sign * n * size if filled else 0
        sold[item] += n if kind == "order" and filled else -n if kind == "return" else 0
    return events


def _refused(start: dict[str, int], events: list[list[Any]], item: str) -> int:
    """How many orders for ``item`` the day refuses."""
    stock, refused = start[item], 0
    for kind, what, n, size in events:
        if what != item:
            continue
        if kind == "order" and n > stock:
            refused += 1
        elif kind in ("order", "damaged"):
            stock -= n
        else:
            stock += n * size
    return refused


def _event_text(kind: str, item: str, n: int, size: int) -> str:
    if kind == "delivery":
        qty = f"{count_noun(n, 'box')} of {size} {item}" if size > 1 else _count(n, item)
        return f"A delivery brings {qty}."
    if kind == "order":
        return f"A customer orders {_count(n, item)}."
    if kind == "return":
        return f"A customer returns {_count(n, item)} bought earlier that day."
    return f"{_count(n, item)} {be(n)} found damaged and thrown away."


def solve_simulate(inputs: dict[str, Any]) -> int:
    """Replay every transaction on a stock table, refusing an order the stock cannot fill."""
    stock = {item: n for item, n in inputs["start"]}
    for kind, item, n, size in inputs["events"]:
        if kind in ("delivery", "return"):
            stock[item] += n * size
        elif kind == "damaged" or stock[item] >= n:
            stock[item] -= n
            if stock[item] < 0:
                raise ValueError("negative stock")
    return int(stock[inputs["query"]])


def solve_ledger(inputs: dict[str, Any]) -> int:
    """The asked item's signed changes folded from its opening count; a change that would take
    the balance below zero (a refused order) leaves it unchanged."""
    sign = {"delivery": 1, "return": 1, "order": -1, "damaged": -1}
    query = inputs["query"]
    opening = next(n for item, n in inputs["start"] if item == query)
    deltas = [sign[e[0]] * e[2] * e[3] for e in inputs["events"] if e[1] == query]
    balances = itertools.accumulate(deltas, lambda b, d: b if b + d < 0 else b + d, initial=opening)
    return int(list(balances)[-1])


_PLURAL = {**{v: k for k, v in _SINGULAR.items()}, **{k: k for k in _SINGULAR}}
_TEXT_EVENT = re.compile(
    r"A delivery brings (?P<boxes>\d+) box(?:es)? of (?P<size>\d+) (?P<bitem>\w+)\."
    r"|A delivery brings (?P<in>\d+) (?P<initem>\w+)\."
    r"|A customer returns (?P<back>\d+) (?P<backitem>\w+) bought"
    r"|A customer orders (?P<order>\d+) (?P<orderitem>\w+)\."
    r"|(?P<lost>\d+) (?P<lostitem>\w+) (?:is|are) found damaged"
)


def _text_change(found: re.Match[str]) -> tuple[str, int, bool]:
    """(item, signed count, is an order) of one transaction read from the text."""
    g = found.groupdict()
    if g["boxes"] is not None:
        return _PLURAL[g["bitem"]], int(g["boxes"]) * int(g["size"]), False
    if g["in"] is not None:
        return _PLURAL[g["initem"]], int(g["in"]), False
    if g["back"] is not None:
        return _PLURAL[g["backitem"]], int(g["back"]), False
    if g["order"] is not None:
        return _PLURAL[g["orderitem"]], -int(g["order"]), True
    return _PLURAL[g["lostitem"]], -int(g["lost"]), False


def text_stock(question: str) -> int:
    """Read the opening stock, then the asked item's transactions in the order told; refuse
    an order larger than the stock at that moment."""
    query = between(question, "How many ", " are in stock")
    opening = {
        _PLURAL[noun]: int(n)
        for n, noun in findall(r"(\d+) (\w+)", between(question, "opens with ", " in stock."))
    }
    if query not in opening:
        raise Undetermined(f"the opening stock of {query} is not given")
    total = opening[query]
    for found in _TEXT_EVENT.finditer(between(question, "During the day, in this order: ")):
        item, change, order = _text_change(found)
        if item == query and not (order and total + change < 0):
            total += change
    return total


FAMILIES = (
    Family(
        id="shop_inventory",
        version="3",
        category="commonsense",
        title="Inventory after transactions",
        template=(
            "A shop opens with [Input Slot 1] in stock. A customer's order is filled only when "
            "the shop has that many in stock at that moment; otherwise it is refused and "
            "nothing is sold. During the day, in this order: [Input Slot 2] How many "
            "[Input Slot 3] are in stock at closing time?"
        ),
        generate=generate,
        validators=(solve_simulate, solve_ledger),
        answer_format="Answer with the integer only.",
        size=lambda inputs: len(inputs["events"]) + len(inputs["start"]),
        text_solver=text_stock,
    ),
)
