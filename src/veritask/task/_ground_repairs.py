"""Is a refusal final? The repairs the policy lets an agent make, searched by execution.

A refusal the user gives up after is *final* only when no repair the policy leads an agent to
makes the refused write pass and change the state. An agent repairs one refusal at a time: it
recomputes what a calculation rule's formula gives, or picks another value of an enum the
refusing rule tests, and tries again; the next refusal (a fee that no longer matches the new
status) leads to the next repair. So the repairs are searched breadth first over *combinations*:
each candidate is the refused call with some unstated values changed, each move is a repair the
rule that refused the candidate suggests, and every candidate is run on the state the refused
call met (and put back). The search is bounded (``MAX_REPAIR_DEPTH`` repairs in a row,
``MAX_REPAIR_CALLS`` candidates) and deterministic (moves in a fixed order, candidates
deduplicated); when the bound is reached before every candidate was ruled out, finality is not
proved, and the package is not grounded (docs/design/0056-grounded-means-solvable.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from veritask.env import DatabaseError, Environment, bind_new_old
from veritask.policy import Rule, ToolSpec, quote_ident
from veritask.policy._sql import rule_condition
from veritask.task._ground_values import same
from veritask.task._package import TaskPackage

MAX_FORMULA_ROUNDS = 4
"""How many times the formulas of a refused write are applied in turn (one may decide another)."""
MAX_KEY_PROBES = 64
"""The most records of a table the search offers for a foreign key the agent decides."""
MAX_REPAIR_DEPTH = 4
"""Repairs in a row the search follows from a refused call (each after the refusal it meets)."""
MAX_REPAIR_CALLS = 64
"""Candidates the search runs for one refusal before it stops (finality then is not proved)."""


@dataclass(frozen=True)
class Repair:
    """The outcome of the search for one refusal.

    Attributes:
        changes: The unstated values an agent can change to make the call pass (None: none
            found).
        exhausted: The search stopped at ``MAX_REPAIR_CALLS`` candidates before ruling every
            candidate out.
    """

    changes: dict[str, Any] | None
    exhausted: bool = False


def give_ups(pkg: TaskPackage) -> dict[tuple[str, str], set[str]]:
    """(tool, rule) of each refusal a user accepts, with the columns the user states for it."""
    out: dict[tuple[str, str], set[str]] = {}
    for sub in pkg.task.sub_goals:
        asks = [a for a in (sub.ask, *(fb.then for fb in sub.fallbacks)) if a is not None]
        for fb in sub.fallbacks:
            if fb.then is not None:
                continue
            for ask in asks:
                stated = set(ask.values) | set(ask.refs)
                out.setdefault((ask.tool, fb.rule), set()).update(stated)
    return out


def reactions(pkg: TaskPackage) -> set[tuple[str, str]]:
    """(tool, rule) of each refusal the user reacts to with a revised request."""
    out: set[tuple[str, str]] = set()
    for sub in pkg.task.sub_goals:
        asks = [a for a in (sub.ask, *(fb.then for fb in sub.fallbacks)) if a is not None]
        for fb in sub.fallbacks:
            if fb.then is not None:
                out.update((ask.tool, fb.rule) for ask in asks)
    return out


def _key(args: dict[str, Any]) -> str:
    return json.dumps(args, sort_keys=True, default=str)


class RepairSearch:
    """The repair search of a grounder (a mixin: the grounder gives the environment and its
    cached queries)."""

    env: Environment

    def _query(self, table: str, match: dict[str, Any]) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def passing_repair(
        self, tool: ToolSpec, args: dict[str, Any], rule: Rule, stated: set[str]
    ) -> Repair:
        """A combination of repairs of unstated values that makes the refused call pass and
        change the state, searched breadth first (single repairs first); see the module
        docstring.

        Args:
            tool: The write tool.
            args: The refused call's arguments.
            rule: The rule that refused it.
            stated: The columns the user states (never changed).
        """
        seen = {_key(args)}
        # each candidate with the rule refusing it and its changes, in the order they were made
        frontier: list[tuple[dict[str, Any], Rule, dict[str, Any]]] = [(args, rule, {})]
        budget = MAX_REPAIR_CALLS
        for _ in range(MAX_REPAIR_DEPTH):
            following: list[tuple[dict[str, Any], Rule, dict[str, Any]]] = []
            for current, refusing, made in frontier:
                for change in self._moves(tool, current, refusing, stated):
                    candidate = {**current, **change}
                    key = _key(candidate)
                    if key in seen:
                        continue
                    if budget == 0:
                        return Repair(None, exhausted=True)
                    seen.add(key)
                    budget -= 1
                    changes = {
                        c: candidate[c]
                        for c in {**made, **change}
                        if not same(candidate[c], args.get(c))
                    }
                    passed, next_rule = self._outcome(tool.name, candidate)
                    if passed:
                        return Repair(changes)
                    if next_rule is not None:
                        following.append((candidate, next_rule, changes))
            frontier = following
        return Repair(None)

    def _moves(
        self, tool: ToolSpec, args: dict[str, Any], rule: Rule, stated: set[str]
    ) -> Iterator[dict[str, Any]]:
        """The repairs the refusal by ``rule`` suggests, in order: each single change
        (``_choices``), then every formula worked out at once."""
        for column, value in self._choices(tool, args, rule, stated):
            yield {column: value}
        worked = self._worked_out(tool, args, stated)
        if worked:
            yield worked

    def agents_version(
        self, tool: ToolSpec, args: dict[str, Any], stated: set[str], decided: set[str]
    ) -> dict[str, Any]:
        """The refused call as an agent makes it before any refusal: without the values the
        agent decides that nobody stated, unless a formula of the policy gives that very value
        (an agent works a formula out; it never invents a number)."""
        new, old = self._rows(tool, args)
        formulas = {
            r.repair.column: r
            for r in self.env.spec.rules
            if r.repair is not None and r.table == tool.table and tool.kind in r.on
        }
        kept = dict(args)
        for column in decided - stated:
            if column not in args:
                continue
            rule = formulas.get(column)
            if rule is not None and rule.repair is not None:
                applies = not rule.when or self._value(rule.when, new, old)
                if applies and same(self._value(rule.repair.value, new, old), args[column]):
                    continue
            del kept[column]
        return kept

    def refused_alike(self, tool: str, args: dict[str, Any], rule_id: str) -> bool:
        """Whether the call is refused by ``rule_id`` (the state is put back)."""
        passed, rule = self._outcome(tool, args)
        return not passed and rule is not None and rule.id == rule_id

    def _outcome(self, tool: str, args: dict[str, Any]) -> tuple[bool, Rule | None]:
        """Whether the call passes and changes the state (the state is put back), and else the
        rule that refuses it (None: refused for no rule, or passed without a change)."""
        env = self.env
        before = env.snapshot()
        result = env.call(tool, args)
        if result.ok:
            changed = env.distance(before) > 0
            env.restore(before)
            return changed, None
        rule_id = result.error.violated_rule if result.error is not None else None
        try:
            return False, env.spec.rule(rule_id) if rule_id else None
        except KeyError:
            return False, None

    def _worked_out(self, tool: ToolSpec, args: dict[str, Any], stated: set[str]) -> dict[str, Any]:
        """Every unstated value the policy's formulas give at once, as an agent works them out
        (a fee, then the approval the fee decides): formulas are applied until none changes a
        value, at most ``MAX_FORMULA_ROUNDS`` times. Returns the values that differ from
        ``args``."""
        table = self.env.spec.table(tool.table)
        rules = [
            r
            for r in self.env.spec.rules
            if r.repair is not None
            and r.table == tool.table
            and tool.kind in r.on
            and r.repair.column not in stated
        ]
        current = dict(args)
        for _ in range(MAX_FORMULA_ROUNDS):
            new, old = self._rows(tool, current)
            moved = False
            for rule in rules:
                assert rule.repair is not None
                if rule.when and not self._value(rule.when, new, old):
                    continue
                value = self._value(rule.repair.value, new, old)
                column = rule.repair.column
                if (value is None and table.column(column).not_null) or same(
                    value, new.get(column)
                ):
                    continue
                current[column] = new[column] = value
                moved = True
            if not moved:
                break
        return {c: v for c, v in current.items() if c not in args or not same(v, args[c])}

    def _value(self, expr: str, new: dict[str, Any], old: dict[str, Any] | None) -> Any:
        """An expression over NEW / OLD on the current state (None when it cannot be read)."""
        sql, params = bind_new_old(expr, new, old)
        try:
            found = self.env.select(f"SELECT {sql}", params)
        except DatabaseError:
            return None
        return found[0][0] if found else None

    def _choices(
        self, tool: ToolSpec, args: dict[str, Any], rule: Rule, stated: set[str]
    ) -> Iterator[tuple[str, Any]]:
        """Values the agent may pick on its own: each calculation rule's formula for an
        unstated column of this write, then the other values of unstated enums the rule tests."""
        table = self.env.spec.table(tool.table)
        new, old = self._rows(tool, args)
        for other in self.env.spec.rules:
            repair = other.repair
            if repair is None or other.table != tool.table or tool.kind not in other.on:
                continue
            if repair.column in stated:
                continue
            sql, params = bind_new_old(repair.value, new, old)
            try:
                found = self.env.select(f"SELECT {sql}", params)
            except DatabaseError:
                continue
            if not found or same(found[0][0], new.get(repair.column)):
                continue
            if found[0][0] is not None or not table.column(repair.column).not_null:
                yield repair.column, found[0][0]  # NULL too, where the column allows it
        for column in table.columns:
            if column.enum is None or column.name in stated or not rule.tests_value(column.name):
                continue
            yield from ((column.name, v) for v in column.enum if not same(v, new.get(column.name)))
        yield from self._decided_keys(tool, rule, stated, new, old)

    def _decided_keys(
        self,
        tool: ToolSpec,
        rule: Rule,
        stated: set[str],
        new: dict[str, Any],
        old: dict[str, Any] | None,
    ) -> Iterator[tuple[str, Any]]:
        """Other records for a foreign key the agent decides (a transaction's
        ``agent_decides``) that the rule tests, an approver say: the first ``MAX_KEY_PROBES``
        keys of the referenced table, in the order a read lists them, that the rule itself
        does not refuse (as the faithful agent picks them)."""
        decides = {
            c for tx in self.env.spec.transactions if tx.tool == tool.name for c in tx.agent_decides
        }
        condition = rule_condition(rule)
        for column in self.env.spec.table(tool.table).columns:
            if column.name not in decides or column.name in stated:
                continue
            if column.references is None or column.enum is not None:
                continue
            if not rule.tests_value(column.name):
                continue
            parent, key = column.references.split(".")
            rows = self.env.select(
                f"SELECT {quote_ident(key)} FROM {quote_ident(parent)} ORDER BY rowid LIMIT ?",
                (MAX_KEY_PROBES,),
            )
            for (value,) in rows:
                if same(value, new.get(column.name)):
                    continue
                if self._value(condition, {**new, column.name: value}, old):
                    continue  # the rule refuses this one too
                yield column.name, value

    def _rows(
        self, tool: ToolSpec, args: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """The row a write with ``args`` would make (NEW) and, for an update, the row it
        changes (OLD)."""
        table = self.env.spec.table(tool.table)
        key = tool.key
        old: dict[str, Any] | None = None
        if tool.kind != "insert" and key is not None and key in args:
            payload = self._query(tool.table, {key: args[key]})
            rows = payload.get("rows") if isinstance(payload, dict) else None
            old = dict(rows[0]) if rows else None
        base = {c.name: c.default for c in table.columns} if old is None else dict(old)
        return {**base, **args}, old
