"""Causal: lamps wired to switches (odd / any / all rules); which lamps are lit after toggles."""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from veritask.logic._family import Family
from veritask.logic._hardness import SIZES
from veritask.logic._textonly import between, findall

_RULES = {
    "odd": "an odd number of them are on",
    "any": "at least one of them is on",
    "all": "all of them are on",
}


def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """``2 + (d+1)//2`` switches, ``SIZES[d - 1]`` lamps (6-20; 2^20 lit sets at level 10) and
    ``2 + 2d`` presses."""
    n_sw = 2 + (difficulty + 1) // 2
    n_lamps = SIZES[difficulty - 1]
    kinds = ("odd",) if difficulty <= 3 else ("odd", "any", "all")
    initial = [rng.random() < 0.5 for _ in range(n_sw)]
    lamps: list[list[Any]] = []
    for _ in range(n_lamps):
        wires = sorted(rng.sample(range(1, n_sw + 1), rng.randint(1, min(n_sw, 3))))
        lamps.append([rng.choice(kinds), wires])
    presses = [rng.randint(1, n_sw) for _ in range(2 + 2 * difficulty)]
    on = [i + 1 for i, s in enumerate(initial) if s]
    start = (
        "All switches start off."
        if not on
        else f"Switch {on[0]} starts on; the rest start off."
        if len(on) == 1
        else "Switches " + ", ".join(map(str, on)) + " start on; the rest start off."
    )
    lines = [
        f"Lamp {i + 1} is wired to switch{'es' if len(w) > 1 else ''} "
        f"{', '.join(map(str, w))} and is lit when {_RULES[k] if len(w) > 1 else 'it is on'}."
        for i, (k, w) in enumerate(lamps)
    ]
    inputs = {"initial": [int(s) for s in initial], "lamps": lamps, "presses": presses}
    return inputs, [start, " ".join(lines), ", ".join(map(str, presses))]


def solve_simulate(inputs: dict[str, Any]) -> Any:
    """Flip switch states press by press, then evaluate each lamp's rule."""
    state = [bool(s) for s in inputs["initial"]]
    for p in inputs["presses"]:
        state[p - 1] = not state[p - 1]
    lit = []
    for i, (kind, wires) in enumerate(inputs["lamps"]):
        values = [state[w - 1] for w in wires]
        ok = (
            sum(values) % 2 == 1 if kind == "odd" else any(values) if kind == "any" else all(values)
        )
        if ok:
            lit.append(i + 1)
    return lit or "none"


def solve_parity(inputs: dict[str, Any]) -> Any:
    """Press-count parity per switch; lamps by counting on-switches against thresholds."""
    presses = Counter(inputs["presses"])
    on = {
        s
        for s in range(1, len(inputs["initial"]) + 1)
        if (inputs["initial"][s - 1] + presses[s]) & 1
    }
    lit = [
        i + 1
        for i, (kind, wires) in enumerate(inputs["lamps"])
        if (
            len(on.intersection(wires)) & 1
            if kind == "odd"
            else len(on.intersection(wires)) >= (1 if kind == "any" else len(wires))
        )
    ]
    return lit if lit else "none"


_TEXT_RULES: dict[str, Callable[[int, int], bool]] = {
    "it is on": lambda on, _n: on == 1,
    "an odd number of them are on": lambda on, _n: on % 2 == 1,
    "at least one of them is on": lambda on, _n: on >= 1,
    "all of them are on": lambda on, n: on == n,
}


def text_lamps(question: str) -> Any:
    """Read which switches start on, each lamp's wiring and rule, and the presses; count
    presses per switch, then test each lamp."""
    start = between(question, "wired to them. ", " start")
    on = {int(x) for x in re.findall(r"\d+", start)} if start.startswith("Switch") else set()
    for press in between(question, "in this order: ", ". Which").split(", "):
        on ^= {int(press)}
    lit = []
    lamps = r"Lamp (\d+) is wired to switch(?:es)? ([\d, ]+) and is lit when ([\w ]+)\."
    for lamp, wires, rule in findall(lamps, question):
        switches = {int(w) for w in wires.split(", ")}
        if _TEXT_RULES[rule](len(switches & on), len(switches)):
            lit.append(int(lamp))
    return sorted(lit) or "none"


FAMILIES = (
    Family(
        id="switch_lamps",
        version="4",
        category="causal",
        title="Switches and lamps",
        template=(
            "A panel has switches numbered from 1 and lamps wired to them. [Input Slot 1] "
            "[Input Slot 2] Pressing a switch flips it between on and off. The switches are "
            "pressed in this order: [Input Slot 3]. Which lamps are lit at the end?"
        ),
        generate=generate,
        validators=(solve_simulate, solve_parity),
        answer_format=(
            "List the lit lamp numbers in increasing order, separated by commas, or answer "
            "none if no lamp is lit."
        ),
        size=lambda inputs: len(inputs["presses"]) + sum(len(w) for _, w in inputs["lamps"]),
        text_solver=text_lamps,
    ),
)
