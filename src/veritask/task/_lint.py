"""The semantic lint: tasks a careful person would not accept, found in any dataset.

Certification proves that a witness reaches its target, and grounding that the task's text
determines it. Neither asks whether the request is one a real customer makes, or whether the
target is what a careful, policy-following agent would produce. The lint looks for the classes
of package that fail that reading (``docs/design/0045-intent-and-the-semantic-lint.md``):

- ``restated_time``: after a refusal the user "accepts" another time or step for the same
  request (the clock is not the user's to move past a time window or an irreversibility rule);
- ``clock_backwards``: after a refusal that tested a time the user stated, a later request of
  the task on the same table states an earlier time (the refused change asked again "at step 2"
  in a later sub-goal, a cancellation dated before the refused change);
- ``calculation_trigger``: a reactive trigger keyed on a calculation the agent, not the user,
  got wrong (a fallback must be the user's decision, not a reaction to the agent's error);
- ``replaced_record``: the record a request acts on is swapped for another one after a refusal;
- ``changed_intent``: an alternative record that differs from the one asked for on an attribute
  that defines the request (the route of a flight, the family of a product, the owner);
- ``category_swap``: the alternative names another row of a table whose rows say what a thing
  *is* (an expense category, a product family: a table with no intent columns of its own), to
  get past the rule (refiling a taxi as training to get under a cap);
- ``clock_not_monotone``: a time at which the user makes a request (``clock_column``) earlier
  than one stated before it in the same task, on any table (one "now" per task);
- ``unnamed_change``: a procedure named for a column ("Change Sailing") whose request never
  states it, or a request that states a column its procedure does not take;
- ``undone_in_task``: a record the task creates is retired (cancelled, withdrawn) by a later
  request of the same task;
- ``repeated_request``: two requests of one task create records that the user describes with
  the same words (the "Cycling weekend" booked twice, the same parking claim filed twice);
- ``noop_alternative``: the alternative the user accepts is the value the record already has;
- ``terminal_without_status``: a procedure named for a status change (cancel, approve, close)
  whose accepted write does not set that status;
- ``repeated_text`` and ``skewed_cast`` (dataset-wide): the same task text more than once, or
  one user far above a uniform share of the tasks.

Each finding names the package, the sub-goal and the values involved.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from veritask.env import Environment
from veritask.policy import Column, DomainSpec, Rule, Table, ToolSpec
from veritask.task._package import Ask, RowRef, SubGoal, TaskPackage
from veritask.task._prefer import best_in, preference_args

LINT_KINDS = (
    "restated_time",
    "clock_backwards",
    "calculation_trigger",
    "replaced_record",
    "changed_intent",
    "category_swap",
    "clock_not_monotone",
    "unnamed_change",
    "undone_in_task",
    "repeated_request",
    "noop_alternative",
    "terminal_without_status",
    "repeated_text",
    "skewed_cast",
)

CAST_SKEW = 2.0
"""A user in more than this many times a uniform share of the tasks skews the cast."""

MIN_CAST_TASKS = 50
"""Below this many tasks the cast is too small to call skewed."""

TIME_SUFFIXES = ("_step", "_at", "_date", "_time", "_day")
_LABELS = ("name", "full_name", "title", "label", "display_name")
_WORD = re.compile(r"[a-z]+")
_NEW_OLD = re.compile(r"\b(?:NEW|OLD)\.([a-z][a-z0-9_]*)")
_BARE = re.compile(r"\b([a-z][a-z0-9_]*)\b")
_NAME = r"(?:(?:NEW|OLD|[a-z_][a-z0-9_]*)\.)?[a-z_][a-z0-9_]*"
_EQUALITY = re.compile(rf"(?<![\w.'])({_NAME})\s*=\s*({_NAME})(?![\w.'(])")


@dataclass(frozen=True)
class LintFinding:
    """One thing a careful reader would not accept.

    Attributes:
        task: The package id ("" for a finding about the whole dataset).
        kind: One of :data:`LINT_KINDS`.
        detail: What was found, in one line.
    """

    task: str
    kind: str
    detail: str

    def to_json(self) -> dict[str, str]:
        """``{"id", "kind", "detail"}``."""
        return {"id": self.task, "kind": self.kind, "detail": self.detail}


def is_time_column(column: Column) -> bool:
    """True for a numeric column that holds a point in time (``*_step``, ``*_at``, ...)."""
    return column.type in ("INTEGER", "REAL") and (
        column.name == "step" or column.name.endswith(TIME_SUFFIXES)
    )


NOT_NOW = (
    "due",
    "end",
    "start",
    "depart",
    "arriv",
    "expense",
    "expir",
    "valid",
    "deadline",
    "deliver",
    "schedul",
    "plan",
    "travel",
    "event",
    "incur",
    "check_in",
    "check_out",
)
"""Name beginnings of time columns that hold a time other than when a request is made (a
departure, a due date, when an expense was incurred)."""


def clock_column(column: Column) -> bool:
    """True for a time column that holds when the request is made (``booked_step``,
    ``cancel_step``, ``request_step``), not a time the request is about (``departure_step``,
    ``due_step``, ``expense_step``): the "now" of a task, which never goes back."""
    return is_time_column(column) and not column.name.startswith(NOT_NOW)


def kind_table(table: Table) -> bool:
    """True for a table whose rows say what a thing *is* (expense categories, part families):
    no intent columns of its own and none declared. Another row of it is another kind of
    thing, never an alternative for the same request. ``intent: []`` on the table says the
    opposite (any row serves: a travel class, a fare)."""
    return table.intent is None and not intent_columns(table)


def status_of_procedure(table: Table, title: str) -> tuple[str, Any] | None:
    """The (column, value) an update procedure named ``title`` exists to set, if its name
    says one.

    "Cancel Flight Booking" on a table with ``status IN (..., 'CANCELLED')`` gives
    ``("status", "CANCELLED")``: the name's first word (its verb) begins, once stemmed, exactly
    one enum value of an updatable column. None when it names none, or when the name offers a
    choice ("Ship or Cancel Exchange"): such a procedure sets whichever the user or the policy
    gives."""
    words = _WORD.findall(title.lower())
    if not words or "or" in words:
        return None
    stem = _stem(words[0])
    if len(stem) < 3:
        return None
    for column in table.columns:
        if column.enum is None or not column.updatable or column.computed:
            continue
        hits = [v for v in column.enum if isinstance(v, str) and v.lower().startswith(stem)]
        if len(hits) == 1:
            return column.name, hits[0]
    return None


def _stem(verb: str) -> str:
    """``cancel`` -> ``cancel``; ``approve`` -> ``approv``; ``deny`` -> ``den``."""
    if verb.endswith("e") or verb.endswith("y"):
        return verb[:-1]
    return verb


def intent_columns(table: Table) -> list[str]:
    """The attributes that define what a record of ``table`` is for a request: an alternative
    record must agree on them. The table's ``intent`` when the spec sets it; else every foreign
    key and every enum column (the categories a record belongs to: its owner, its route, its
    product family), the key, flags and lifecycle statuses excepted."""
    if table.intent is not None:
        return list(table.intent)
    label = next((c for c in _LABELS if c in table.column_names), None)
    out: list[str] = []
    for col in table.columns:
        if col.primary_key or col.name == label or col.technical or col.computed:
            continue
        if col.references or (col.enum is not None and not _state_like(col)):
            out.append(col.name)
    return out


def _state_like(column: Column) -> bool:
    """A flag or a lifecycle status: where a record stands, not what kind of record it is."""
    if column.enum is not None and {v for v in column.enum if v is not None} <= {0, 1}:
        return True
    return column.name in ("status", "state") or column.name.endswith("_status")


def key_names(spec: DomainSpec) -> frozenset[str]:
    """The primary-key column names of ``spec``'s tables (``id`` always among them)."""
    return frozenset({"id"} | {c.name for t in spec.tables for c in t.primary_key})


