"""Which table's rows are the users: a fact of the spec, used by synthesis and certification."""

from __future__ import annotations

from veritask.policy._spec import DomainSpec


def actor_table(spec: DomainSpec) -> str:
    """The table whose rows are the users tasks are written for.

    ``spec.actor`` when set; otherwise the ``entity`` table that the most NOT NULL foreign keys
    of ``transaction`` tables point at (ties: the one declared first), else the first ``entity``
    table, else the first table.
    """
    if spec.actor is not None:
        return spec.actor
    order = [t.name for t in spec.tables]
    counts: dict[str, int] = {}
    for table in spec.tables:
        if table.tier != "transaction":
            continue
        for col in table.columns:
            if col.references and col.not_null:
                parent = col.references.split(".")[0]
                if spec.has_table(parent) and spec.table(parent).tier == "entity":
                    counts[parent] = counts.get(parent, 0) + 1
    if counts:
        return max(counts, key=lambda t: (counts[t], -order.index(t)))
    return next((t.name for t in spec.tables if t.tier == "entity"), order[0])
