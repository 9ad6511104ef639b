"""Procedural tools compiled to closures, run on the session's own connection.

``veritask.policy._procedure`` compiles a procedure's steps to SQL with bound variables; this
module turns those compiled steps, once per procedure, into Python closures: each step becomes a
function of the run that does only its own work. Interpreting the step tree on every call (a
chain of type tests per step and per template node, a parameter-name table looked up per
statement, a ``SELECT`` string formatted per expression) cost more than the SQL it ran: about
80% of a τ²-bench retail replay's CPU time was that Python, not SQLite. What a step does, the
statements it runs, their order and the values it binds are unchanged (docs/design/0043).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping
from typing import Any

from veritask.env._procedural import Engine, _bindable, _json_load, _lookup
from veritask.env._result import ToolError, ToolResult, accepted, schema_error
from veritask.policy import RAISE_PATTERN, ToolSpec
from veritask.policy._procedure import (
    CCompact,
    CCompute,
    CDecode,
    CEach,
    CForeach,
    CompiledProcedure,
    CompiledStep,
    CRead,
    CRequire,
    CWrite,
    Expr,
    Ref,
    param_name,
)


class _Rejected(Exception):
    """A step refused the call (a failed ``require``, a missing row)."""

    def __init__(self, error: ToolError) -> None:
        super().__init__(error.message)
        self.error = error


class _Run:
    """The state of one call of a procedure: its variables and whether it changed a row."""

    __slots__ = ("changed", "conn", "cur", "vars")

    def __init__(self, conn: sqlite3.Connection, args: dict[str, Any]) -> None:
        self.conn = conn
        self.cur = conn.cursor()  # every statement of the call, run and read one at a time
        self.vars: dict[str, Any] = dict(args)
        self.changed = False


Value = Callable[[_Run], Any]
"""A compiled expression or template: its value in a run."""
Op = Callable[[_Run], "tuple[Any] | None"]
"""A compiled step or block: None to go on, or ``(value,)`` once a ``return`` step ran."""
Binder = Callable[[dict[str, Any]], dict[str, Any]]
"""The named parameters of one statement, from the run's variables."""


def _var(ref: Ref) -> Value:
    """``_lookup`` of ``ref`` in the run's variables (the common short paths inlined)."""
    head = ref[0]
    if len(ref) == 1:
        return lambda run: run.vars.get(head)
    if len(ref) == 2:
        key = ref[1]

        def field(run: _Run) -> Any:
            value = run.vars.get(head)
            return value.get(key) if isinstance(value, dict) else None

        return field
    return lambda run: _lookup(run.vars, ref)


def _getter(ref: Ref) -> Callable[[dict[str, Any]], Any]:
    """``_lookup`` of ``ref`` as a function of the variables."""
    head = ref[0]
    if len(ref) == 1:
        return lambda variables: variables.get(head)
    if len(ref) == 2:
        key = ref[1]

        def field(variables: dict[str, Any]) -> Any:
            value = variables.get(head)
            return value.get(key) if isinstance(value, dict) else None

        return field
    return lambda variables: _lookup(variables, ref)


def _binder(refs: tuple[Ref, ...]) -> Binder:
    """The parameter mapping a statement binding ``refs`` takes (values as ``_bindable``)."""
    names = tuple((param_name(r), _getter(r)) for r in refs)
    if not names:
        return lambda _variables: {}
    if len(names) == 1:
        ((name, get),) = names

        def bind_one(variables: dict[str, Any]) -> dict[str, Any]:
            value = get(variables)  # ``_bindable`` inlined: most statements bind one value
            return {name: json.dumps(value) if isinstance(value, list | dict) else value}

        return bind_one
    return lambda variables: {name: _bindable(get(variables)) for name, get in names}


def _expression(expr: Expr) -> Value:
    """``expr``'s value: the variable itself, or SQLite's answer to ``SELECT <expr>``."""
    if expr.var is not None:
        return _var(expr.var)
    sql, bind = f"SELECT {expr.sql}", _binder(expr.refs)
    return lambda run: run.cur.execute(sql, bind(run.vars)).fetchone()[0]


# -- templates ------------------------------------------------------------------------------

_TEMPLATES: dict[int, tuple[Any, Value]] = {}
"""Compiled templates by the template's ``id`` (the template is kept with its closure, so its
id cannot be reused while cached)."""