def tested_words(rule: Rule, keys: Collection[str] = ("id",)) -> set[str]:
    """The identifiers the rule's guard and condition test: every one they mention, except
    those that only join one record to another (``oi.id = NEW.order_item_id``: an equality
    with a primary key named in ``keys`` on one side). A return-window rule looks the order
    item up by its key to read its delivery step: it tests the step, not which item."""
    text = f"{rule.when or ''} {rule.condition}"
    joins = [m for m in _EQUALITY.finditer(text) if _is_join(m.group(1), m.group(2), keys)]
    for m in reversed(joins):
        text = text[: m.start()] + " " + text[m.end() :]
    return set(_NEW_OLD.findall(text)) | set(_BARE.findall(text))


def _is_join(left: str, right: str, keys: Collection[str]) -> bool:
    a, b = left.split(".")[-1], right.split(".")[-1]
    return a != b and (a in keys or b in keys)


class _PackageLint:
    """The lint of one package; ``env`` (when given) reads records at s_origin and replays."""

    def __init__(self, spec: DomainSpec, tools: Mapping[str, ToolSpec], pkg: TaskPackage) -> None:
        self.spec = spec
        self.tools = tools
        self.pkg = pkg
        self.found: list[LintFinding] = []

    def add(self, kind: str, detail: str) -> None:
        self.found.append(LintFinding(self.pkg.id, kind, detail))

    def rule(self, rule_id: str) -> Rule | None:
        try:
            return self.spec.rule(rule_id)
        except KeyError:
            return None

    def run(self, env: Environment | None, origin: bytes | None) -> list[LintFinding]:
        rows = (
            _OriginRows(self.spec, env, origin) if env is not None and origin is not None else None
        )
        refused: dict[str, tuple[Any, str]] = {}
        self.now: tuple[Any, str] | None = None
        for n, sub in enumerate(self.pkg.task.sub_goals, 1):
            if sub.ask is None:
                continue
            current = sub.ask
            stated = set(sub.ask.values)
            self._clock(n, current, refused, set())
            self._now(n, current, set())
            for fb in sub.fallbacks:
                rule = self.rule(fb.rule)
                if rule is not None:
                    self._calculation(n, rule, stated)
                    self._refused_time(current, rule, refused)
                if fb.then is None:
                    continue
                self._alternative(n, rule, current, fb.then, rows)
                restated = {c for c in fb.then.values if c in current.values}
                self._clock(n, fb.then, refused, restated)
                self._now(n, fb.then, restated)
                current = fb.then
                stated |= set(fb.then.values)
            self._named_column(n, sub.title, [sub.ask, *_thens(sub)])
        self._terminal()
        self._undone()
        self._twice()
        if env is not None and origin is not None:
            self._noops(env, origin)
        return self.found

    def _times(self, ask: Ask) -> dict[str, Any]:
        """The times ``ask`` states (numeric values of time columns of its table)."""
        table = self._table_of(ask.tool)
        if table is None:
            return {}
        return {
            col: value
            for col, value in ask.values.items()
            if isinstance(value, (int, float))
            and (column := _column(table, col)) is not None
            and is_time_column(column)
        }

    def _refused_time(self, ask: Ask, rule: Rule, refused: dict[str, tuple[Any, str]]) -> None:
        """Remember the latest time the user stated that ``rule`` refused, per table."""
        tested = tested_words(rule, key_names(self.spec))
        tool = self.tools.get(ask.tool)
        for col, value in self._times(ask).items():
            if col in tested and tool is not None:
                seen = refused.get(tool.table)
                if seen is None or value > seen[0]:
                    refused[tool.table] = (value, f"{col} {value!r} ({rule.id})")

    def _clock(
        self, n: int, ask: Ask, refused: dict[str, tuple[Any, str]], restated: set[str]
    ) -> None:
        """A time stated after a refused one on the same table may not be earlier (columns
        the same request restates are ``restated_time`` findings instead)."""
        tool = self.tools.get(ask.tool)
        seen = refused.get(tool.table) if tool is not None else None
        if seen is None:
            return
        for col, value in self._times(ask).items():
            if col not in restated and value < seen[0]:
                self.add(
                    "clock_backwards",
                    f"sub-goal {n}: states {col} {value!r}, earlier than the refused {seen[1]}",
                )

    def _now(self, n: int, ask: Ask, restated: set[str]) -> None:
        """The times at which the user makes requests never go back within a task, on any
        table or column (a time the same request restates is ``restated_time`` instead)."""
        table = self._table_of(ask.tool)
        if table is None:
            return
        for col, value in self._times(ask).items():
            column = _column(table, col)
            if column is None or not clock_column(column):
                continue
            if col not in restated and self.now is not None and value < self.now[0]:
                self.add(
                    "clock_not_monotone",
                    f"sub-goal {n}: states {col} {value!r}, earlier than {self.now[1]} "
                    "stated before in the task",
                )
            if self.now is None or value >= self.now[0]:
                self.now = (value, f"{col} {value!r}")

    def _named_column(self, n: int, title: str, asks: list[Ask]) -> None:
        """A procedure named for a column states it, and no request states a column its
        procedure does not take."""
        ask = asks[0]
        tx = next((t for t in self.spec.transactions if t.id == ask.transaction), None)
        tool = self.tools.get(ask.tool)
        if tx is None or tool is None or not tx.parameters:
            return
        key = tool.key
        taken = set(tx.parameters) | {key}
        for a in asks:
            extra = sorted(c for c in {*a.values, *a.refs} if c not in taken)
            if extra:
                self.add(
                    "unnamed_change",
                    f"sub-goal {n} ({title}): states {', '.join(extra)}, which "
                    f"{tx.id} does not take",
                )
                return
        if tool.kind != "update":
            return
        named = named_column(self.spec.table(tool.table), title, tx.parameters, tx.agent_decides)
        if named is not None and not any(named in {*a.values, *a.refs} for a in asks):
            self.add(
                "unnamed_change",
                f"sub-goal {n} ({title}): the procedure is named for {named}, which the "
                "request never states",
            )

    def _undone(self) -> None:
        """A record the task creates is not retired by a later request of the same task."""
        made: set[tuple[str, Any]] = set()
        for call in self.pkg.witness:
            tool = self.tools.get(call.tool)
            if not call.ok or tool is None or not self.spec.has_table(tool.table):
                continue
            table = self.spec.table(tool.table)
            if tool.kind == "insert" and isinstance(call.result, dict):
                keys = [c.name for c in table.primary_key]
                if len(keys) == 1 and keys[0] in call.result:
                    made.add((table.name, call.result[keys[0]]))
            life = table.lifecycle
            if tool.kind != "update" or tool.key is None or life is None:
                continue
            if (table.name, call.args.get(tool.key)) in made and call.args.get(life.column) in set(
                life.inactive_values
            ):
                self.add(
                    "undone_in_task",
                    f"{table.name} {call.args.get(tool.key)!r} is created and then set to "
                    f"{life.column} {call.args.get(life.column)!r} in the same task",
                )

    def _twice(self) -> None:
        """No two created records of a task described with the same words."""
        seen: dict[tuple[str, tuple[str, ...]], int] = {}
        for n, sub in enumerate(self.pkg.task.sub_goals, 1):
            tool = self.tools.get(sub.ask.tool) if sub.ask is not None else None
            if sub.ask is None or tool is None or tool.kind != "insert":
                continue
            table = self.spec.table(tool.table)
            words = tuple(
                sorted(
                    f"{c}={v}"
                    for c, v in sub.ask.values.items()
                    if isinstance(v, str)
                    and " " in v
                    and (column := _column(table, c)) is not None
                    and column.enum is None
                )
            )
            if not words:
                continue
            first = seen.setdefault((tool.name, words), n)
            if first != n:
                self.add(
                    "repeated_request",
                    f"sub-goal {n} creates another {table.name} described as sub-goal "
                    f"{first}'s ({', '.join(words)})",
                )

    def _calculation(self, n: int, rule: Rule, stated: set[str]) -> None:
        """A trigger keyed on a calculation the user did not make."""
        if rule.repair is None or rule.repair.column in stated:
            return
        self.add(
            "calculation_trigger",
            f"sub-goal {n}: a reactive trigger reacts to {rule.id}, a calculation of "
            f"{rule.repair.column} the user never stated (the agent's own error)",
        )

    def _alternative(
        self, n: int, rule: Rule | None, before: Ask, after: Ask, rows: _OriginRows | None
    ) -> None:
        table = self._table_of(after.tool)
        for col, value in after.values.items():
            old = before.values.get(col)
            if old is None or old == value or table is None:
                continue
            column = _column(table, col)
            if column is not None and is_time_column(column):
                self.add(
                    "restated_time",
                    f"sub-goal {n}: after {rule.id if rule else 'a refusal'} the user restates "
                    f"{col} {old!r} as {value!r}",
                )
        if (
            before.target is not None
            and after.target is not None
            and after.target != before.target
            and (rows is None or rows.same(before.target, after.target) is False)
        ):
            self.add(
                "replaced_record",
                f"sub-goal {n}: the record to act on changes from {_named(before.target)} to "
                f"{_named(after.target)} after {rule.id if rule else 'a refusal'}",
            )
        for col, ref in after.refs.items():
            old_ref = before.refs.get(col)
            if old_ref is None or old_ref == ref:
                continue
            if self._swap(n, rule, old_ref, ref, rows) or rows is None or rule is None:
                continue
            self._intent(n, rule, old_ref, ref, rows)

    def _swap(
        self, n: int, rule: Rule | None, old: RowRef, new: RowRef, rows: _OriginRows | None
    ) -> bool:
        """Another row of a table whose rows say what the thing is (``kind_table``)."""
        if old.table != new.table or not self.spec.has_table(old.table):
            return False
        if not kind_table(self.spec.table(old.table)):
            return False
        if rows is not None and rows.same(old, new) is True:
            return True
        self.add(
            "category_swap",
            f"sub-goal {n}: after {rule.id if rule else 'a refusal'} the user accepts "
            f"{_named(new)} instead of {_named(old)}, another kind of thing",
        )
        return True

    def _intent(self, n: int, rule: Rule, old: RowRef, new: RowRef, rows: _OriginRows) -> None:
        """An alternative record must agree with the one asked for on what defines the request."""
        if old.table != new.table or not self.spec.has_table(old.table):
            return
        a, b = rows.one(old), rows.one(new)
        if a is None or b is None:
            return
        table = self.spec.table(old.table)
        tested = tested_words(rule, key_names(self.spec))
        differ = [
            c
            for c in intent_columns(table)
            if c not in tested and c in a and c in b and a[c] != b[c]
        ]
        if differ:
            shown = ", ".join(f"{c} {a[c]!r} -> {b[c]!r}" for c in differ[:3])
            self.add(
                "changed_intent",
                f"sub-goal {n}: the alternative {_named(new)} differs from {_named(old)} on "
                f"what defines the request ({shown})",
            )

    def _terminal(self) -> None:
        """A procedure named for a status change writes that status."""
        writes = [c for c in self.pkg.witness if c.ok and not c.tool.startswith("query_")]
        for n, sub in enumerate(self.pkg.task.sub_goals, 1):
            ask = sub.ask
            if ask is None:
                continue
            tool = self.tools.get(ask.tool)
            if tool is None or tool.kind != "update":
                continue
            want = status_of_procedure(self.spec.table(tool.table), sub.title)
            if want is None:
                continue
            col, value = want
            asks = [ask] + [fb.then for fb in sub.fallbacks if fb.then is not None]
            if all(a.values.get(col) == value for a in asks if a.tool == ask.tool):
                continue
            if any(c.tool == ask.tool and c.args.get(col) == value for c in writes):
                continue
            self.add(
                "terminal_without_status",
                f"sub-goal {n} ({sub.title}): the request does not set {col} = {value!r}",
            )

    def _noops(self, env: Environment, origin: bytes) -> None:
        """An accepted update whose alternative value is the one the record already has."""
        thens = [
            (n, fb.then, sub.ask)
            for n, sub in enumerate(self.pkg.task.sub_goals, 1)
            for fb in sub.fallbacks
            if fb.then is not None and sub.ask is not None and fb.then.target is not None
        ]
        if not thens:
            return
        env.restore(origin)
        for call in self.pkg.witness:
            tool = env.tools.get(call.tool)
            if call.ok and tool is not None and tool.kind == "update" and tool.key is not None:
                row = _row(env, tool.table, tool.key, call.args.get(tool.key))
                for n, then, ask in thens:
                    if then.tool != call.tool or row is None:
                        continue
                    for col, value in then.values.items():
                        if (
                            ask.values.get(col) != value
                            and call.args.get(col) == value
                            and row.get(col) == value
                        ):
                            self.add(
                                "noop_alternative",
                                f"sub-goal {n}: the user accepts {col} {value!r}, the value "
                                "the record already has",
                            )
            env.call(call.tool, call.args)

    def _table_of(self, tool: str) -> Table | None:
        found = self.tools.get(tool)
        # a procedural tool writes several tables and names none
        return self.spec.table(found.table) if found is not None and found.table else None


