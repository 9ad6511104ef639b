"""Hand-off tasks: users for whom the policy says to hand over come first when a task is aimed
at a hand-off rule (docs/design/0060-dual-control-and-escalation.md).

A task aimed at a rule of the escalation tool collides with it by asking for a hand-off the
rule refuses. For a user one of whose reasons holds, the Explorer then finds the reason that is
accepted, so the task ends in a hand-off with that reason (the certificate and the state show
it); for a user for whom none holds, the hand-off is declined. Without this order almost every
aimed task is a declined one, since few users of a state have a reason to be handed over.
"""

from __future__ import annotations

import random
from typing import Any

from veritask.env import Environment
from veritask.policy import DomainSpec, Rule, actor_table
from veritask.task import WitnessCall

DUE_FIRST = 0.5
"""Share of hand-off-aimed tasks tried first for the users a reason holds for."""


def _actor_column(spec: DomainSpec, table: str) -> str | None:
    actor = actor_table(spec)
    key = spec.table(actor).primary_key
    if not key:
        return None
    ref = f"{actor}.{key[0].name}"
    return next((c.name for c in spec.table(table).columns if c.references == ref), None)


def due_for_handoff(spec: DomainSpec, env: Environment, actor: Any) -> bool:
    """True when the escalation tool accepts a hand-off of ``actor`` for some reason in the
    environment's state (probed, then rolled back: the state is left as it was)."""
    esc = spec.escalation
    tool = env.tools.get(esc.tool) if esc is not None else None
    if esc is None or tool is None:
        return False
    column = _actor_column(spec, tool.table)
    if column is None:
        return False
    image = env.image()
    try:
        for reason in esc.reasons:
            if env.call(esc.tool, {column: actor, esc.reason: reason.id}).ok:
                return True
        return False
    finally:
        env.restore(image)


def escalation_order(
    spec: DomainSpec, env: Environment, actors: list[Any], aim: Rule | None, rng: random.Random
) -> list[Any]:
    """``actors`` with those due for a hand-off first, on about half of the tasks aimed at a
    rule of the escalation tool's table; ``actors`` unchanged otherwise.

    Args:
        spec: The domain.
        env: The environment at the scene's origin.
        actors: The cast in the order it would be tried.
        aim: The rule the task is aimed at.
        rng: The task's random stream (one draw, only for hand-off aims).
    """
    esc = spec.escalation
    if esc is None or aim is None or esc.tool not in env.tools:
        return actors
    if aim.table != env.tools[esc.tool].table or rng.random() >= DUE_FIRST:
        return actors
    due = [a for a in actors if due_for_handoff(spec, env, a)]
    return due + [a for a in actors if a not in due]


def handed_off(spec: DomainSpec, witness: list[WitnessCall]) -> bool:
    """True when ``witness`` holds an accepted call of the escalation tool: the conversation
    ends there (a customer handed over to a person does not go on asking the agent)."""
    esc = spec.escalation
    return esc is not None and any(c.ok and c.tool == esc.tool for c in witness)


def goes_on(spec: DomainSpec, witness: list[WitnessCall], rng: random.Random, chain: float) -> bool:
    """Whether an episode takes one more goal: never after a hand-off, else with probability
    ``chain`` (one draw from ``rng``, made only when the user was not handed over)."""
    return not handed_off(spec, witness) and rng.random() < chain
