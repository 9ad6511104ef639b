"""Whether an agent can make a write at all: the values it must work out are computable.

A required column the agent decides (a fee, a weight) is filled from the policy's formula for
it. When every formula for the column gives NULL on the call (it names a product that is not
on file, say), no agent can work the value out, so the write cannot be made, and a witness
that makes it (to be refused and revised) describes a conversation no agent can have.
"""

from __future__ import annotations

from typing import Any

from veritask.env import Environment
from veritask.policy import Transaction
from veritask.synth._analysis import DomainModel


def unworkable(
    model: DomainModel, env: Environment, tx: Transaction, args: dict[str, Any], decided: set[str]
) -> str | None:
    """The first required, agent-decided column of an insert whose every applicable formula
    gives NULL on ``args`` (None when the agent can fill them all)."""
    tool = model.tool(tx.tool)
    if tool.kind != "insert":
        return None  # an update keeps what it leaves out
    table = model.spec.table(tool.table)
    for column in decided:
        if column not in table.column_names or not table.column(column).required_on_insert:
            continue
        formulas = [
            r
            for r in model.repairs(tx)
            if r.repair is not None
            and r.repair.column == column
            and (r.when is None or env.evaluate(r.when, tx.tool, args))
        ]
        values = [env.evaluate(r.repair.value, tx.tool, args) for r in formulas if r.repair]
        if formulas and all(v is None for v in values):
            return column
    return None


__all__ = ["unworkable"]
