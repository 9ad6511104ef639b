"""Compile procedural tools: parse every expression against a whitelist, check every table,
column and variable, and build the parameterized SQL each step runs.

Expressions are SQL expressions over *variables* (the tool's arguments and what earlier steps
bound): ``x`` or ``row.column`` (deeper paths look into JSON objects). sqlglot parses them; a
node outside ``_ALLOWED`` (a subquery, an unknown function, a ``SELECT``) makes the spec invalid,
and every variable reference becomes a named parameter, so the text SQLite runs is generated
here and values are bound, never pasted (docs/design/0016-spec-sql-is-parsed.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from veritask.policy._spec import (
    ComputeStep,
    DomainSpec,
    ForeachStep,
    InsertStep,
    Procedure,
    ReadStep,
    RequireStep,
    Step,
    Table,
    UpdateStep,
)
from veritask.policy._sql import quote_ident

ENGINE_FUNCTIONS = frozenset(
    {
        "py_round",
        "py_lower",
        "py_calc",
        "vt_len",
        "vt_at",
        "vt_contains",
        "vt_count",
        "vt_sorted",
        "vt_only",
    }
)
"""Deterministic helpers the engine registers for procedures (see ``veritask.env``)."""
_SQLITE_FUNCTIONS = frozenset(
    {
        "json_extract",
        "json_array_length",
        "json_array",
        "json_object",
        "json_type",
        "json_valid",
        "json_quote",
        "json_insert",
        "json_set",
        "json_remove",
        "substr",
        "instr",
        "replace",
        "trim",
        "printf",
        "min",
        "max",
    }
)
_ALLOWED: tuple[type[exp.Expression], ...] = (
    exp.Column,
    exp.Identifier,
    exp.Literal,
    exp.Boolean,
    exp.Null,
    exp.Paren,
    exp.Neg,
    exp.Not,
    exp.And,
    exp.Or,
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.Mod,
    exp.EQ,
    exp.NEQ,
    exp.GT,
    exp.GTE,
    exp.LT,
    exp.LTE,
    exp.Is,
    exp.In,
    exp.Case,
    exp.If,
    exp.Coalesce,
    exp.Abs,
    exp.Round,
    exp.Length,
    exp.Lower,
    exp.Upper,
    exp.DPipe,
    exp.Anonymous,
    exp.Tuple,
    exp.JSONKeyValue,
    exp.Cast,
    exp.DataType,
)
_FUNCTION_NODES: dict[type[exp.Expression], str] = {
    exp.Greatest: "max",
    exp.Least: "min",
    exp.Substring: "substr",
    exp.StrPosition: "instr",
    exp.Trim: "trim",
    exp.JSONExtract: "json_extract",
    exp.JSONArray: "json_array",
    exp.JSONObject: "json_object",
}
Ref = tuple[str, ...]
"""A variable reference: the variable's name, then keys into its value."""


class ProcedureError(ValueError):
    """A procedural tool that does not compile (bad expression, table, column or variable)."""


@dataclass(frozen=True)
class Expr:
    """A compiled expression: SQL text with ``:v_...`` placeholders and the references they bind."""

    sql: str
    refs: tuple[Ref, ...]
    var: Ref | None = None
    """Set when the whole expression is one variable reference (its value is used as it is)."""


def param_name(ref: Ref) -> str:
    """The placeholder name a reference binds to."""
    return "v_" + "__".join(ref)


def _check_node(node: exp.Expr, where: str) -> None:
    name = type(node).__name__
    if isinstance(node, exp.Anonymous):
        fn = str(node.name).lower()
        if fn not in ENGINE_FUNCTIONS | _SQLITE_FUNCTIONS:
            raise ProcedureError(f"{where}: function {fn!r} is not allowed")
    elif type(node) in _FUNCTION_NODES:
        return
    elif not isinstance(node, _ALLOWED) or isinstance(node, exp.Subquery | exp.Select):
        raise ProcedureError(f"{where}: {name} is not allowed in an expression")


def compile_expression(text: str, scope: frozenset[str], where: str) -> Expr:
    """Parse ``text`` and turn variable references into placeholders.

    Raises:
        ProcedureError: A syntax error, a node outside the whitelist or an unknown variable.
    """
    try:
        tree = sqlglot.parse_one(text, read="sqlite")
    except SqlglotError as exc:
        raise ProcedureError(f"{where}: cannot parse {text!r}: {exc}") from exc
    for node in tree.walk():
        _check_node(node, where)
    refs: list[Ref] = []
    for col in list(tree.find_all(exp.Column)):
        ref = tuple(str(p.name) for p in col.parts)
        if ref[0] not in scope:
            raise ProcedureError(f"{where}: unknown variable {ref[0]!r} in {text!r}")
        if ref not in refs:
            refs.append(ref)
        placeholder = exp.Placeholder(this=param_name(ref))
        if col is tree:
            return Expr(f":{param_name(ref)}", (ref,), ref)
        col.replace(placeholder)
    return Expr(tree.sql(dialect="sqlite"), tuple(refs))