class _OriginRows:
    """Records as they are at s_origin, looked up by the match a request names them with."""

    def __init__(self, spec: DomainSpec, env: Environment, origin: bytes) -> None:
        self.spec = spec
        self.env = env
        self.origin = origin
        self._restored = False

    def one(self, ref: RowRef) -> dict[str, Any] | None:
        """The one row ``ref`` names at s_origin (parents resolved first), or None."""
        if not self.spec.has_table(ref.table):
            return None
        match: dict[str, Any] = {}
        table = self.spec.table(ref.table)
        for col, value in ref.match.items():
            if isinstance(value, RowRef):
                column = _column(table, col)
                parent = self.one(value)
                if column is None or column.references is None or parent is None:
                    return None
                value = parent.get(column.references.split(".")[1])
            match[col] = value
        if not self._restored:
            self.env.restore(self.origin)
            self._restored = True
        if ref.prefer is not None:
            found = self.env.call(f"query_{ref.table}", preference_args(match, ref.prefer))
            return best_in(found.result, ref.prefer) if found.ok else None
        result = self.env.call(f"query_{ref.table}", match)
        rows = result.result.get("rows") if result.ok and isinstance(result.result, dict) else None
        return rows[0] if rows and len(rows) == 1 else None

    def same(self, a: RowRef, b: RowRef) -> bool | None:
        """Whether two refs name the same record (None when either names none)."""
        if a == b:
            return True
        ra, rb = self.one(a), self.one(b)
        if ra is None or rb is None or a.table != b.table:
            return None
        keys = [c.name for c in self.spec.table(a.table).primary_key] or list(ra)
        return all(ra.get(k) == rb.get(k) for k in keys)


