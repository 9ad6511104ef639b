"""What the symbolic roles need to know about a domain, derived once from its spec.

Nothing here is domain-specific code: the actor table, ownership paths, row labels, value pools
and repairs all come from the spec's structure (foreign keys, tiers, enums, rules, thresholds).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from veritask.policy import (
    Column,
    DomainSpec,
    Rule,
    Table,
    ToolSpec,
    Transaction,
    actor_table,
    build_tools,
)
from veritask.policy._sql import rule_condition
from veritask.policy._tools import ToolKind
from veritask.synth._values import ValueRules

_NEW_COL = re.compile(r"\bNEW\.([A-Za-z_][A-Za-z0-9_]*)")
_NEW_CMP = re.compile(r"\bNEW\.([A-Za-z_][A-Za-z0-9_]*)\s*(?:<=|>=|<|>|=|!=)\s*(-?\d+)")
_NAME_COLUMNS = ("name", "full_name", "title", "label", "display_name")


def humanize(name: str) -> str:
    """``flight_bookings`` -> ``flight booking``; ``trip_purpose`` -> ``trip purpose``. A word
    said twice in a row is said once: a fused spec's ``travel_travel_requests`` (the service
    prefix on a table that already starts with it) -> ``travel request``."""
    parts = name.split("_")
    words = [w for i, w in enumerate(parts) if i == 0 or w != parts[i - 1]]
    last = words[-1]
    if last.endswith("ies"):
        words[-1] = last[:-3] + "y"
    elif last.endswith(("ches", "shes", "sses", "xes")):
        words[-1] = last[:-2]
    elif last.endswith("s") and not last.endswith("ss"):
        words[-1] = last[:-1]
    return " ".join(words)


def column_words(name: str) -> str:
    """``departure_step`` -> ``departure step``."""
    return name.replace("_", " ")


@dataclass
class DomainModel:
    """Derived facts about a spec used by the Set Designer, Explorer and Projector."""

    spec: DomainSpec
    actor: str
    owner_path: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    """table -> [(fk column, parent table), ...] leading to the actor table (NOT NULL FKs)."""
    label: dict[str, str | None] = field(default_factory=dict)
    public_keys: set[str] = field(default_factory=set)
    """Tables whose primary-key values are public codes (reference tables without a name)."""
    numbers: dict[tuple[str, str], set[int]] = field(default_factory=dict)
    """Boundary numbers per (table, column) from rule conditions and thresholds."""
    sources: dict[tuple[str, str], set[tuple[str, str]]] = field(default_factory=dict)
    """Columns of other tables whose values bound a written column (see number_sources)."""
    write_transactions: list[Transaction] = field(default_factory=list)
    tools: dict[str, ToolSpec] = field(default_factory=dict)
    """The spec's tools by name: what a tool name means (kind, table, key), never parsed."""
    values: ValueRules | None = field(default=None, repr=False, compare=False)
    """Where made-up values come from and the schema bounds they keep (see ``_values``)."""
    _fixed: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    _direct: dict[str, Transaction | None] = field(default_factory=dict, repr=False)
    _direct_ids: set[str] = field(default_factory=set, repr=False)

    @classmethod
    def from_spec(cls, spec: DomainSpec) -> DomainModel:
        """Analyse a spec."""
        model = cls(spec=spec, actor=actor_table(spec), tools=build_tools(spec))
        for table in spec.tables:
            model.owner_path[table.name] = _path_to(spec, table.name, model.actor)
            model.label[table.name] = _label_column(table)
            if table.tier == "reference" and not any(
                c.name in _NAME_COLUMNS for c in table.columns
            ):
                model.public_keys.add(table.name)
        model.numbers = _boundary_numbers(spec)
        model.sources = number_sources(spec)
        model.values = ValueRules.from_spec(spec, model.actor)
        model.write_transactions = list(spec.transactions) or _default_transactions(
            spec, model.tools
        )
        return model

    @property
    def value_rules(self) -> ValueRules:
        """The value-generation rules (derived on first use for a model built by hand)."""
        if self.values is None:
            self.values = ValueRules.from_spec(self.spec, self.actor)
        return self.values

    def tool(self, name: str) -> ToolSpec:
        """The tool called ``name``; KeyError when the spec has none."""
        return self.tools[name]

    def tool_for(self, kind: ToolKind, table: str) -> ToolSpec | None:
        """The ``kind`` tool of ``table`` (None when the table has no such tool)."""
        return find_tool(self.tools, kind, table)

    def query_tool(self, table: str) -> ToolSpec:
        """The read tool of ``table`` (every table has one); KeyError for an unknown table."""
        found = self.tool_for("query", table)
        if found is None:
            raise KeyError(table)
        return found

    def writes(self, name: str) -> bool:
        """True when the tool called ``name`` changes the state (insert or update)."""
        return self.tools[name].writes

    def named(self, table: str) -> bool:
        """True when rows of ``table`` have a proper name column (name, title, ...)."""
        return self.label.get(table) in _NAME_COLUMNS

    def owned(self, table: str) -> bool:
        """True when rows of ``table`` belong to an actor (directly or through parents)."""
        return table == self.actor or bool(self.owner_path.get(table))

    def agent_decides(self, tx: Transaction) -> set[str]:
        """Parameters the agent must derive: declared ones plus columns repaired by calculation rules."""
        out = set(tx.agent_decides)
        out.update(r.repair.column for r in self.repairs(tx) if r.repair is not None)
        return out

    def repairs(self, tx: Transaction) -> list[Rule]:
        """Calculation rules with a repair formula for one of the transaction's parameters, on
        its table and event (whether their ``when`` guard holds depends on the call)."""
        tool = self.tool(tx.tool)
        return [
            r
            for r in self.spec.rules
            if r.table == tool.table
            and tool.kind in r.on
            and r.repair is not None
            and r.repair.column in tx.parameters
        ]

    def fixed_values(self, tx: Transaction) -> dict[str, Any]:
        """Values the procedure's own name fixes: an enum parameter with exactly one value
        named like a word of the procedure's id (``cancel_flight`` sets ``status`` to
        ``CANCELLED``, ``drop_course`` to ``DROPPED``). Empty when the name fixes nothing."""
        if tx.id not in self._fixed:
            self._fixed[tx.id] = self._named_values(tx)
        return dict(self._fixed[tx.id])

    def _named_values(self, tx: Transaction) -> dict[str, Any]:
        table = self.spec.table(self.tool(tx.tool).table)
        # the table's own noun names the record, not a state ("close_pick" on picks: PICKED)
        nouns = {w.removesuffix("s") for w in table.name.split("_")}
        stems = [
            w.rstrip("e")
            for w in tx.id.split("_")
            if len(w) >= 4 and w.removesuffix("s") not in nouns
        ]
        out: dict[str, Any] = {}
        for name in tx.parameters:
            column = table.column(name) if name in table.column_names else None
            if column is None or column.enum is None:
                continue
            named = [v for v in column.enum if any(str(v).lower().startswith(s) for s in stems)]
            if len(named) == 1:
                out[name] = named[0]
        return out

    def taken_values(self, tx: Transaction) -> dict[str, set[Any]]:
        """Values other procedures on the same tool fix (see ``fixed_values``): asking for one
        of them under this procedure's name would be incoherent."""
        own = self.fixed_values(tx)
        out: dict[str, set[Any]] = {}
        for other in self.write_transactions:
            if other.tool != tx.tool or other.id == tx.id:
                continue
            for col, value in self.fixed_values(other).items():
                if own.get(col) != value:
                    out.setdefault(col, set()).add(value)
        return out

    def transaction_of_call(self, tool: str, args: Mapping[str, Any]) -> Transaction | None:
        """The procedure a write call performs: among those on ``tool``, one whose fixed values
        the call agrees with, covering most of its arguments."""
        options = [
            tx
            for tx in self.write_transactions
            if tx.tool == tool
            and all(args.get(c, v) == v for c, v in self.fixed_values(tx).items())
        ]
        if not options:
            return None
        return max(
            options, key=lambda tx: (len(set(args) & set(tx.parameters)), -len(tx.parameters))
        )

    def rules_for(self, tool: str) -> list[Rule]:
        """Rules guarding the tool's table and event."""
        spec = self.tool(tool)
        return [r for r in self.spec.rules if r.table == spec.table and spec.kind in r.on]

    def transaction_for(self, rule: Rule) -> Transaction | None:
        """The SOP whose tool the rule guards: the rule's own SOP when its tool writes the rule's
        table with the rule's event, else the first SOP that does."""

        def guards(tx: Transaction) -> bool:
            tool = self.tool(tx.tool)
            return tool.table == rule.table and tool.kind in rule.on

        own = [tx for tx in self.write_transactions if tx.id == rule.transaction and guards(tx)]
        return next(iter(own), None) or next(
            (tx for tx in self.write_transactions if guards(tx)), None
        )

    def direct_request(self, rule: Rule) -> Transaction | None:
        """A request for an outcome no procedure offers, which ``rule`` may refuse: an update
        of the rule's table that sets a column the table's procedures fix (a status) to a
        value none of them sets ("close my return", "complete my refund now"). A user can
        ask for it; the policy reserves it (to the system, or to nobody), so it only ever
        makes a refusal. Only the columns the rule tests count, or every fixed column when
        the rule looks at the record alone (``OLD`` only). None when there is no such value
        (see ``is_direct``)."""
        if rule.id not in self._direct:
            self._direct[rule.id] = self._direct_request(rule)
        return self._direct[rule.id]

    def _direct_request(self, rule: Rule) -> Transaction | None:
        tool = self.tool_for("update", rule.table)
        if tool is None or "update" not in rule.on or tool.key is None:
            return None
        procs = [tx for tx in self.write_transactions if tx.tool == tool.name]
        fixed: dict[str, set[Any]] = {}
        for tx in procs:
            for col, value in self.fixed_values(tx).items():
                fixed.setdefault(col, set()).add(value)
        tested = [c for c in fixed if rule.tests_value(c)]
        about_record = not _NEW_COL.search(f"{rule.when or ''} {rule.condition}")
        cols = tested or (sorted(fixed) if about_record else [])
        table = self.spec.table(rule.table)
        free = [
            c
            for c in cols
            if any(
                v not in fixed[c] and _guard_admits(rule, c, v) for v in table.column(c).enum or []
            )
        ]
        if not free:
            return None
        col = free[0]
        tx = Transaction(
            id=f"change_{rule.table}_{col}",
            name=f"Change {humanize(rule.table)} {column_words(col)}",
            goal=f"Set the {column_words(col)} of a {humanize(rule.table)} directly.",
            tool=tool.name,
            parameters=[tool.key, col],
        )
        self._fixed[tx.id] = {}  # it fixes nothing: the user names the value
        self._direct_ids.add(tx.id)
        return tx

    def is_direct(self, tx: Transaction) -> bool:
        """True when ``tx`` is a direct request (see ``direct_request``), not a procedure."""
        return tx.id in self._direct_ids


