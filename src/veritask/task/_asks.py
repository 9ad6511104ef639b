"""Whether a task's requests speak of the domain they are checked against.

Grounding asks, of each write, which request of the task it answers; a request that names a
write tool the domain does not have, a table or column that is not in the spec, or a refusal
by a rule the spec does not define answers nothing and proves nothing. Such a package can only
come from an edit (or from another spec), and ``check`` reports it as an integrity failure
naming the request and the field, whatever its replay gives.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from veritask.policy import DomainSpec, ToolSpec
from veritask.task._package import Ask, RowRef, TaskDescription


def _ref_problems(spec: DomainSpec, ref: RowRef, where: str) -> Iterator[str]:
    names = {t.name: t for t in spec.tables}
    table = names.get(ref.table)
    if table is None:
        yield f"{where}: table {ref.table!r} is not in the spec"
        return
    for col, value in ref.match.items():
        if col not in table.column_names:
            yield f"{where}: {ref.table} has no column {col!r}"
        elif isinstance(value, RowRef):
            fk = table.column(col).references
            if fk is None or fk.split(".")[0] != value.table:
                yield f"{where}.{col}: {ref.table}.{col} does not reference {value.table!r}"
            yield from _ref_problems(spec, value, f"{where}.{col}")


def _ask_problems(
    spec: DomainSpec, tools: Mapping[str, ToolSpec], ask: Ask, where: str
) -> Iterator[str]:
    tool = tools.get(ask.tool)
    if tool is None or not tool.writes:
        yield f"{where}.tool: {ask.tool!r} is not a write tool of the domain"
        return
    table = spec.table(tool.table)
    for col in ask.values:
        if col not in tool.params and col not in table.column_names:
            yield f"{where}.values: {ask.tool} has no argument {col!r}"
    if ask.target is not None:
        if ask.target.table != tool.table:
            yield f"{where}.target: names a {ask.target.table!r} record, {ask.tool} writes {tool.table!r}"
        yield from _ref_problems(spec, ask.target, f"{where}.target")
    for col, ref in ask.refs.items():
        fk = table.column(col).references if col in table.column_names else None
        if fk is None or fk.split(".")[0] != ref.table:
            yield f"{where}.refs.{col}: {tool.table}.{col} does not reference {ref.table!r}"
        yield from _ref_problems(spec, ref, f"{where}.refs.{col}")


def ask_problems(
    task: TaskDescription, spec: DomainSpec, tools: Mapping[str, ToolSpec]
) -> list[str]:
    """Every request of ``task`` (each sub-goal's ask, each fallback's) that names a tool,
    table, column or rule the domain does not have, as ``"<where>: <why>"``."""
    rules = {r.id for r in spec.rules}
    found: list[str] = []
    for i, sub in enumerate(task.sub_goals):
        at = f"sub_goals[{i}]"
        if sub.ask is not None:
            found += _ask_problems(spec, tools, sub.ask, f"{at}.ask")
        for j, fb in enumerate(sub.fallbacks):
            if fb.rule not in rules:
                found.append(f"{at}.fallbacks[{j}].rule: {fb.rule!r} is not a rule of the spec")
            for k, ask in enumerate(fb.first):
                found += _ask_problems(spec, tools, ask, f"{at}.fallbacks[{j}].first[{k}]")
            if fb.then is not None:
                found += _ask_problems(spec, tools, fb.then, f"{at}.fallbacks[{j}].then")
    return found
