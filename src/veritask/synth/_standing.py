"""Rules about the user's own standing: met only by a task that is refused as a whole.

A rule that refuses every request of a user whose own account is inactive (a closed customer
account, an employee of a suspended company) leaves that user nothing to ask for instead and no
other request that could pass: the only task that meets it is a refusal. Refusals are rare by
design (at most one in every third unit, ``REFUSAL_EVERY``), and the unit aims its tasks at the
rules in rotation, so such a rule is met only when the rotation happens to point at it while a
refusal is allowed; a 300-task run leaves most of them *not reached*. The unit therefore aims
every other refusal it may make at these rules first (in a rotation of their own), so that a
run reaches them, and the rest of the refusals stay spread over the other rules.
"""

from __future__ import annotations

import re

from veritask.policy import DomainSpec, Rule, Table


def standing_tables(spec: DomainSpec) -> list[Table]:
    """The actor table and the tables its foreign keys reference (the user's company, say):
    the records that say whether the user may ask for anything at all."""
    if spec.actor is None or not spec.has_table(spec.actor):
        return []
    actor = spec.table(spec.actor)
    up = [c.references.split(".")[0] for c in actor.columns if c.references]
    return [actor, *(spec.table(t) for t in dict.fromkeys(up) if spec.has_table(t))]


def standing_rules(spec: DomainSpec) -> list[Rule]:
    """The prerequisite rules whose condition reads the lifecycle column of a standing table
    (``standing_tables``), in spec order."""
    tables = [t for t in standing_tables(spec) if t.lifecycle is not None]
    found: list[Rule] = []
    for rule in spec.rules:
        text = rule.condition or ""
        if rule.category != "prerequisite":
            continue
        if any(
            _mentions(text, t.name) and _mentions(text, t.lifecycle.column)
            for t in tables
            if t.lifecycle
        ):
            found.append(rule)
    return found


def _mentions(text: str, word: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])", text) is not None


__all__ = ["standing_rules", "standing_tables"]
