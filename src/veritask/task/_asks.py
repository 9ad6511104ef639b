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


class AskChecker:
    """The names a domain's requests may use, indexed once per domain."""

    def __init__(self, spec: DomainSpec, tools: Mapping[str, ToolSpec]) -> None:
        self.links: dict[str, dict[str, str | None]] = {
            t.name: {
                c.name: c.references.split(".")[0] if c.references else None for c in t.columns
            }
            for t in spec.tables
        }
        """Per table, each column and the table it references (None: not a foreign key)."""
        self.writes = {name: t for name, t in tools.items() if t.writes}
        self.rules = frozenset(r.id for r in spec.rules)

    def problems(self, task: TaskDescription) -> list[str]:
        """Every request of ``task`` (each sub-goal's ask, each fallback's) that names a tool,
        table, column or rule the domain does not have, as ``"<where>: <why>"``."""
        found: list[str] = []
        for i, sub in enumerate(task.sub_goals):
            at = f"sub_goals[{i}]"
            if sub.ask is not None:
                found += self._ask(sub.ask, f"{at}.ask")
            for j, fb in enumerate(sub.fallbacks):
                if fb.rule not in self.rules:
                    found.append(f"{at}.fallbacks[{j}].rule: {fb.rule!r} is not a rule of the spec")
                for k, ask in enumerate(fb.first):
                    found += self._ask(ask, f"{at}.fallbacks[{j}].first[{k}]")
                if fb.then is not None:
                    found += self._ask(fb.then, f"{at}.fallbacks[{j}].then")
        return found

    def _ask(self, ask: Ask, where: str) -> Iterator[str]:
        tool = self.writes.get(ask.tool)
        if tool is None:
            yield f"{where}.tool: {ask.tool!r} is not a write tool of the domain"
            return
        links = self.links.get(tool.table, {})  # a procedure writes no one table
        for col in ask.values:
            if col not in tool.params and col not in links:
                yield f"{where}.values: {ask.tool} has no argument {col!r}"
        if ask.target is not None:
            if ask.target.table != tool.table:
                yield (
                    f"{where}.target: names a {ask.target.table!r} record, "
                    f"{ask.tool} writes {tool.table!r}"
                )
            yield from self._ref(ask.target, f"{where}.target")
        for col, ref in ask.refs.items():
            if links.get(col) != ref.table:
                yield f"{where}.refs.{col}: {tool.table}.{col} does not reference {ref.table!r}"
            yield from self._ref(ref, f"{where}.refs.{col}")

    def _ref(self, ref: RowRef, where: str) -> Iterator[str]:
        links = self.links.get(ref.table)
        if links is None:
            yield f"{where}: table {ref.table!r} is not in the spec"
            return
        for col, value in ref.match.items():
            if col not in links:
                yield f"{where}: {ref.table} has no column {col!r}"
            elif isinstance(value, RowRef):
                if links[col] != value.table:
                    yield f"{where}.{col}: {ref.table}.{col} does not reference {value.table!r}"
                yield from self._ref(value, f"{where}.{col}")


def ask_problems(
    task: TaskDescription, spec: DomainSpec, tools: Mapping[str, ToolSpec]
) -> list[str]:
    """:meth:`AskChecker.problems` for one task (index the domain once with ``AskChecker`` to
    check many)."""
    return AskChecker(spec, tools).problems(task)
