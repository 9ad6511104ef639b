"""The environment session: atomic tools over an in-memory SQLite database with compiled policy."""

from __future__ import annotations

import functools
import math
import operator
import re
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

from veritask.env._args import (
    fast_checks,
    plain_params,
    validate_arguments,
)
from veritask.env._build import build_image
from veritask.env._datacalls import INTERRUPTED, in_data_calls, retry_interrupted
from veritask.env._fastpath import compile_checks, compile_row
from veritask.env._image import read_database
from veritask.env._notebook import bind_new_old
from veritask.env._procedural import register_functions
from veritask.env._procrun import run_procedure
from veritask.env._result import ToolError, ToolResult, accepted, failure, schema_error
from veritask.env._state import (
    Layout,
    Row,
    Snapshot,
    StateDiff,
    Tracked,
    diff,
    diff_tracked,
    read_tracked,
    rebase,
)
from veritask.policy import (
    RAISE_PATTERN,
    DomainSpec,
    Rule,
    ToolSpec,
    build_tools,
    compile_sql,
    quote_ident,
)
from veritask.policy._procedure import CompiledProcedure, compile_procedures
from veritask.policy._tools import DEFAULT_LIMIT

Mode = Literal["read", "write", "admin"]

DEFAULT_CALL_TIME_LIMIT = 5.0
"""Seconds one ``Environment.call`` may run by default; ordinary calls take microseconds."""
_PROGRESS_OPCODES = 10_000  # virtual-machine steps between two deadline checks
_monotonic = time.monotonic
DatabaseError = sqlite3.Error
"""What SQLite raises; exported so callers above the engine need not import sqlite3."""
WriteTarget = tuple[Callable[[Row], dict[str, Any]], str | None]
_WRITE_ACTIONS = {sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE}
_ALWAYS_OK = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    sqlite3.SQLITE_RECURSIVE,
}
_TXN = {sqlite3.SQLITE_SAVEPOINT, sqlite3.SQLITE_TRANSACTION}
_CACHED_STATEMENTS = 512
"""Prepared statements kept per connection (SQLite's default cache holds 128): an imported
domain's procedures alone run about 85 distinct statements (τ²-bench airline), and with the
engine's own (queries, writes, tracking, diffs) a smaller cache would evict and re-prepare
statements, the authorizer consulted again for each, on every task."""


@dataclass(frozen=True)
class CompiledDomain:
    """Everything derived once from a spec and shared by all its environments."""

    spec: DomainSpec
    tools: dict[str, ToolSpec]
    layout: Layout
    seed: bytes
    read_only: frozenset[str]
    columns_sql: dict[str, str]
    returning: frozenset[str] = frozenset()
    """Tables no trigger writes to: a write's ``RETURNING`` clause is the stored row there."""
    plain: dict[str, dict[str, type]] = field(default_factory=dict)
    """Per tool, the parameters checked by type alone (``plain_params``)."""
    procedures: dict[str, CompiledProcedure] = field(default_factory=dict)
    """The spec's procedural tools, compiled (docs/design/0043-procedural-tools.md)."""

    @classmethod
    def from_spec(cls, spec: DomainSpec) -> CompiledDomain:
        """Compile a spec: tools, diff layout and the seed database image."""
        triggers = compile_sql(spec).triggers
        tools = build_tools(spec)
        return cls(
            spec=spec,
            tools=tools,
            layout=Layout.from_spec(spec),
            seed=build_image(spec),
            read_only=frozenset(t.name for t in spec.tables if not t.writable),
            columns_sql={
                t.name: ", ".join(quote_ident(c) for c in t.column_names) for t in spec.tables
            },
            returning=frozenset(
                t.name for t in spec.tables if not _written_by_triggers(t.name, triggers)
            ),
            plain={name: plain_params(tool) for name, tool in tools.items()},
            procedures=compile_procedures(spec),
        )

    @functools.cached_property
    def row_dicts(self) -> dict[str, Callable[[Row], dict[str, Any]]]:
        """Per table, a function turning one of its rows into a dict by column name."""
        return {name: compile_row(t.columns) for name, t in self.layout.tables.items()}

    @functools.cached_property
    def write_targets(self) -> dict[str, WriteTarget]:
        """Per table, its row-to-dict function and the statement reading a written row back by
        rowid (None where the write's ``RETURNING`` clause is the stored row)."""
        return {
            name: (self.row_dicts[name], None if name in self.returning else t.by_rowid_sql)
            for name, t in self.layout.tables.items()
        }