_GUARD_EQ = r"\bNEW\.{col}\s*=\s*'([^']*)'"
_GUARD_IN = r"\bNEW\.{col}\s+IN\s*\(([^)]*)\)"


def _guard_admits(rule: Rule, col: str, value: Any) -> bool:
    """False when the rule's ``when`` guard pins ``NEW.col`` to values other than ``value``
    (``NEW.status = 'CANCELLED'``, ``NEW.status IN ('A', 'B')``): the rule never looks at a
    write of ``value`` then. True when the guard says nothing about the column."""
    when = rule.when or ""
    name = re.escape(col)
    pinned = set(re.findall(_GUARD_EQ.format(col=name), when, re.I))
    for group in re.findall(_GUARD_IN.format(col=name), when, re.I):
        pinned |= set(re.findall(r"'([^']*)'", group))
    return not pinned or str(value) in pinned


def implicated_columns(rule: Rule, guard: bool = True) -> list[str]:
    """Columns of the written row a rule looks at (``NEW.<col>``), in order. With
    ``guard=False`` only the condition counts: the ``when`` guard describes the situation
    (e.g. "this is a cancellation"), which a correction should not change."""
    text = f"{rule.when or ''} {rule.condition}" if guard else rule.condition
    text = text.replace("{threshold}", "0")
    guarded = set(_NEW_COL.findall(rule.when or "")) if not guard else set()
    seen: list[str] = []
    for col in _NEW_COL.findall(text):
        if col not in seen and col not in guarded:
            seen.append(col)
    return seen