def named_column(
    table: Table, title: str, parameters: Collection[str], decided: Collection[str] = ()
) -> str | None:
    """The column an update procedure's name is about ("Change Sailing" on bookings:
    ``sailing_code``): the one parameter a word of the name after its verb names, the table's
    own noun aside. None when the name names none, or several."""
    nouns = {w.removesuffix("s") for w in table.name.split("_")}
    words = {w.removesuffix("s") for w in _WORD.findall(title.lower())[1:]} - nouns
    hits = [
        c.name
        for c in table.columns
        if c.name in parameters
        and c.name not in decided
        and c.updatable
        and not c.primary_key
        and words & {w.removesuffix("s") for w in c.name.split("_")}
    ]
    return hits[0] if len(hits) == 1 else None


def _thens(sub: SubGoal) -> list[Ask]:
    return [fb.then for fb in sub.fallbacks if fb.then is not None]


def _row(env: Environment, table: str, key: str, value: Any) -> dict[str, Any] | None:
    result = env.call(f"query_{table}", {key: value})
    rows = result.result.get("rows") if result.ok and isinstance(result.result, dict) else None
    return rows[0] if rows else None


def _column(table: Table, name: str) -> Column | None:
    return next((c for c in table.columns if c.name == name), None)


def _named(ref: RowRef) -> str:
    parts = [f"{k} {v!r}" for k, v in ref.match.items() if not isinstance(v, RowRef)]
    return f"{ref.table} ({', '.join(parts) or 'by its parent'})"