def _written_by_triggers(table: str, triggers: str) -> bool:
    """True when some trigger body may insert into, update or replace rows of ``table``.

    Conservative on purpose (any ``UPDATE``/``INTO``/``REPLACE`` naming the table counts): a
    false positive only costs a read-back ``SELECT``; a false negative would return a row that an
    AFTER trigger changed later in the same statement (``RETURNING`` does not see that).
    """
    name = re.escape(table)
    pattern = (
        rf"\b(?:UPDATE|INTO|REPLACE)\s+(?:OR\s+\w+\s+)?(?:[\w\"`\[\]]+\s*\.\s*)?"
        rf"[\"`\[]?{name}(?![\w$])"
    )
    return re.search(pattern, triggers, re.IGNORECASE) is not None


class Environment:
    """A session over one in-memory SQLite database compiled from a DomainSpec.

    Agents act only through ``call``: ``query_<t>`` reads, ``insert_<t>`` / ``update_<t>`` writes,
    no delete. Writes run inside a savepoint; a rejected write is rolled back and leaves the
    database byte-identical. SQLite's authorizer enforces that reads do not write, that nothing
    deletes, and that read-only tables change only through the spec's own triggers (effects).
    """

    def __init__(
        self,
        domain: CompiledDomain | DomainSpec,
        state: Snapshot | bytes | None = None,
        *,
        call_time_limit: float | None = DEFAULT_CALL_TIME_LIMIT,
    ) -> None:
        self.domain = (
            domain if isinstance(domain, CompiledDomain) else CompiledDomain.from_spec(domain)
        )
        self.spec = self.domain.spec
        self.call_time_limit = call_time_limit
        """Seconds one ``call`` may run before its statement is interrupted; None for no limit."""
        self._mode: Mode = "admin"
        self._block_deadline = math.inf  # set by ``time_limit`` for every statement in a block
        # the deadline the progress handler enforces right now; None inside a call until the
        # handler first fires there and arms it (see ``_past_deadline``)
        self._deadline: float | None = math.inf
        self._interrupted = False  # the running call had a statement interrupted
        self._conn = sqlite3.connect(
            ":memory:",
            isolation_level=None,
            check_same_thread=False,
            cached_statements=_CACHED_STATEMENTS,
        )
        self._conn.set_authorizer(self._authorize)
        self._conn.set_progress_handler(self._past_deadline, _PROGRESS_OPCODES)
        self._conn.execute("PRAGMA foreign_keys = ON")
        if self.domain.procedures:
            register_functions(self._conn)
        self._cur = self._conn.cursor()  # the write path's statements (one cursor, reused)
        self._sql_cache: dict[tuple[str, tuple[str, ...]], str] = {}
        self._insert_cache: dict[tuple[str, tuple[str, ...]], tuple[str, tuple[str, ...]]] = {}
        self._query_cache: dict[tuple[Any, ...], tuple[str, str, list[str]]] = {}
        self._plans: dict[tuple[str, tuple[Any, ...]], _Plan | None] = {}
        self._mode = "read"
        self.restore(state if state is not None else self.domain.seed)

    # -- lifecycle -------------------------------------------------------------------------

    @classmethod
    def from_file(cls, domain: CompiledDomain | DomainSpec, path: str | Path) -> Environment:
        """An environment whose state is loaded from a SQLite file.

        Raises:
            NotADatabase: The file is not a SQLite database.
        """
        return cls(domain, read_database(path))

    @contextmanager
    def time_limit(self, seconds: float) -> Iterator[None]:
        """Interrupt any statement still running ``seconds`` after entering the block.

        An interrupted write is rolled back like any rejected call and comes back as a
        ``TIME_LIMIT_EXCEEDED`` error whose message says ``interrupted``; the state is left as it
        was. Each call inside the block also keeps its own ``call_time_limit``; whichever
        deadline comes first applies. Meant for specs we did not write (a model-written rule with
        a runaway recursive query).
        """
        previous = self._block_deadline
        self._block_deadline = min(previous, time.monotonic() + seconds)
        self._deadline = self._block_deadline
        try:
            yield
        finally:
            self._block_deadline = previous
            self._deadline = previous

    def _past_deadline(self) -> int:
        """SQLite progress handler: a non-zero answer interrupts the running statement.

        Inside a call the call's own deadline is armed lazily, on the handler's first firing in
        that call, as ``call_time_limit`` from then (capped by a ``time_limit`` block). SQLite
        fires the handler every ``_PROGRESS_OPCODES`` virtual-machine steps of a statement, so a
        call that never runs that many steps (every ordinary call) never reads the clock, and a
        runaway one is armed within one check interval of its start: the limit is counted at
        most one interval late, the same granularity the handler has at the other end.
        """
        now = _monotonic()
        deadline = self._deadline
        if deadline is None:  # the first check in this call
            limit, deadline = self.call_time_limit, self._block_deadline
            if limit is not None and now + limit < deadline:
                deadline = now + limit
            self._deadline = deadline
        if now > deadline:
            self._interrupted = True
            return 1
        return 0

    def close(self) -> None:
        """Close the database connection."""
        self._conn.close()

    def __enter__(self) -> Environment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def tools(self) -> dict[str, ToolSpec]:
        """The tools agents may call, by name."""
        return self.domain.tools

    def openai_tools(self) -> list[dict[str, Any]]:
        """The tools as OpenAI function-tool schemas."""
        return [t.openai_schema() for t in self.domain.tools.values()]

    # -- authorizer ------------------------------------------------------------------------

    def _authorize(
        self, action: int, arg1: str | None, _arg2: str | None, db: str | None, trigger: str | None
    ) -> int:
        if action in _ALWAYS_OK or self._mode == "admin":
            return sqlite3.SQLITE_OK
        if db == "temp":
            return sqlite3.SQLITE_OK
        if action in _WRITE_ACTIONS:
            if self._mode == "read":
                return sqlite3.SQLITE_DENY
            if trigger is None and arg1 in self.domain.read_only:
                return sqlite3.SQLITE_DENY
            return sqlite3.SQLITE_OK
        if action in _TXN and self._mode == "write":
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY

    # -- tool calls ------------------------------------------------------------------------

    def call(self, tool: str, args: Mapping[str, Any] | str | None = None) -> ToolResult:
        """Run one tool call and return its result or a structured error; never raises
        outside ``data_calls``.

        Bad input is refused by argument validation before the database is touched. A write runs
        inside the ``vt_call`` savepoint, which is released on success and rolled back on every
        other path, so a rejected call leaves the state byte-identical. The call runs under
        ``call_time_limit``: a statement still running then is interrupted and the call comes
        back as ``TIME_LIMIT_EXCEEDED`` (inside ``data_calls`` it is retried instead, and raises
        ``CallInterrupted`` when the retries are interrupted too). Anything unforeseen comes back
        as ``INTERNAL_ERROR``, reported only after the savepoint has been rolled back.

        Raises:
            CallInterrupted: Inside ``data_calls`` only: the call and its retries were all
                interrupted.
        """
        result = self._attempt(tool, args)
        error = result.error
        if error is not None and error.code == INTERRUPTED and in_data_calls():
            return self._retry_interrupted(tool, args, error)
        return result

    def _retry_interrupted(
        self, tool: str, args: Mapping[str, Any] | str | None, error: ToolError
    ) -> ToolResult:
        """Run an interrupted call again with longer limits (see ``data_calls``)."""
        limit = self.call_time_limit

        def attempt(seconds: float) -> ToolResult:
            self.call_time_limit = seconds
            return self._attempt(tool, args)

        try:
            expired = _monotonic() > self._block_deadline  # a retry cannot extend a block
            return retry_interrupted(attempt, limit, expired, _tool_label(tool), error)
        finally:
            self.call_time_limit = limit

    def _attempt(self, tool: str, args: Mapping[str, Any] | str | None) -> ToolResult:
        """One try of ``call``: its result, a ``TIME_LIMIT_EXCEEDED`` one included."""
        self._deadline = None  # armed by the progress handler if the call runs long enough
        self._interrupted = False
        try:
            if type(args) is dict and type(tool) is str:  # the fast path, see ``_plan``
                plan = self._plans.get((tool, tuple(args)), _NO_PLAN)
                if plan is _NO_PLAN:
                    plan = self._plan(tool, args)
                if plan is not None and plan.accepts(args):
                    insert = plan.insert
                    if insert is None:
                        return self._run(plan.tool, dict(args))
                    values = insert.values(args)
                    return self._write(plan.tool, insert.sql, values, None, args, insert.target)
            return self._dispatch(tool, args)
        except Exception as exc:  # last resort: the savepoint guard has already rolled back
            return _internal_error(tool, exc)
        finally:
            self._deadline = self._block_deadline

    def _dispatch(self, tool: str, args: Mapping[str, Any] | str | None) -> ToolResult:
        spec = self.domain.tools.get(tool) if isinstance(tool, str) else None
        if spec is None:
            label = _tool_label(tool)
            return failure(
                label,
                "UNKNOWN_TOOL",
                f"unknown tool {label!r}"
                if isinstance(tool, str)
                else f"the tool name must be a string, got {label}",
                hint="Available tools: " + ", ".join(self.domain.tools),
            )
        clean, err = validate_arguments(spec, args, self.spec, self.domain.plain.get(tool))
        if err is not None:
            return ToolResult(tool=tool, ok=False, error=err)
        return self._run(spec, clean)

    def _run(self, spec: ToolSpec, clean: dict[str, Any]) -> ToolResult:
        try:
            if spec.kind == "query":
                return self._query(spec, clean)
            if spec.kind == "insert":
                return self._insert(spec, clean)
            if spec.kind == "update":
                return self._update(spec, clean)
            return run_procedure(self, spec, self.domain.procedures[spec.name], clean)
        except sqlite3.Error as exc:  # a read outside the savepoint failed (e.g. interrupted)
            return ToolResult(tool=spec.name, ok=False, error=schema_error(spec, exc))

    def _plan(self, tool: str, args: dict[Any, Any]) -> _Plan | None:
        """The fast path for this tool and these argument names (in this order), cached."""
        names = tuple(args)
        spec = self.domain.tools.get(tool)
        checks = fast_checks(spec, names) if spec is not None else None
        plan = None
        if spec is not None and checks is not None:
            insert = None
            if spec.kind == "insert":
                table = self.domain.layout.tables[spec.table]
                cols = tuple(c for c in table.columns if c in args)
                insert = _Insert(
                    self._write_sql(spec, cols),
                    _values_in_order(cols),
                    self.domain.write_targets[spec.table],
                )
            plan = _Plan(spec, compile_checks(checks), insert)
        if len(self._plans) < _MAX_PLANS:  # names come from callers: bound what is kept
            self._plans[(tool, names)] = plan
        return plan

    def _columns_sql(self, table: str) -> str:
        return self.domain.columns_sql[table]

    def _as_dict(self, table: str, row: Row) -> dict[str, Any]:
        return dict(zip(self.domain.layout.tables[table].columns, row, strict=True))

    def _query_sql(self, tool: ToolSpec, args: dict[str, Any]) -> tuple[str, str, list[str]]:
        """The row and count statements of a query with these arguments, and the arguments
        they bind in order.

        Cached per tool, set of argument names and ordering, and bounded: the filters are
        written in the tool's parameter order whatever order the arguments came in, so callers
        cannot grow the cache by permuting names, and at most ``_MAX_PLANS`` entries are kept.
        """
        order_by, descending = args.get("order_by"), bool(args.get("descending"))
        key = (tool.name, frozenset(args), order_by, descending)
        found = self._query_cache.get(key)
        if found is None:
            where: list[str] = []
            names: list[str] = []
            for name, p in tool.params.items():
                if p.column is None or name not in args:
                    continue
                op = {"eq": "=", "min": ">=", "max": "<="}[p.role]
                where.append(f"{quote_ident(p.column)} {op} ?")
                names.append(name)
            clause = f" WHERE {' AND '.join(where)}" if where else ""
            table = quote_ident(tool.table)
            order = (
                quote_ident(str(order_by)) + (" DESC" if descending else "") + ", "
                if "order_by" in args
                else ""
            )
            rows_sql = (
                f"SELECT {self._columns_sql(tool.table)} FROM {table}{clause} "
                f"ORDER BY {order}rowid LIMIT ? OFFSET ?"
            )
            found = (rows_sql, f"SELECT count(*) FROM {table}{clause}", names)
            if len(self._query_cache) < _MAX_PLANS:
                self._query_cache[key] = found
        return found

    def _query(self, tool: ToolSpec, args: dict[str, Any]) -> ToolResult:
        rows_sql, count_sql, names = self._query_sql(tool, args)
        params = [args[n] for n in names]
        limit, offset = args.get("limit", DEFAULT_LIMIT), args.get("offset", 0)
        cur = self._cur
        rows = cur.execute(rows_sql, [*params, limit, offset]).fetchall()
        if rows and len(rows) < limit:  # the last page: what precedes it and it are all
            total = offset + len(rows)
        else:
            (total,) = cur.execute(count_sql, params).fetchone()
        result = {
            "rows": list(map(self.domain.row_dicts[tool.table], rows)),
            "total": total,
            "limit": limit,
            "offset": offset,
        }
        return ToolResult(tool=tool.name, ok=True, result=result)

    def _write_sql(self, tool: ToolSpec, cols: tuple[str, ...]) -> str:
        key = (tool.name, cols)
        sql = self._sql_cache.get(key)
        if sql is None:
            table = quote_ident(tool.table)
            if tool.kind == "insert":
                names = ", ".join(quote_ident(c) for c in cols)
                values = ", ".join("?" for _ in cols)
                sql = (
                    f"INSERT INTO {table} ({names}) VALUES ({values})"
                    if cols
                    else f"INSERT INTO {table} DEFAULT VALUES"
                )
            else:
                sets = ", ".join(f"{quote_ident(c)} = ?" for c in cols)
                sql = f"UPDATE {table} SET {sets} WHERE rowid = ?"
            if tool.table in self.domain.returning:
                sql += f" RETURNING {self._columns_sql(tool.table)}"
            self._sql_cache[key] = sql
        return sql

    def _insert(self, tool: ToolSpec, args: dict[str, Any]) -> ToolResult:
        key = (tool.name, tuple(args))
        found = self._insert_cache.get(key)
        if found is None:  # columns in table order, whatever order the arguments came in
            cols = tuple(c for c in self.domain.layout.tables[tool.table].columns if c in args)
            found = self._insert_cache[key] = (self._write_sql(tool, cols), cols)
        sql, cols = found
        return self._write(tool, sql, [args[c] for c in cols], None, args)

    def _update(self, tool: ToolSpec, args: dict[str, Any]) -> ToolResult:
        assert tool.key is not None
        key_value = args.pop(tool.key)
        lookup = self._sql_cache.get((tool.name, ()))
        if lookup is None:
            lookup = self._sql_cache[(tool.name, ())] = (
                f"SELECT rowid, {self._columns_sql(tool.table)} FROM {quote_ident(tool.table)} "
                f"WHERE {quote_ident(tool.key)} = ?"
            )
        found = self._cur.execute(lookup, (key_value,)).fetchone()
        if found is None:
            return failure(
                tool.name,
                "NOT_FOUND",
                f"{tool.table}: no row with {tool.key} = {key_value!r}",
                hint=f"Use query_{tool.table} to find the right {tool.key}.",
            )
        if not args:
            return failure(
                tool.name,
                "NO_CHANGES",
                f"{tool.name}: give at least one column to change",
                hint="Writable: " + ", ".join(n for n in tool.params if n != tool.key),
            )
        rowid, old = found[0], tuple(found[1:])
        cols = tuple(c for c in self.domain.layout.tables[tool.table].columns if c in args)
        values = [args[c] for c in cols] + [rowid]
        return self._write(tool, self._write_sql(tool, cols), values, (rowid, old), args)

    def _write(
        self,
        tool: ToolSpec,
        sql: str,
        values: Sequence[Any],
        old: tuple[int, Row] | None,
        args: dict[str, Any],
        target: WriteTarget | None = None,
    ) -> ToolResult:
        """Run one write and read back the stored row, both inside the ``vt_call`` savepoint.

        Where no trigger writes to the table the statement's ``RETURNING`` clause is the stored
        row; elsewhere (an effect may update the row after the write) it is read back by rowid.

        The savepoint is always the outermost transaction (the connection is in autocommit mode
        between calls), so rolling back undoes exactly this call's work and nothing before it.
        It is released when the write and the read-back succeeded and rolled back on every other
        exit, exceptions of any kind included (a failing ``RELEASE``, a deferred constraint, is
        rolled back too). An open transaction on entry is a broken invariant: it is refused
        rather than nested into. Written inline rather than as a context manager: this runs on
        every write, and the two extra method calls cost a few percent of an insert.
        """
        conn, cur = self._conn, self._cur
        if conn.in_transaction:
            raise RuntimeError("a transaction is already open; refusing to nest vt_call")
        # the table's row-to-dict function and read-back statement (None: RETURNING gives the row)
        as_dict, readback = target if target is not None else self.domain.write_targets[tool.table]
        self._mode = "write"
        try:
            cur.execute("SAVEPOINT vt_call")
            if readback is None:
                row = cur.execute(sql, values).fetchone()
            else:
                cur.execute(sql, values)
                rowid = old[0] if old is not None else cur.lastrowid
                row = cur.execute(readback, (rowid,)).fetchone()
            cur.execute("RELEASE vt_call")
        except BaseException as exc:
            if conn.in_transaction:  # an interrupt may already have rolled everything back
                self._rollback()
            if not isinstance(exc, sqlite3.Error):
                raise
            return ToolResult(tool=tool.name, ok=False, error=self._translate(tool, exc, old, args))
        finally:
            self._mode = "read"
        result = as_dict(row) if row is not None else None
        return accepted(tool.name, result, old is None or row != old[1])

    def _rollback(self) -> None:
        """Roll back the open transaction; the deadline is off meanwhile, so the rollback of an
        interrupted call is never interrupted itself (which would leave it open)."""
        deadline, self._deadline = self._deadline, math.inf
        try:
            self._conn.execute("ROLLBACK")
        finally:
            self._deadline = deadline

    # -- errors ----------------------------------------------------------------------------

    def _translate(
        self, tool: ToolSpec, exc: sqlite3.Error, old: tuple[int, Row] | None, args: dict[str, Any]
    ) -> ToolError:
        text = str(exc)
        m = RAISE_PATTERN.match(text)
        if m is not None:
            try:
                rule = self.spec.rule(m["rule"])
            except KeyError:
                return ToolError(m["code"], m["message"], m["rule"])
            message = rule.message
            detail = self._detail(rule, tool, old, args)
            if self._interrupted:  # the detail ran out of time: the answer depends on the load
                return schema_error(tool, sqlite3.OperationalError("interrupted"))
            if detail:
                message = f"{message} ({detail})"
            return ToolError(rule.code, message, rule.id, rule.hint)
        return schema_error(tool, exc)

    def _detail(
        self, rule: Rule, tool: ToolSpec, old: tuple[int, Row] | None, args: dict[str, Any]
    ) -> str | None:
        """Evaluate a rule's ``detail`` expression for a rejected call."""
        if not rule.detail:
            return None
        old_row = self._as_dict(tool.table, old[1]) if old is not None else None
        try:
            value = self._evaluate(rule.detail, tool, args, old_row)
        except Exception:  # the detail only decorates the message; never lose the rejection
            return None
        return None if value is None else str(value)

    def _evaluate(
        self, expr: str, tool: ToolSpec, args: Mapping[str, Any], old_row: dict[str, Any] | None
    ) -> Any:
        table = self.spec.table(tool.table)
        new_row = {c.name: c.default for c in table.columns} if old_row is None else dict(old_row)
        new_row.update(args)
        sql, params = bind_new_old(expr, new_row, old_row)
        try:
            row = self._conn.execute(f"SELECT {sql}", params).fetchone()
        except sqlite3.Error:
            return None
        return row[0]

    def evaluate(self, expr: str, tool: str, args: Mapping[str, Any]) -> Any:
        """Evaluate an SQL expression over ``NEW`` / ``OLD`` for a prospective call, read-only.

        ``NEW`` is the row the call would write (column defaults, or the current row for an
        update, overlaid with ``args``); ``OLD`` is the current row for an update. Used to compute
        the value a calculation rule expects. Returns None when the expression cannot be evaluated.
        """
        spec = self.domain.tools[tool]
        old_row = None
        if spec.kind == "update" and spec.key is not None and spec.key in args:
            sql = f"SELECT {self._columns_sql(spec.table)} FROM {quote_ident(spec.table)} WHERE {quote_ident(spec.key)} = ?"
            found = self._conn.execute(sql, (args[spec.key],)).fetchone()
            if found is None:
                return None
            old_row = self._as_dict(spec.table, found)
        return self._evaluate(expr, spec, args, old_row)

    # -- state -----------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """The current state (serialized database plus its tracked changes)."""
        return Snapshot(
            self._conn.serialize(), self.domain.layout, read_tracked(self._conn, self.domain.layout)
        )

    def image(self) -> bytes:
        """The serialized database alone (cheaper than ``snapshot`` when only restoring later)."""
        return self._conn.serialize()

    def restore(self, state: Snapshot | bytes) -> None:
        """Replace the current state by a snapshot or a raw database image."""
        data = state.data if isinstance(state, Snapshot) else state
        self._mode = "admin"
        try:
            self._conn.deserialize(data)
        finally:
            self._mode = "read"

    def rebase(self) -> str:
        """Make the current state a root (forget tracked changes); return the root id."""
        self._mode = "admin"
        try:
            return rebase(self._conn, self.domain.layout)
        finally:
            self._mode = "read"

    def diff(self, target: Snapshot) -> StateDiff:
        """DIFF from the current state to ``target`` (rows only ``target`` has are "added")."""
        mine, theirs = read_tracked(self._conn, self.domain.layout), self._tracked_of(target)
        if mine.root and mine.root == theirs.root:
            return diff_tracked(mine, theirs, self.domain.layout)
        return diff(self.snapshot(), target)

    def _tracked_of(self, target: Snapshot) -> Tracked:
        """``target.tracked``, read through this connection when not known yet.

        A fresh connection parses the whole schema (every table, index and trigger) before its
        first query, which costs far more than reading the tracked rows; this connection has
        the domain's schema parsed already and keeps it across images of the domain (SQLite
        re-parses only when the schema cookie changes). The current state is put back byte for
        byte.
        """
        if target.known_tracked is None:
            current = self._conn.serialize()
            self._mode = "admin"
            try:
                self._conn.deserialize(target.data)
                target.known_tracked = read_tracked(self._conn, self.domain.layout)
            finally:
                self._conn.deserialize(current)
                self._mode = "read"
        return target.tracked

    def distance(self, target: Snapshot) -> int:
        """Rows in the symmetric difference between the current state and ``target``."""
        return self.diff(target).distance

    def save(self, path: str | Path) -> None:
        """Write the current state to a SQLite file."""
        Path(path).write_bytes(self._conn.serialize())

    def rows(self, table: str) -> list[dict[str, Any]]:
        """All rows of a table (an inspection helper, not an agent tool)."""
        t = self.spec.table(table)
        sql = f"SELECT {self._columns_sql(t.name)} FROM {quote_ident(t.name)} ORDER BY rowid"
        return [self._as_dict(t.name, r) for r in self._conn.execute(sql)]

    def select(
        self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()
    ) -> list[tuple[Any, ...]]:
        """Run one read-only ``SELECT`` (or ``WITH ... SELECT``) under the authorizer.

        For predicates over the current state (per-task checkers): the statement runs in read
        mode, so any write, ``ATTACH``, ``PRAGMA`` or schema change is denied by the authorizer,
        and text that does not start with ``SELECT`` or ``WITH`` is refused before it reaches
        SQLite. ``params`` are positional values, or a mapping for ``:name`` placeholders.

        Raises:
            DatabaseError: The statement is not a query, or SQLite refused or failed it.
        """
        head = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
        if head not in ("SELECT", "WITH"):
            raise DatabaseError(f"only SELECT statements may run here, not {head or 'nothing'!r}")
        self._mode = "read"
        try:
            bound = dict(params) if isinstance(params, Mapping) else tuple(params)
            return [tuple(row) for row in self._conn.execute(sql, bound)]
        except sqlite3.Error as exc:
            raise DatabaseError(f"query failed: {exc}") from exc

    def _execute(self, sql: str, params: tuple[Any, ...] = (), mode: Mode = "read") -> list[Row]:
        """Run raw SQL under an authorizer mode; for tests of the enforcement layer only."""
        self._mode = mode
        try:
            return list(self._conn.execute(sql, params))
        finally:
            self._mode = "read"


