"""Instance grounding and execution filtering of task-template paths (AgentSkiller sections
3.15-3.16).

A template path (``_toolgraph``) names tools; grounding gives every call concrete arguments
for one user, and execution runs the calls on the environment itself (our "cached executor":
every call is a real, deterministic call on the spec's SQLite state). A grounded path is kept
only when every call is accepted, so the path reaches its terminal state.

- **Sampling mode** (one domain, relationship-first): the user is drawn from the actor table;
  an argument bound by the template takes the id an earlier call returned; a foreign key or an
  update's key takes a row related to the user (reached from it through foreign keys) when
  there is one, else any row; enums and other columns take a value of their domain (an enum
  member, a value the column already holds; a fresh one when the column is unique). An update
  changes one more column (an enum member other than the current one first).
- **Creation mode** (fused domains, whose users may have no rows yet in one service): a foreign
  key with no related row gets one, written by that table's insert tool (grounded the same way,
  two levels deep at most) before the call that needs it; the whole path runs inside a
  savepoint (the origin image) and is rolled back after it, kept or not.

An update that retires a row (its lifecycle column set to an inactive value) never acts on
the row the path's own insert made: a task that makes a record and then cancels it undoes its
own work, which the task lint refuses (``undone_in_task``). It takes one of the user's earlier
live rows instead (a row creation mode wrote as setup counts as earlier: it stands for the
user's history); a user who has none is passed over like one the path cannot be grounded for.
So a path whose only completion undoes itself (under a quota of one, "join, then finish") is
filtered here, before the ``tasks`` stage spends attempts on it.

A failed path is classified by its first rejected call: ``policy_violation`` (a rule's trigger
rejected it), ``invalid_entity_data`` (the arguments or rows broke the schema: a missing or
malformed value, a record not found, a CHECK, FK, NOT NULL or UNIQUE constraint) or
``spec_bug`` (the spec itself failed: an internal or database error, an unknown tool or
argument, a binding whose producer returned no id). A path that cannot be grounded at all (no
row or value for a required argument) counts as not grounded.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Literal

from veritask._util import derive_seed
from veritask.blueprint._toolgraph import TaskTemplate
from veritask.env import CompiledDomain, Environment, ToolError
from veritask.policy import DomainSpec, Param, ToolSpec, actor_table

Mode = Literal["sampling", "creation"]
FAILURE_KINDS = ("policy_violation", "invalid_entity_data", "spec_bug")
SPEC_BUG_CODES = frozenset(
    {
        "DATABASE_ERROR",
        "INTERNAL_ERROR",
        "UNKNOWN_TOOL",
        "UNKNOWN_ARGUMENT",
        "NOT_WRITABLE",
        "TIME_LIMIT_EXCEEDED",
    }
)
MAX_DEPTH = 2
"""Levels of parent rows creation mode may write for one argument."""
SETUP_TRIES = 4
"""Argument draws creation mode tries for one needed row."""
Json = dict[str, Any]


def classify(error: ToolError | None) -> str:
    """The failure kind of a rejected call (see the module docstring)."""
    if error is None:
        return "spec_bug"
    if error.violated_rule:
        return "policy_violation"
    return "spec_bug" if error.code in SPEC_BUG_CODES else "invalid_entity_data"


class _Ungroundable(Exception):
    """No value exists for a required argument."""


@dataclass
class PathOutcome:
    """One grounded (or ungroundable) path and what executing it did."""

    template: str
    tools: list[str]
    actor: Any
    calls: list[Json] = field(default_factory=list)
    """``{"tool", "args", "setup"}`` per executed call (``setup``: a row creation mode wrote)."""
    grounded: bool = True
    kept: bool = False
    failure: str | None = None
    detail: str = ""

    def to_json(self) -> Json:
        """A JSON-ready dict."""
        return dict(self.__dict__)


@dataclass
class FilterReport:
    """Grounding and filtering of one spec's template paths."""

    domain: str
    mode: Mode
    paths: int = 0
    grounded: int = 0
    kept: int = 0
    failures: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FAILURE_KINDS, 0))
    outcomes: list[PathOutcome] = field(default_factory=list)

    @property
    def kept_share(self) -> float:
        """Kept paths over grounded paths (0 when none was grounded)."""
        return self.kept / self.grounded if self.grounded else 0.0

    def add(self, outcome: PathOutcome) -> None:
        """Count one outcome."""
        self.outcomes.append(outcome)
        self.paths += 1
        self.grounded += int(outcome.grounded)
        self.kept += int(outcome.kept)
        if outcome.failure is not None:
            self.failures[outcome.failure] += 1

    def to_json(self, outcomes: bool = False) -> Json:
        """Counts (and every outcome when asked)."""
        data: Json = {
            "domain": self.domain,
            "mode": self.mode,
            "paths": self.paths,
            "grounded": self.grounded,
            "kept": self.kept,
            "filtered": self.grounded - self.kept,
            "kept_share": round(self.kept_share, 4),
            "failures": dict(self.failures),
        }
        if outcomes:
            data["outcomes"] = [o.to_json() for o in self.outcomes]
        return data