def lint_package(
    spec: DomainSpec,
    tools: Mapping[str, ToolSpec],
    pkg: TaskPackage,
    env: Environment | None = None,
    origin: bytes | None = None,
) -> list[LintFinding]:
    """The semantic lint of one package.

    Args:
        spec: The package's domain spec.
        tools: Its tools by name.
        pkg: The package.
        env: An environment of the domain; when given with ``origin``, records are read at
            s_origin (alternatives that change intent) and the witness is replayed (no-op
            alternatives). It is left in the replayed state.
        origin: The s_origin image.

    Returns:
        The findings, in the order of the sub-goals.
    """
    return _PackageLint(spec, tools, pkg).run(env, origin)


def normalised_text(text: str) -> str:
    """A task text with case, digits-free whitespace and punctuation folded, for repeats."""
    return " ".join(_WORD.findall(text.lower()))


def repeated_texts(packages: Iterable[TaskPackage]) -> int:
    """How many packages repeat the (normalised) task text of an earlier one on another
    origin: allowed (the same request on another starting state is another task), and
    ``report`` says how many."""
    seen: dict[str, set[str]] = {}
    count = 0
    for pkg in packages:
        origins = seen.setdefault(normalised_text(pkg.task_description), set())
        count += bool(origins) and pkg.origin not in origins
        origins.add(pkg.origin)
    return count