def template(value: Any) -> Value:
    """A return template as a function of the run: expressions evaluated, ``{$compact}``
    without its nulls, ``{$json}`` decoded, ``{each}`` over a list, lists and mappings part by
    part, anything else as it is."""
    found = _TEMPLATES.get(id(value))
    if found is None or found[0] is not value:
        found = _TEMPLATES[id(value)] = (value, _template(value))
    return found[1]


def _template(value: Any) -> Value:
    if isinstance(value, Expr):
        return _expression(value)
    if isinstance(value, CCompact):
        full = _template(value.value)
        return lambda run: {k: v for k, v in full(run).items() if v is not None}
    if isinstance(value, CDecode):
        inner = _expression(value.expr)
        return lambda run: _json_load(inner(run))
    if isinstance(value, CEach):
        return _each(value)
    if isinstance(value, list):
        parts = [_template(v) for v in value]
        return lambda run: [part(run) for part in parts]
    if isinstance(value, dict):
        return _mapping(value)
    return lambda _run: value


_EMPTY: dict[str, Any] = {}
"""Stands for a variable that is not a row (each of its columns reads as None); never written."""


def _assigned(value: Any) -> set[str]:
    """The variables rendering ``value`` sets (the ``as`` of every ``{each}`` in it)."""
    if isinstance(value, CEach):
        return {value.item} | _assigned(value.value)
    if isinstance(value, CCompact):
        return _assigned(value.value)
    if isinstance(value, dict):
        return set().union(*(_assigned(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_assigned(v) for v in value))
    return set()


def _mapping(value: dict[Any, Any]) -> Value:
    """A mapping template as one generated function: each variable a column is read from is
    looked up once, and the mapping is one dict display (fields in the template's order).

    The source holds made-up names only; keys, variable and column names are bound in its
    namespace, never pasted. A variable that a field's ``{each}`` sets is not looked up ahead
    of that field (such fields are rendered by their own closures, in order)."""
    assigned = _assigned(value)
    namespace: dict[str, Any] = {"isinstance": isinstance, "dict": dict, "EMPTY": _EMPTY}
    heads: dict[str, str] = {}
    fields: list[str] = []
    for i, (key, field) in enumerate(value.items()):
        namespace[f"k{i}"] = key
        ref = field.var if isinstance(field, Expr) else None
        if ref is not None and len(ref) == 2 and ref[0] not in assigned:
            head = heads.setdefault(ref[0], f"h{len(heads)}")
            namespace[f"c{i}"] = ref[1]
            fields.append(f"k{i}: {head}.get(c{i})")
        else:
            namespace[f"f{i}"] = _template(field)
            fields.append(f"k{i}: f{i}(run)")
    lines = ["def render(run):", "    variables = run.vars"]
    for name, head in heads.items():
        namespace[f"n_{head}"] = name
        lines += [
            f"    {head} = variables.get(n_{head})",
            f"    if not isinstance({head}, dict):",
            f"        {head} = EMPTY",
        ]
    lines.append("    return {" + ", ".join(fields) + "}")
    exec("\n".join(lines), namespace)  # made-up names only, see above
    render: Value = namespace["render"]
    return render


def _each(value: CEach) -> Value:
    """``{each: xs, as: x, value: t}``: ``t`` per element (a mapping by ``key`` when given; a
    repeated key keeps its first position and its last value)."""
    over, item, inner = _var(value.over), value.item, _template(value.value)
    if value.key is None:

        def as_list(run: _Run) -> list[Any]:
            variables, out = run.vars, []
            for element in over(run) or []:
                variables[item] = element
                out.append(inner(run))
            return out

        return as_list
    key = _expression(value.key)

    def as_mapping(run: _Run) -> dict[str, Any]:
        variables, out = run.vars, {}
        for element in over(run) or []:
            variables[item] = element
            k = key(run)
            out[str(k)] = inner(run)
        return out

    return as_mapping


# -- steps ----------------------------------------------------------------------------------

_PROGRAMS: dict[int, tuple[CompiledProcedure, Op]] = {}
"""Compiled procedures by the procedure's ``id`` (kept with it, as ``_TEMPLATES``)."""


def program(proc: CompiledProcedure) -> Op:
    """The procedure's steps as one function of the run, compiled on first use."""
    found = _PROGRAMS.get(id(proc))
    if found is None or found[0] is not proc:
        found = _PROGRAMS[id(proc)] = (proc, _block(proc.steps))
    return found[1]


def _block(steps: tuple[CompiledStep, ...]) -> Op:
    ops = tuple(_step(s) for s in steps)

    def block(run: _Run) -> tuple[Any] | None:
        for op in ops:
            done = op(run)
            if done is not None:
                return done
        return None

    return block


def _step(step: CompiledStep) -> Op:
    if isinstance(step, CRead):
        return _read(step)
    if isinstance(step, CRequire):
        return _require(step)
    if isinstance(step, CCompute):
        return _compute(step)
    if isinstance(step, CWrite):
        return _write(step)
    if isinstance(step, CForeach):
        return _foreach(step)
    render = template(step.value)
    return lambda run: (render(run),)


def _read(step: CRead) -> Op:
    sql, bind, columns, s = step.sql, _binder(step.refs), step.columns, step.step
    into, many, missing, code = s.into, s.many, s.missing, s.code

    def read(run: _Run) -> None:
        rows = run.cur.execute(sql, bind(run.vars)).fetchall()
        if many:
            run.vars[into] = [dict(zip(columns, r, strict=True)) for r in rows]
        elif rows:
            run.vars[into] = dict(zip(columns, rows[0], strict=True))
        elif missing is not None:
            raise _Rejected(ToolError(code, missing))
        else:
            run.vars[into] = None

    return read


def _require(step: CRequire) -> Op:
    test, code = _expression(step.expr), step.step.code
    text = step.step.message
    message = None if step.message is None else _expression(step.message)

    def require(run: _Run) -> None:
        if not test(run):
            raise _Rejected(ToolError(code, str(text if message is None else message(run))))

    return require


def _compute(step: CCompute) -> Op:
    value, into, decode = _expression(step.expr), step.step.into, step.step.decode

    def compute(run: _Run) -> None:
        found = value(run)
        run.vars[into] = _json_load(found) if decode else found

    return compute


def _write(step: CWrite) -> Op:
    sql, bind, columns, readback = step.sql, _binder(step.refs), step.columns, step.readback
    into = getattr(step.step, "into", None)

    def write(run: _Run) -> None:
        conn, cur = run.conn, run.cur
        before = conn.total_changes
        cur.execute(sql, bind(run.vars))
        if readback:
            (rowid,) = cur.fetchone()
            row = cur.execute(readback, (rowid,)).fetchone()
            if into:
                run.vars[into] = dict(zip(columns, row, strict=True))
        run.changed = run.changed or conn.total_changes != before

    return write


def _foreach(step: CForeach) -> Op:
    body, s = _block(step.body), step.step
    over, item, index = s.over, s.item, s.index

    def foreach(run: _Run) -> tuple[Any] | None:
        variables = run.vars
        found = variables.get(over)
        items = _json_load(found) if isinstance(found, str) else found
        for i, element in enumerate(items if isinstance(items, list) else []):
            variables[item] = element
            if index:
                variables[index] = i
            done = body(run)
            if done is not None:
                return done
        return None

    return foreach


# -- a call -----------------------------------------------------------------------------------


def _translate(env: Engine, tool: ToolSpec, exc: sqlite3.Error) -> ToolError:
    m = RAISE_PATTERN.match(str(exc))
    if m is None:
        return schema_error(tool, exc)
    try:
        rule = env.spec.rule(m["rule"])
    except KeyError:
        return ToolError(m["code"], m["message"], m["rule"])
    return ToolError(rule.code, rule.message, rule.id, rule.hint)


def run_procedure(
    env: Engine, tool: ToolSpec, proc: CompiledProcedure, args: Mapping[str, Any]
) -> ToolResult:
    """Run a procedural tool; a write tool inside one savepoint, rolled back on any failure."""
    conn = env._conn
    run = _Run(conn, dict(args))
    if tool.writes and conn.in_transaction:
        raise RuntimeError("a transaction is already open; refusing to nest vt_call")
    env._mode = "write" if tool.writes else "read"
    try:
        if tool.writes:
            conn.execute("SAVEPOINT vt_call")
        done = program(proc)(run)
        if tool.writes:
            conn.execute("RELEASE vt_call")
    except BaseException as exc:
        if tool.writes and conn.in_transaction:
            env._rollback()  # never interrupted, even after the time limit
        if isinstance(exc, _Rejected):
            return ToolResult(tool=tool.name, ok=False, error=exc.error)
        if not isinstance(exc, sqlite3.Error):
            raise
        return ToolResult(tool=tool.name, ok=False, error=_translate(env, tool, exc))
    finally:
        env._mode = "read"
        run.cur.close()
    return accepted(tool.name, None if done is None else done[0], run.changed)