def _rows_of(result: Any) -> list[Json]:
    """The rows a call returned (a query's ``rows``, or the written row)."""
    if isinstance(result, dict):
        rows = result.get("rows")
        if isinstance(rows, list):
            return [r for r in rows if isinstance(r, dict)]
        return [result]
    return []


class _Grounder:
    """Grounds and runs one path at a time on one environment."""

    def __init__(self, spec: DomainSpec, env: Environment, mode: Mode, rng: random.Random):
        self.spec = spec
        self.env = env
        self.mode = mode
        self.rng = rng
        self.actor = actor_table(spec)
        self.tools = env.tools

    # -- what rows are the user's -------------------------------------------------------

    def _related(self, table: str, row: Json, user: Any, depth: int = 3) -> bool:
        """True when ``row`` reaches ``user`` through foreign keys (``depth`` hops)."""
        if table == self.actor:
            return bool(row.get(self._key(table)) == user)
        if depth == 0:
            return False
        for col in self.spec.table(table).columns:
            if not col.references or row.get(col.name) is None:
                continue
            parent, key = col.references.split(".")
            if parent == self.actor:
                if row[col.name] == user:
                    return True
                continue
            found = [r for r in self.env.rows(parent) if r.get(key) == row[col.name]]
            if found and self._related(parent, found[0], user, depth - 1):
                return True
        return False

    def _live(self, table: str, rows: list[Json]) -> list[Json]:
        """The rows not in an inactive lifecycle value (all rows when none is live)."""
        cycle = self.spec.table(table).lifecycle
        if cycle is None:
            return rows
        live = [r for r in rows if r.get(cycle.column) not in cycle.inactive_values]
        return live or rows

    def _key(self, table: str) -> str:
        return self.spec.table(table).primary_key[0].name

    def _pick_row(self, table: str, user: Any, depth: int, calls: list[Json]) -> Json:
        """A row of ``table`` for ``user``: related first; in creation mode a new one when
        none is related; else any row."""
        rows = self._live(table, self.env.rows(table))
        mine = [r for r in rows if self._related(table, r, user)]
        if mine:
            return self.rng.choice(mine)
        insert = self.tools.get(f"insert_{table}")
        owned = any(c.references for c in self.spec.table(table).columns)
        if self.mode == "creation" and insert is not None and owned and depth < MAX_DEPTH:
            return self._create(insert, user, depth, calls)
        if not rows:
            raise _Ungroundable(f"no row of {table}")
        return self.rng.choice(rows)

    def _create(self, insert: ToolSpec, user: Any, depth: int, calls: list[Json]) -> Json:
        """A new row for ``user`` by ``insert``: up to ``SETUP_TRIES`` draws of its arguments
        (a rejected draw changes nothing); the accepted call joins the instance as setup."""
        error = None
        for _ in range(SETUP_TRIES):
            args = self._args(insert, {}, user, depth + 1, calls)
            result = self.env.call(insert.name, args)
            if result.ok:
                calls.append({"tool": insert.name, "args": args, "setup": True})
                return _rows_of(result.result)[0]
            error = result.error
        raise _Failed(classify(error), f"setup {insert.name}: {error}")

    # -- argument values ------------------------------------------------------------------

    def _value(self, tool: ToolSpec, param: Param, user: Any, depth: int, calls: list[Json]) -> Any:
        table = self.spec.table(tool.table)
        col = table.column(param.column) if param.column else None
        if param.role == "key":
            return self._pick_row(tool.table, user, depth, calls)[param.column or "id"]
        if col is not None and col.references:
            parent, key = col.references.split(".")
            if parent == self.actor:
                return user
            return self._pick_row(parent, user, depth, calls)[key]
        if param.enum:
            return self.rng.choice(list(param.enum))
        if col is None:
            raise _Ungroundable(f"{tool.name}.{param.name} has no column")
        held = sorted({r[col.name] for r in self.env.rows(tool.table)} - {None}, key=repr)
        if col.unique or not held:
            return self._fresh(param, col.type)
        return self.rng.choice(held)

    def _fresh(self, param: Param, sql_type: str) -> Any:
        if sql_type == "TEXT":
            return f"{param.name.replace('_', ' ')} {self.rng.randrange(10**6)}"
        low = param.minimum if param.minimum is not None else 1
        high = param.maximum if param.maximum is not None else low + 100
        number = self.rng.randint(low, max(low, high))
        return float(number) if sql_type == "REAL" else number

    def _change(self, tool: ToolSpec, args: Json, user: Any) -> None:
        """Add one column an update changes (an enum member first)."""
        key = tool.key or ""
        row = next((r for r in self.env.rows(tool.table) if r.get(key) == args.get(key)), {})
        values = [p for n, p in tool.params.items() if p.role == "value" and n not in args]
        values.sort(key=lambda p: (p.enum is None, p.name))
        for param in values:
            if param.enum:
                options = [v for v in param.enum if v != row.get(param.column or "")]
                if options:
                    args[param.name] = self.rng.choice(options)
                    return
            elif not self.spec.table(tool.table).column(param.column or param.name).references:
                args[param.name] = self._value(tool, param, user, MAX_DEPTH, [])
                return

    def _args(
        self,
        tool: ToolSpec,
        bound: Json,
        user: Any,
        depth: int,
        calls: list[Json],
    ) -> Json:
        if tool.kind == "query":
            fk = [
                n
                for n, p in tool.params.items()
                if p.role == "eq"
                and p.column
                and (self.spec.table(tool.table).column(p.column).references or "").startswith(
                    f"{self.actor}."
                )
            ]
            if tool.table == self.actor:
                return {self._key(self.actor): user}
            return {fk[0]: user} if fk else {}
        args = dict(bound)
        for name in self._asked(tool):
            if name not in args:
                args[name] = self._value(tool, tool.params[name], user, depth, calls)
        if tool.kind == "update":
            self._change(tool, args, user)
        return args

    def _asked(self, tool: ToolSpec) -> list[str]:
        """The arguments a call gives: the procedure's parameters (the required ones when no
        procedure stands for the tool), minus what the agent decides."""
        tx = next((t for t in self.spec.transactions if t.tool == tool.name), None)
        if tx is None:
            return list(tool.required)
        names = [n for n in tx.parameters if n in tool.params and n not in tx.agent_decides]
        return [*names, *(n for n in tool.required if n not in names)]

    # -- one path -------------------------------------------------------------------------

    def run(self, template: TaskTemplate, user: Any) -> PathOutcome:
        """Ground and execute ``template`` for ``user`` from the current state."""
        outcome = PathOutcome(template.id, list(template.tools), user)
        results: dict[str, list[Json]] = {}
        made: set[tuple[str, Any]] = set()
        try:
            for tool_name in template.tools:
                tool = self.tools[tool_name]
                bound = self._bound(template, tool_name, results, user)
                args = self._args(tool, bound, user, 0, outcome.calls)
                if tool.kind == "update" and (tool.table, args.get(tool.key or "")) in made:
                    self._not_undone(tool, args, user, made)
                outcome.calls.append({"tool": tool_name, "args": args, "setup": False})
                result = self.env.call(tool_name, args)
                if not result.ok:
                    raise _Failed(classify(result.error), f"{tool_name}: {result.error}")
                results[tool_name] = _rows_of(result.result)
                if tool.kind == "insert":
                    key = self._key(tool.table)
                    made.update((tool.table, r.get(key)) for r in results[tool_name])
        except _Ungroundable as exc:
            outcome.grounded, outcome.detail = False, str(exc)
            return outcome
        except _Failed as exc:
            outcome.failure, outcome.detail = exc.kind, exc.detail
            return outcome
        outcome.kept = True
        return outcome

    def _not_undone(
        self, tool: ToolSpec, args: Json, user: Any, made: set[tuple[str, Any]]
    ) -> None:
        """Point an update that retires the row this path's own insert made (the lifecycle
        column set to an inactive value: cancel, drop, finish) at one of the user's earlier
        live rows instead: a task that makes a record and then retires it undoes its own work.
        Raises ``_Ungroundable`` when the user has no earlier live row (the path then goes to
        the next user; none at all, and it is not kept)."""
        life = self.spec.table(tool.table).lifecycle
        column = next(
            (n for n, p in tool.params.items() if life and (p.column or n) == life.column), None
        )
        if life is None or column is None or args.get(column) not in life.inactive_values:
            return
        key = tool.key or ""
        earlier = [
            r
            for r in self.env.rows(tool.table)
            if r.get(life.column) not in life.inactive_values
            and (tool.table, r.get(key)) not in made
            and self._related(tool.table, r, user)
        ]
        if not earlier:
            raise _Ungroundable(f"{tool.name} could only retire the row this path made")
        args[key] = self.rng.choice(earlier)[key]

    def _bound(
        self, template: TaskTemplate, tool_name: str, results: dict[str, list[Json]], user: Any
    ) -> Json:
        """The arguments of ``tool_name`` the template binds to earlier calls' results."""
        tool = self.tools[tool_name]
        out: Json = {}
        for step, arg, producer in template.bindings:
            if step != tool_name:
                continue
            param = tool.params[arg]
            column = self._source_column(tool, param)
            rows = results.get(producer, [])
            table = self.tools[producer].table
            rows = self._live(table, rows)
            mine = [r for r in rows if self._related(table, r, user)] or rows
            values = [r[column] for r in mine if r.get(column) is not None]
            if not values:
                raise _Ungroundable(f"{producer} found no {column} for {tool_name}.{arg}")
            out[arg] = values[0] if len(values) == 1 else self.rng.choice(values)
        return out

    def _source_column(self, tool: ToolSpec, param: Param) -> str:
        """The column of the producer's rows that feeds ``param``."""
        if param.role == "key":
            return param.column or "id"
        col = self.spec.table(tool.table).column(param.column or param.name)
        return col.references.split(".")[1] if col.references else col.name