def _path_to(spec: DomainSpec, start: str, goal: str) -> list[tuple[str, str]]:
    if start == goal:
        return []
    queue: deque[tuple[str, list[tuple[str, str]]]] = deque([(start, [])])
    seen = {start}
    while queue:
        name, path = queue.popleft()
        for col in spec.table(name).columns:
            if not (col.references and col.not_null):
                continue
            parent = col.references.split(".")[0]
            if parent == goal:
                return [*path, (col.name, parent)]
            if parent not in seen and spec.table(parent).tier != "reference":
                seen.add(parent)
                queue.append((parent, [*path, (col.name, parent)]))
    return []


def _is_plain_text(col: Column) -> bool:
    return col.type == "TEXT" and not col.primary_key and not col.references and col.enum is None


def _label_column(table: Table) -> str | None:
    for name in _NAME_COLUMNS:
        if name in table.column_names:
            return name
    return next((c.name for c in table.columns if _is_plain_text(c)), None)


def _boundary_numbers(spec: DomainSpec) -> dict[tuple[str, str], set[int]]:
    out: dict[tuple[str, str], set[int]] = {}
    for rule in spec.rules:
        text = f"{rule.when or ''} {rule_condition(rule)}"
        for col, num in _NEW_CMP.findall(text):
            n = int(num)
            out.setdefault((rule.table, col), set()).update({n - 1, n, n + 1})
    return out