_MAX_PLANS = 4096  # cached argument shapes per environment
_NO_PLAN: Any = object()


class _Insert(NamedTuple):
    """An insert's statement, the values it binds (taken from the arguments) and its table's
    ``CompiledDomain.write_targets`` entry."""

    sql: str
    values: Callable[[dict[str, Any]], Sequence[Any]]
    target: WriteTarget


@dataclass(frozen=True, slots=True)
class _Plan:
    """The fast path of one tool for one shape of arguments (their names, in order)."""

    tool: ToolSpec
    accepts: Callable[[dict[str, Any]], bool]
    """Whether values given under these names pass ``fast_checks`` (``compile_checks``)."""
    insert: _Insert | None


def _values_in_order(cols: tuple[str, ...]) -> Callable[[dict[str, Any]], Sequence[Any]]:
    """A function returning the arguments' values for ``cols``, in that order, as a sequence."""
    if len(cols) >= 2:
        return operator.itemgetter(*cols)  # a tuple, built in C
    return lambda args: [args[c] for c in cols]


_SHOWN = 200  # characters of an unexpected exception's text quoted in an internal error


def _tool_label(tool: object) -> str:
    """The tool name as given (bounded, valid UTF-8), or its type when it is not a string."""
    if not isinstance(tool, str):
        return f"<{type(tool).__name__}>"
    return tool[:_SHOWN].encode("utf-8", "backslashreplace").decode("utf-8")


def _internal_error(tool: object, exc: Exception) -> ToolResult:
    """The result of a call that raised something unforeseen (after its rollback)."""
    try:
        text = str(exc)[:_SHOWN].encode("utf-8", "backslashreplace").decode("utf-8")
    except Exception:  # an exception whose text cannot even be rendered
        text = ""
    label = _tool_label(tool)
    return failure(
        label,
        "INTERNAL_ERROR",
        f"{label}: the call failed unexpectedly ({type(exc).__name__}: {text}); it changed nothing",
        hint="This is a bug in the environment, not in the call; please report it.",
    )