class _Failed(Exception):
    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


USER_DRAWS = 4
"""Users tried for one instance before the path counts as not grounded (relationship-first:
a user without the rows the path needs is passed over)."""


def _instance(
    grounder: _Grounder, template: TaskTemplate, users: list[Any], origin: bytes
) -> PathOutcome:
    """One grounded instance of ``template``: the first of ``USER_DRAWS`` users for whom it
    can be grounded, executed; or an ungrounded outcome."""
    outcome = PathOutcome(template.id, list(template.tools), None, grounded=False)
    order = list(users)
    grounder.rng.shuffle(order)
    for user in order[:USER_DRAWS]:
        grounder.env.restore(origin)
        outcome = grounder.run(template, user)
        if outcome.grounded:
            return outcome
    return outcome


def ground_paths(
    spec: DomainSpec,
    templates: list[TaskTemplate],
    mode: Mode = "sampling",
    seed: int = 0,
    per_path: int = 1,
) -> FilterReport:
    """Ground each template ``per_path`` times (a user and values drawn from ``seed``), run
    each instance on a fresh copy of the spec's seed state, keep those that reach their
    terminal state, and classify the rest. Deterministic in ``seed``."""
    env = Environment(CompiledDomain.from_spec(spec))
    origin = env.image()
    actor = actor_table(spec)
    key = spec.table(actor).primary_key[0].name
    users = [r[key] for r in env.rows(actor)]
    report = FilterReport(spec.name, mode)
    try:
        for template in templates:
            for k in range(per_path):
                rng = random.Random(derive_seed(spec.name, seed, template.id, k))
                env.restore(origin)  # the savepoint: every instance starts from the origin
                report.add(_instance(_Grounder(spec, env, mode, rng), template, users, origin))
    finally:
        env.close()
    return report


__all__ = ["FAILURE_KINDS", "FilterReport", "Mode", "PathOutcome", "classify", "ground_paths"]