@dataclass(frozen=True)
class CRead:
    """A compiled ``read`` step."""

    step: ReadStep
    sql: str
    refs: tuple[Ref, ...]
    columns: tuple[str, ...]


@dataclass(frozen=True)
class CRequire:
    """A compiled ``require`` step."""

    step: RequireStep
    expr: Expr
    message: Expr | None = None


@dataclass(frozen=True)
class CCompute:
    """A compiled ``compute`` step."""

    step: ComputeStep
    expr: Expr


@dataclass(frozen=True)
class CWrite:
    """A compiled ``insert`` or ``update`` step: one statement and the references it binds."""

    step: InsertStep | UpdateStep
    sql: str
    refs: tuple[Ref, ...]
    columns: tuple[str, ...]
    readback: str
    """An insert's statement reading the stored row back by rowid (empty for an update)."""


@dataclass(frozen=True)
class CForeach:
    """A compiled ``foreach`` step."""

    step: ForeachStep
    body: tuple[CompiledStep, ...]


@dataclass(frozen=True)
class CEach:
    """``{"each": var, "as": x, "value": t}`` in a return template (a mapping when ``key``)."""

    over: Ref
    item: str
    value: Any
    key: Expr | None = None


@dataclass(frozen=True)
class CCompact:
    """``{"$compact": {...}}`` in a return template: the mapping without its null values."""

    value: dict[str, Any]


@dataclass(frozen=True)
class CDecode:
    """``{"$json": expr}`` in a return template: the JSON text the expression gives, decoded."""

    expr: Expr


@dataclass(frozen=True)
class CReturn:
    """A compiled ``return`` step: the template with expressions compiled."""

    value: Any


CompiledStep = CRead | CRequire | CCompute | CWrite | CForeach | CReturn


@dataclass(frozen=True)
class CompiledProcedure:
    """A procedural tool ready to run."""

    procedure: Procedure
    steps: tuple[CompiledStep, ...]


