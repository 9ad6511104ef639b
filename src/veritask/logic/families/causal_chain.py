"""Causal: forward-chain cause-and-effect rules from a trigger and list what happens."""

from __future__ import annotations

import random
from typing import Any

from veritask.logic._family import Family
from veritask.logic._hardness import SIZES
from veritask.logic._text import be, join_and, split_and
from veritask.logic._textonly import between, findall

_EVENTS = [
    "alarm",
    "beacon",
    "blackout",
    "chime",
    "drought",
    "echo",
    "flood",
    "frost",
    "glare",
    "hail",
    "leak",
    "meltdown",
    "outage",
    "panic",
    "quake",
    "rust",
    "smoke",
    "spark",
    "static",
    "surge",
    "thaw",
    "tremor",
]


def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """``SIZES[d - 1]`` events (20, so 2^20 candidate answers, at level 10) and two rules fewer;
    joint-cause rules appear from difficulty 3."""
    n = SIZES[difficulty - 1]
    events = rng.sample(_EVENTS, n)
    rules: list[list[list[str]]] = []
    for _ in range(n - 2):
        n_cause = 2 if difficulty >= 3 and rng.random() < 0.3 + 0.04 * difficulty else 1
        picked = rng.sample(events, n_cause + rng.randint(1, 2))
        causes, effects = sorted(picked[:n_cause]), sorted(picked[n_cause:])
        rules.append([causes, effects])
    starters = sorted({c for causes, _ in rules if len(causes) == 1 for c in causes})
    pool = starters if len(starters) >= 2 else events
    triggers = sorted(rng.sample(pool, 1 if difficulty < 6 else 2))
    lines = []
    for causes, effects in rules:
        verb = "causes" if len(causes) == 1 else "together cause"
        lines.append(f"{join_and(causes).capitalize()} {verb} {join_and(effects)}.")
    inputs = {"events": events, "rules": rules, "triggers": triggers}
    return inputs, [" ".join(lines), f"{join_and(triggers)} {be(len(triggers))}"]


def solve_fixpoint(inputs: dict[str, Any]) -> list[str]:
    """Apply every rule repeatedly until no new event happens."""
    happened = set(inputs["triggers"])
    changed = True
    while changed:
        changed = False
        for causes, effects in inputs["rules"]:
            if all(c in happened for c in causes) and not set(effects) <= happened:
                happened |= set(effects)
                changed = True
    return sorted(happened)


def solve_worklist(inputs: dict[str, Any]) -> list[str]:
    """Counter-based propagation: a rule fires when its count of missing causes hits zero."""
    missing = [len(set(causes)) for causes, _ in inputs["rules"]]
    watchers: dict[str, list[int]] = {}
    for i, (causes, _) in enumerate(inputs["rules"]):
        for c in set(causes):
            watchers.setdefault(c, []).append(i)
    happened: set[str] = set()
    queue = list(inputs["triggers"])
    while queue:
        event = queue.pop()
        if event in happened:
            continue
        happened.add(event)
        for i in watchers.get(event, ()):
            missing[i] -= 1
            if missing[i] == 0:
                queue.extend(inputs["rules"][i][1])
    return sorted(happened)


def text_closure(question: str) -> list[str]:
    """Read the rules and the triggered events; fire rules until nothing new happens."""
    stated = between(question, "all of them): ", " Only ")
    rules = [
        (set(split_and(causes.lower())), set(split_and(effects)))
        for causes, effects in findall(r"([\w, ]+?) (?:together cause|causes) ([\w, ]+?)\.", stated)
    ]
    triggered = findall(r"Only ([\w, ]+?) (?:is|are) triggered from outside", question)[0]
    happened = set(split_and(triggered))
    grew = True
    while grew:
        before = len(happened)
        for causes, effects in rules:
            if causes <= happened:
                happened |= effects
        grew = len(happened) > before
    return sorted(happened)


FAMILIES = (
    Family(
        id="causal_chain_events",
        version="3",
        category="causal",
        title="Causal chain closure",
        template=(
            "In a system, these cause-and-effect rules always hold (an event caused by several "
            "events together needs all of them): [Input Slot 1] Only [Input Slot 2] "
            "triggered from outside. Which events happen, including the triggered ones?"
        ),
        generate=generate,
        validators=(solve_fixpoint, solve_worklist),
        answer_format="List the events in alphabetical order, separated by commas.",
        size=lambda inputs: sum(len(c) + len(e) for c, e in inputs["rules"]),
        text_solver=text_closure,
    ),
)