def text_repeats(packages: Iterable[TaskPackage]) -> list[dict[str, Any]]:
    """Every (normalised) task text made more than once, largest group first: ``{"text"
    (the first request, to tell them apart), "packages": [ids], "state_pairs": distinct (s_origin, s_target) pairs, "differ": True
    when no two of its packages share a state pair}``. A repeat whose state pairs all differ
    is another task under the same words (allowed, and said); one that shares a pair is the
    same task twice (``repeated_text`` when the origin is shared too)."""
    groups: dict[str, list[TaskPackage]] = {}
    for pkg in packages:
        groups.setdefault(normalised_text(pkg.task_description), []).append(pkg)
    repeats = sorted((g for g in groups.values() if len(g) > 1), key=lambda g: (-len(g), g[0].id))
    out: list[dict[str, Any]] = []
    for group in repeats:
        pairs = {(p.origin, p.target) for p in group}
        out.append(
            {
                "text": group[0].task.sub_goals[0].request[:160],
                "packages": [p.id for p in group],
                "state_pairs": len(pairs),
                "differ": len(pairs) == len(group),
            }
        )
    return out


def lint_dataset(packages: Iterable[TaskPackage]) -> list[LintFinding]:
    """Dataset-wide findings: a task text made twice on the same origin, and a cast skewed
    toward one user.

    The same (normalised) text on the same s_origin is the same task asked twice, whatever the
    witness did (:func:`repeated_texts` counts the repeats on other origins, which are allowed).
    The cast is skewed when one user is in more than :data:`CAST_SKEW` times a uniform share of
    the tasks of the standing cast (:func:`standing_cast`, with at least :data:`MIN_CAST_TASKS`
    such tasks)."""
    found: list[LintFinding] = []
    first: dict[tuple[str, str], str] = {}
    packages = list(packages)
    for pkg in packages:
        key = (normalised_text(pkg.task_description), pkg.origin)
        seen = first.setdefault(key, pkg.id)
        if seen != pkg.id:
            found.append(
                LintFinding(
                    pkg.id, "repeated_text", f"the task text of {seen!r} on the same origin"
                )
            )
    found += _skew(standing_cast(packages))
    return found


