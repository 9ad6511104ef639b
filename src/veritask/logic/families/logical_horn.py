"""Logical: which statements follow from facts and if-then rules (Horn-clause entailment)."""

from __future__ import annotations

import random
import string
from typing import Any

from veritask.logic._family import Family
from veritask.logic._hardness import SIZES
from veritask.logic._textonly import between, findall


def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """``SIZES[d - 1] + 3 + d // 3`` propositions (26 at level 10), 2-3 facts and two rules
    fewer than propositions, with 1-3 premises."""
    n = SIZES[difficulty - 1] + 3 + difficulty // 3  # about SIZES[d - 1] end up in some rule
    props = rng.sample(string.ascii_uppercase, n)
    n_facts = 2 + rng.randint(0, 1)
    facts = sorted(props[:n_facts])
    rules: list[list[Any]] = []
    reachable = list(facts)
    for _ in range(n - 5):
        conclusion = rng.choice(props[n_facts:])
        width = rng.choice((1, 1, 2, 2, 3)) if difficulty > 3 else rng.choice((1, 1, 2))
        # most rules build on what is already derivable, so chains form; the rest are noise
        pool = reachable if rng.random() < 0.55 else props
        pool = [p for p in pool if p != conclusion]
        premises = sorted(rng.sample(pool, min(width, len(pool))))
        if set(premises) <= set(reachable) and conclusion not in reachable:
            reachable.append(conclusion)
        rules.append([premises, conclusion])
    rng.shuffle(rules)
    facts_text = ", ".join(facts)
    rules_text = "\n".join(f"If {' and '.join(p)} then {c}." for p, c in rules)
    return {"facts": facts, "rules": rules}, [facts_text, rules_text]


def solve_fixpoint(inputs: dict[str, Any]) -> list[str] | str:
    """Fire rules repeatedly until nothing new is derived."""
    known = set(inputs["facts"])
    changed = True
    while changed:
        changed = False
        for premises, conclusion in inputs["rules"]:
            if conclusion not in known and all(p in known for p in premises):
                known.add(conclusion)
                changed = True
    derived = sorted(known - set(inputs["facts"]))
    return derived or "none"


def solve_counters(inputs: dict[str, Any]) -> list[str] | str:
    """Linear-time propagation: count unmet premises per rule, queue newly true statements."""
    rules = inputs["rules"]
    missing = [len(set(p)) for p, _ in rules]
    watchers: dict[str, list[int]] = {}
    for i, (premises, _) in enumerate(rules):
        for p in set(premises):
            watchers.setdefault(p, []).append(i)
    facts = set(inputs["facts"])
    true = set(facts)
    queue = list(facts)
    while queue:
        p = queue.pop()
        for i in watchers.get(p, ()):
            missing[i] -= 1
            if missing[i] == 0 and rules[i][1] not in true:
                true.add(rules[i][1])
                queue.append(rules[i][1])
    return sorted(true - facts) or "none"


def text_entailed(question: str) -> list[str] | str:
    """Read the facts and the rules; fire rules until nothing new follows."""
    facts = set(between(question, "known to be true: ", ".\n").split(", "))
    rules = [
        (set(premises.split(" and ")), conclusion)
        for premises, conclusion in findall(r"If ([A-Z](?: and [A-Z])*) then ([A-Z])\.", question)
    ]
    known = set(facts)
    grew = True
    while grew:
        new = {c for p, c in rules if p <= known} - known
        known |= new
        grew = bool(new)
    return sorted(known - facts) or "none"


FAMILIES = (
    Family(
        id="horn_entailment",
        version="4",
        category="logical",
        title="Rule entailment",
        template=(
            "The following statements are known to be true: [Input Slot 1].\n"
            "These rules always hold:\n[Input Slot 2]\n"
            "Nothing else is known. Which other statements can be concluded to be true?"
        ),
        generate=generate,
        validators=(solve_fixpoint, solve_counters),
        answer_format=(
            "Answer with the letters in alphabetical order, separated by commas, or 'none' if "
            "nothing else can be concluded."
        ),
        size=lambda inputs: len(inputs["rules"]) + sum(len(p) for p, _ in inputs["rules"]),
        text_solver=text_entailed,
    ),
)