def number_sources(spec: DomainSpec) -> dict[tuple[str, str], set[tuple[str, str]]]:
    """For each written numeric column a rule compares, the numeric columns of other tables the
    same condition mentions (a deadline, a cap): their values are the boundaries to probe."""
    numeric = {
        c.name: t.name
        for t in spec.tables
        for c in t.columns
        if c.type in ("INTEGER", "REAL")
        and not c.primary_key
        and not c.references
        and c.enum is None
    }
    out: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for rule in spec.rules:
        text = rule_condition(rule)
        written = [c for c in _NEW_COL.findall(text) if c in spec.table(rule.table).column_names]
        others = {
            (numeric[w], w)
            for w in re.findall(r"\.([a-z][a-z0-9_]*)\b", text)
            if w in numeric and numeric[w] != rule.table
        }
        for col in written:
            if spec.table(rule.table).column(col).type in ("INTEGER", "REAL") and others:
                out.setdefault((rule.table, col), set()).update(others)
    return out


def _default_transactions(spec: DomainSpec, tools: dict[str, ToolSpec]) -> list[Transaction]:
    """One plain "create" SOP per insert tool and one "update" SOP per update tool (tools come
    in the spec's table order), so the rules on updates are reachable too."""
    out = []
    for tool in tools.values():
        if tool.kind not in ("insert", "update"):
            continue
        table = spec.table(tool.table)
        if tool.kind == "insert":
            params = [c.name for c in table.columns if c.writable_on_insert]
        else:
            params = [tool.key or ""] + [c.name for c in table.columns if c.writable_on_update]
        out.append(
            Transaction(
                id=f"{'create' if tool.kind == 'insert' else 'update'}_{table.name}",
                name=f"{'Create' if tool.kind == 'insert' else 'Update'} {humanize(table.name)}",
                goal="",
                tool=tool.name,
                parameters=params,
            )
        )
    return out


def find_tool(tools: Mapping[str, ToolSpec], kind: ToolKind, table: str) -> ToolSpec | None:
    """The ``kind`` tool of ``table`` among ``tools`` (None when there is none)."""
    return next((t for t in tools.values() if t.kind == kind and t.table == table), None)


def target_key(tool: ToolSpec) -> str | None:
    """The argument naming the record an update changes; None for inserts and queries."""
    return tool.key if tool.kind == "update" else None


def row_key(table: Table, row: dict[str, Any]) -> Any:
    """The primary-key value of a row (None when the table has none)."""
    pk = table.primary_key
    return row[pk[0].name] if pk else None
