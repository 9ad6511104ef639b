"""Whether a valid spec can generate tasks at all, and where it cannot.

A spec may validate (every field well formed, the SQL compiles) and still give the synthesizer
nothing to do: no tool writes, nobody to write tasks for, or a procedure whose agent-decided
value the policy does not let an agent work out (no rule tests it, or a rule tests it but
nothing computes it and there are no values to choose from), so grounding refuses every package
that uses it. ``validate`` and ``generate`` name each such place with its field and line.
"""

from __future__ import annotations

from veritask.policy import DomainSpec, Rule, Table
from veritask.synth._procedural_gen import procedural_generable

Loc = tuple[str | int, ...]


def generation_problems(spec: DomainSpec) -> list[tuple[Loc, str]]:
    """Why ``spec`` cannot generate tasks, each with the location of the field at fault.

    Returns:
        ``[(loc, reason)]``; empty when the synthesizer has something to work on.
    """
    found: list[tuple[Loc, str]] = []
    if not any(t.writable for t in spec.tables):
        found.append(
            (
                ("tables",),
                "no table is read-write, so no tool writes and no task can change a state: "
                "give the tables tasks act on 'access: read-write'",
            )
        )
    if spec.actor is None and not any(t.tier == "entity" for t in spec.tables):
        found.append(
            (
                ("tables",),
                "no table has tier 'entity', so there is nobody to write tasks for: mark the "
                "table of people or accounts 'tier: entity' (or name it with 'actor')",
            )
        )
    if not spec.atomic_tools and spec.procedures and not procedural_generable(spec):
        found.append(
            (
                ("atomic_tools",),
                "the domain's write tools are procedures ('atomic_tools: false'): the explorer "
                "drives only the atomic insert_/update_ tools, so it has no write to make; "
                "generating through procedural tools is not supported yet beyond the "
                "requests the procedural generator knows (τ²-bench retail and airline)",
            )
        )
    found += _undetermined(spec)
    return found


def _undetermined(spec: DomainSpec) -> list[tuple[Loc, str]]:
    """Agent-decided parameters that no rule determines."""
    found: list[tuple[Loc, str]] = []
    for i, tx in enumerate(spec.transactions):
        table = _table_of(spec, tx.tool)
        if table is None:
            continue
        rules = [r for r in spec.rules if r.table == table.name]
        for j, col in enumerate(tx.agent_decides):
            if col not in table.column_names:
                continue
            why = _undecidable(table, col, rules)
            if why is not None:
                found.append((("transactions", i, "agent_decides", j), why))
    return found


def _undecidable(table: Table, col: str, rules: list[Rule]) -> str | None:
    """Why no agent could work out ``col`` from the policy (None when one can)."""
    if _determined(table, col, rules):
        return None
    if not any(r.tests_value(col) for r in rules):
        return (
            f"no rule on {table.name} tests {col}, so the policy never decides it and "
            "no agent could work it out: add a rule that rejects the wrong values (a "
            "calculation rule with a repair, say), or let the user state it"
        )
    return (
        f"a rule on {table.name} tests {col}, but none computes it (no 'repair') and it is "
        "neither an enum nor a reference, so an agent has no values to choose from: give the "
        "rule a 'repair' with the value's formula, or let the user state it"
    )


def _determined(table: Table, col: str, rules: list[Rule]) -> bool:
    """True when an agent can work ``col`` out from the policy: a rule computes it (a
    ``repair``), or a rule tests its value and the values to choose from are known (an enum's,
    or the keys of the table it references), or the column allows one value only."""
    column = table.column(col)
    if column.enum is not None and len(column.enum) == 1:
        return True
    if any(r.repair is not None and r.repair.column == col for r in rules):
        return True
    choices = column.enum is not None or column.references is not None
    return choices and any(r.tests_value(col) for r in rules)


def _table_of(spec: DomainSpec, tool: str) -> Table | None:
    """The table a write tool (``insert_<t>`` / ``update_<t>``) writes."""
    for prefix in ("insert_", "update_"):
        if tool.startswith(prefix) and spec.has_table(tool.removeprefix(prefix)):
            return spec.table(tool.removeprefix(prefix))
    return None