def standing_cast(packages: Iterable[TaskPackage]) -> Counter[str]:
    """Tasks per user of the standing cast: the users with tasks on at least two origins and
    a fifth of them (a key drawn for one scene can recur by chance in another).

    A user the Set Designer made for one scene can only be drawn in that scene's unit, so
    comparing it with users present in every scene says nothing about balance; when the
    dataset has a single origin every user counts."""
    users: Counter[str] = Counter()
    origins: dict[str, set[str]] = {}
    for pkg in packages:
        user = pkg.user_profile.user_id
        users[user] += 1
        origins.setdefault(user, set()).add(pkg.origin)
    scenes = len({o for seen in origins.values() for o in seen})
    if scenes < 2:
        return users
    least = max(2, scenes // 5)
    return Counter({u: n for u, n in users.items() if len(origins[u]) >= least})


def _skew(users: Mapping[str, int]) -> list[LintFinding]:
    total = sum(users.values())
    if total < MIN_CAST_TASKS or len(users) < 2:
        return []
    uniform = total / len(users)
    return [
        LintFinding(
            "",
            "skewed_cast",
            f"user {user!r} is in {count} of {total} tasks ({count / uniform:.1f}x a uniform "
            f"share of {len(users)} users)",
        )
        for user, count in sorted(users.items())
        if count > CAST_SKEW * uniform
    ]