class _Compiler:
    def __init__(self, spec: DomainSpec, proc: Procedure) -> None:
        self.spec, self.proc = spec, proc

    def where(self, step: Step) -> str:
        return f"procedure {self.proc.name}, {step.op} step"

    def table(self, name: str, where: str) -> Table:
        if not self.spec.has_table(name):
            raise ProcedureError(f"{where}: unknown table {name!r}")
        return self.spec.table(name)

    def columns(self, table: Table, names: list[str], where: str) -> None:
        for name in names:
            if name not in table.column_names:
                raise ProcedureError(f"{where}: {table.name} has no column {name!r}")

    def exprs(
        self, items: dict[str, str], scope: frozenset[str], where: str
    ) -> tuple[list[str], list[Ref]]:
        sqls: list[str] = []
        refs: list[Ref] = []
        for col, text in items.items():
            expr = compile_expression(text, scope, f"{where} ({col})")
            sqls.append(expr.sql)
            refs += [r for r in expr.refs if r not in refs]
        return sqls, refs

    def block(self, steps: list[Step], scope: set[str]) -> tuple[CompiledStep, ...]:
        out: list[CompiledStep] = []
        for step in steps:
            out.append(self.step(step, scope))
        return tuple(out)

    def step(self, step: Step, scope: set[str]) -> CompiledStep:
        where, frozen = self.where(step), frozenset(scope)
        if isinstance(step, ReadStep):
            compiled: CompiledStep = self.read(step, frozen, where)
            scope.add(step.into)
        elif isinstance(step, RequireStep):
            message = step.message_expr
            compiled = CRequire(
                step,
                compile_expression(step.condition, frozen, where),
                compile_expression(message, frozen, where) if message else None,
            )
        elif isinstance(step, ComputeStep):
            compiled = CCompute(step, compile_expression(step.expr, frozen, where))
            scope.add(step.into)
        elif isinstance(step, InsertStep):
            compiled = self.insert(step, frozen, where)
            if step.into:
                scope.add(step.into)
        elif isinstance(step, UpdateStep):
            compiled = self.update(step, frozen, where)
        elif isinstance(step, ForeachStep):
            if step.over not in scope:
                raise ProcedureError(f"{where}: unknown variable {step.over!r}")
            inner = set(scope) | {step.item} | ({step.index} if step.index else set())
            compiled = CForeach(
                step, self.block(step.steps, inner)
            )  # names bound inside stay inside
        else:
            compiled = CReturn(self.template(step.value, frozen, where))
        return compiled

    def read(self, step: ReadStep, scope: frozenset[str], where: str) -> CRead:
        table = self.table(step.table, where)
        self.columns(table, [*step.where, *step.order_by], where)
        sqls, refs = self.exprs(step.where, scope, where)
        cond = " AND ".join(
            f"{quote_ident(c)} = ({s})" for c, s in zip(step.where, sqls, strict=True)
        )
        order = "".join(f"{quote_ident(c)}, " for c in step.order_by)
        cols = ", ".join(quote_ident(c) for c in table.column_names)
        sql = (
            f"SELECT {cols} FROM {quote_ident(table.name)}"
            + (f" WHERE {cond}" if cond else "")
            + f" ORDER BY {order}rowid"
            + ("" if step.many else " LIMIT 1")
        )
        return CRead(step, sql, tuple(refs), tuple(table.column_names))

    def insert(self, step: InsertStep, scope: frozenset[str], where: str) -> CWrite:
        table = self.table(step.table, where)
        self.columns(table, list(step.values), where)
        sqls, refs = self.exprs(step.values, scope, where)
        names = ", ".join(quote_ident(c) for c in step.values)
        cols = ", ".join(quote_ident(c) for c in table.column_names)
        sql = (
            f"INSERT INTO {quote_ident(table.name)} ({names}) VALUES ({', '.join(sqls)}) "
            f"RETURNING rowid"
        )
        readback = f"SELECT {cols} FROM {quote_ident(table.name)} WHERE rowid = ?"
        return CWrite(step, sql, tuple(refs), tuple(table.column_names), readback)

    def update(self, step: UpdateStep, scope: frozenset[str], where: str) -> CWrite:
        table = self.table(step.table, where)
        self.columns(table, [*step.where, *step.values], where)
        set_sqls, refs = self.exprs(step.values, scope, where)
        cond_sqls, more = self.exprs(step.where, scope, where)
        refs += [r for r in more if r not in refs]
        sets = ", ".join(
            f"{quote_ident(c)} = ({s})" for c, s in zip(step.values, set_sqls, strict=True)
        )
        cond = " AND ".join(
            f"{quote_ident(c)} = ({s})" for c, s in zip(step.where, cond_sqls, strict=True)
        )
        sql = f"UPDATE {quote_ident(table.name)} SET {sets} WHERE {cond}"
        return CWrite(step, sql, tuple(refs), tuple(table.column_names), "")

    def template(self, value: Any, scope: frozenset[str], where: str) -> Any:
        if isinstance(value, str):
            return compile_expression(value, scope, where)
        if isinstance(value, list):
            return [self.template(v, scope, where) for v in value]
        if isinstance(value, dict):
            if set(value) == {"$compact"} and isinstance(value["$compact"], dict):
                return CCompact(self.template(value["$compact"], scope, where))
            if set(value) == {"$json"}:
                return CDecode(compile_expression(str(value["$json"]), scope, where))
            if set(value) in ({"each", "as", "value"}, {"each", "as", "key", "value"}):
                return self.each(value, scope, where)
            return {str(k): self.template(v, scope, where) for k, v in value.items()}
        return value

    def each(self, value: dict[str, Any], scope: frozenset[str], where: str) -> CEach:
        over = compile_expression(str(value["each"]), scope, where)
        if over.var is None:
            raise ProcedureError(f"{where}: 'each' must name a list variable")
        inner = scope | {str(value["as"])}
        key = compile_expression(str(value["key"]), inner, where) if "key" in value else None
        body = self.template(value["value"], inner, where)
        return CEach(over.var, str(value["as"]), body, key)


def compile_procedure(spec: DomainSpec, proc: Procedure) -> CompiledProcedure:
    """Check a procedural tool against its spec and compile every step.

    Raises:
        ProcedureError: An unknown table, column or variable, or an expression outside the
            whitelist. A write tool must declare ``access: write`` and a read tool may not write.
    """
    if proc.access == "read" and _writes(proc.steps):
        raise ProcedureError(f"procedure {proc.name}: access is read but a step writes")
    scope = {p.name for p in proc.params}
    return CompiledProcedure(proc, _Compiler(spec, proc).block(proc.steps, scope))


def _writes(steps: list[Step]) -> bool:
    for step in steps:
        if isinstance(step, InsertStep | UpdateStep):
            return True
        if isinstance(step, ForeachStep) and _writes(step.steps):
            return True
    return False


def compile_procedures(spec: DomainSpec) -> dict[str, CompiledProcedure]:
    """Every procedural tool of a spec, compiled, by name."""
    return {p.name: compile_procedure(spec, p) for p in spec.procedures}
