"""Boundaries of every kind, read from a rule's parsed condition (LOGIGEN's N-1 seeding).

A rule's violation predicate is its ``when`` guard and its ``condition`` (SQL over NEW/OLD and
subqueries). Parsed with sqlglot, its *inputs* are the columns one change can move: a stored
column a subquery reads (``members.active``, ``sections.enrolled_count``), a column of the row an
update changes (``OLD.status``), or a step the request states (``NEW.enroll_step``). Each input
has a kind from the schema, never from the domain's name:

* ``quota``: the counter a rule's threshold names;
* ``state``: a column with an enum (a status one step from a forbidden transition);
* ``flag``: a 0/1 column (an eligibility flag);
* ``window``: a point in time (``*_step``, ``*_at``): one step inside a date or step window;
* ``numeric``: any other number.

A rule's boundary kind is ``quota`` when it guards a counter, ``multi`` when two or more inputs
meet in its predicate, else the kind of its one input. A write call sits *at the boundary* of a
rule when the predicate is false for it (the call is allowed) and moving one input by one step
(a number by one, a flag flipped, a state to another value of its enum), or for a multi-condition
rule two inputs by one step each, makes it true. That is evaluated on the live state with the
engine's own expression evaluator, on variants of the predicate in which the input's column is
replaced by its moved value, so it holds for any spec.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Literal

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from veritask.env import Environment
from veritask.policy import Column, DomainSpec, Rule
from veritask.synth._values import is_time

BoundaryKind = Literal["quota", "state", "flag", "window", "numeric", "multi"]
BOUNDARY_KINDS: tuple[BoundaryKind, ...] = ("quota", "state", "flag", "window", "numeric", "multi")
OMISSION = "omission"
"""The boundary of a Rookie request that leaves out a value a rule tests (``decided_columns``)."""
STATED: Literal["stated"] = "stated"
"""The boundary of a request that states the value a rule requires: the write is one value from
the violation (the value left out, or another of its enum given). Placed only for a rule
category no other boundary has reached in the unit (``CastBuilder.edge_call``, note 0058)."""
Where = Literal["new", "old", "stored"]
MAX_INPUTS = 4
PAIR_MOVES = 2
"""Two-move variants of a multi-condition rule: pairs among its first ``MAX_INPUTS`` inputs,
the first ``PAIR_MOVES`` moves of each (at most 24 variants, built once per process)."""
_REQUEST = {"NEW", "OLD"}


@dataclass(frozen=True)
class Input:
    """One thing a single change can move in a rule's predicate."""

    where: Where
    table: str
    column: str
    kind: BoundaryKind

    @property
    def name(self) -> str:
        """``NEW.col``, ``OLD.col`` or ``table.col``."""
        return f"{self.where.upper()}.{self.column}" if self.where != "stored" else self.ref

    @property
    def ref(self) -> str:
        """``table.column``."""
        return f"{self.table}.{self.column}"


@dataclass(frozen=True)
class Move:
    """One step of one input, as the predicate variant that has taken it."""

    input: Input
    step: str
    """``+1``, ``-1``, ``flip`` or ``='VALUE'``."""
    sql: str


@dataclass
class RuleShape:
    """A rule's predicate, its inputs and its boundary kind."""

    rule: Rule
    predicate: str
    inputs: list[Input] = field(default_factory=list)
    kind: BoundaryKind | None = None
    moves: list[Move] = field(default_factory=list)


@dataclass(frozen=True)
class Adjacency:
    """A write call one change from a rule: which moves flip the rule's predicate."""

    rule: str
    kind: BoundaryKind | Literal["stated"]
    moves: tuple[Move, ...]
    stated: str | None = None
    """For a ``stated`` boundary: the request column whose value the rule requires."""

    def describe(self) -> str:
        """The moves in words (``members.active_bookings +1``; ``NEW.step left out or
        changed`` for a stated value)."""
        if self.stated is not None:
            return f"NEW.{self.stated} left out or changed"
        return " and ".join(f"{m.input.name} {m.step}" for m in self.moves)


def _flag(col: Column) -> bool:
    """A 0/1 column: an INTEGER enum of 0 and 1, or one a CHECK keeps in 0..1."""
    if col.type != "INTEGER":
        return False
    if col.enum is not None:
        return {str(v) for v in col.enum} <= {"0", "1"}
    check = (col.check or "").replace(" ", "").upper()
    return "IN(0,1)" in check or "BETWEEN0AND1" in check


_ORDERED = (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between)


def _ordered(node: exp.Column) -> bool:
    """Whether the nearest comparison around a reference orders it (``<``, ``>=``, BETWEEN):
    a value only compared for (in)equality is one step from any other, never at a boundary."""
    parent = node.parent
    while parent is not None and not isinstance(parent, exp.Predicate):
        parent = parent.parent
    return isinstance(parent, _ORDERED)


_DECIDED = (exp.Is, exp.EQ, exp.NEQ, exp.In)


def decided_columns(spec: DomainSpec, rule: Rule) -> set[str]:
    """Columns of the request (``NEW.col``, not a key or a link) the rule tests for presence
    or for one required value (``IS NULL``, ``=``, ``!=``, ``IN``): leaving the value out, or
    giving another, is one omission from the violation. A Rookie request that does not state
    such a column sits at that boundary (``_cast``); no single change of the state reaches it."""
    try:
        tree = sqlglot.parse_one(predicate(rule), read="sqlite")
    except SqlglotError:
        return set()
    table = spec.table(rule.table)
    out = set()
    for node in tree.find_all(exp.Column):
        if node.table.upper() != "NEW" or node.name not in table.column_names:
            continue
        col = table.column(node.name)
        if col.primary_key or col.references or node.find_ancestor(exp.Select) is not None:
            continue
        parent = node.parent
        while parent is not None and not isinstance(parent, exp.Predicate):
            parent = parent.parent
        if isinstance(parent, _DECIDED):
            out.add(col.name)
    return out


def _input_kind(rule: Rule, table: str, col: Column, node: exp.Column) -> BoundaryKind | None:
    quantity = rule.threshold.quantity if rule.threshold is not None else ""
    if quantity == f"{table}.{col.name}":
        return "quota"
    if col.primary_key or col.references:
        return None
    if _flag(col):
        return "flag"
    if col.enum:
        return "state"
    if col.type not in ("INTEGER", "REAL"):
        return None
    if node.table.upper() == "NEW" and not _ordered(node):
        return None
    return "window" if is_time(col) else "numeric"


def _aliases(select: exp.Select) -> dict[str, str]:
    """Alias (or name) -> table of a SELECT's FROM and JOIN tables."""
    out: dict[str, str] = {}
    for table in select.find_all(exp.Table):
        if table.find_ancestor(exp.Select) is select:
            out[table.alias_or_name.lower()] = table.name
    return out


def _resolve(spec: DomainSpec, rule: Rule, node: exp.Column) -> tuple[Where, str] | None:
    """Where a column reference reads from: (``new``/``old``/``stored``, table)."""
    qualifier = node.table.upper()
    if qualifier in _REQUEST:
        return ("new" if qualifier == "NEW" else "old"), rule.table
    select = node.find_ancestor(exp.Select)
    if select is None:
        return None
    tables = _aliases(select)
    if node.table:
        name = tables.get(node.table.lower())
    else:
        owners = [t for t in tables.values() if spec.has_table(t) and _has(spec, t, node.name)]
        name = owners[0] if len(owners) == 1 else None
    return ("stored", name) if name and spec.has_table(name) else None


def _has(spec: DomainSpec, table: str, column: str) -> bool:
    return column in spec.table(table).column_names


def predicate(rule: Rule) -> str:
    """The rule's violation predicate: its guard and its condition, with the threshold put in."""
    cond = rule.condition
    if rule.threshold is not None and rule.threshold.value is not None:
        cond = cond.replace("{threshold}", str(rule.threshold.value))
    return f"({rule.when}) AND ({cond})" if rule.when else cond


def _moved(node: exp.Column, col: Column, kind: BoundaryKind) -> list[tuple[str, exp.Expr]]:
    """The one-step moves of a column reference, as (step, replacement expression)."""
    if kind == "state":
        return [
            (f"='{v}'", exp.Literal.string(v) if isinstance(v, str) else exp.Literal.number(v))
            for v in col.enum or []
        ]
    if kind == "flag":
        return [
            ("flip", exp.Paren(this=exp.Sub(this=exp.Literal.number(1), expression=node.copy())))
        ]
    return [
        (sign, exp.Paren(this=op(this=node.copy(), expression=exp.Literal.number(1))))
        for sign, op in (("+1", exp.Add), ("-1", exp.Sub))
    ]


def _variant(tree: exp.Expr, spec: DomainSpec, rule: Rule, inp: Input, step: str) -> str:
    """The predicate with every reference to ``inp`` moved by ``step``, as SQL."""
    return _variant_tree(tree, spec, rule, inp, step).sql(dialect="sqlite")


def _variant_tree(tree: exp.Expr, spec: DomainSpec, rule: Rule, inp: Input, step: str) -> exp.Expr:
    """The predicate with every reference to ``inp`` moved by ``step``."""
    col = spec.table(inp.table).column(inp.column)

    def move(node: exp.Expr) -> exp.Expr:
        if not isinstance(node, exp.Column) or node.name != inp.column:
            return node
        found = _resolve(spec, rule, node)
        if found != (inp.where, inp.table):
            return node
        return dict(_moved(node, col, inp.kind))[step]

    return tree.copy().transform(move, copy=False)


def shape(spec: DomainSpec, rule: Rule) -> RuleShape:
    """Parse a rule's predicate into its inputs, boundary kind and one-step variants."""
    pred = predicate(rule)
    out = RuleShape(rule, pred)
    try:
        tree = sqlglot.parse_one(pred, read="sqlite")
    except SqlglotError:
        return out
    seen: dict[tuple[Where, str, str], Input] = {}
    for node in tree.find_all(exp.Column):
        found = _resolve(spec, rule, node)
        if found is None or not _has(spec, found[1], node.name):
            continue
        where, table = found
        col = spec.table(table).column(node.name)
        kind = _input_kind(rule, table, col, node)
        if kind is None or (where == "new" and kind not in ("window", "numeric")):
            continue  # a request's choice of enum or flag is the user's, not a boundary
        seen.setdefault((where, table, col.name), Input(where, table, col.name, kind))
    out.inputs = list(seen.values())
    out.kind = _kind(out.inputs)
    return out


def _kind(inputs: list[Input]) -> BoundaryKind | None:
    """A rule's boundary kind: ``quota`` for a counter; else its conditions (the time points
    of a window, request or stored, make one condition together): two or more give
    ``multi``, one gives its own kind."""
    kinds = [i.kind for i in inputs]
    if "quota" in kinds:
        return "quota"
    conditions: list[BoundaryKind] = [k for k in kinds if k != "window"]
    conditions += ["window"] if "window" in kinds else []
    if len(conditions) >= 2:
        return "multi"
    return conditions[0] if conditions else None


def _moves(spec: DomainSpec, sh: RuleShape) -> list[Move]:
    """The one-step variants of a rule's predicate, one per move of each input (built once)."""
    if sh.moves or not sh.inputs:
        return sh.moves
    tree = sqlglot.parse_one(sh.predicate, read="sqlite")
    for inp in sh.inputs:
        node = next(
            n for n in tree.find_all(exp.Column)
            if n.name == inp.column and _resolve(spec, sh.rule, n) == (inp.where, inp.table)
        )  # fmt: skip
        for step, _ in _moved(node, spec.table(inp.table).column(inp.column), inp.kind):
            sh.moves.append(Move(inp, step, _variant(tree, spec, sh.rule, inp, step)))
    return sh.moves


_SHAPES: dict[str, tuple[dict[str, RuleShape], dict[str, list[tuple[Move, Move, str]]]]] = {}
"""Rule shapes and two-move variants per spec hash: parsed once per process."""


def _true(value: Any) -> bool:
    return value is not None and bool(value)


class Boundaries:
    """The boundary shapes of a spec's rules, and the test of a write call against them."""

    def __init__(self, spec: DomainSpec) -> None:
        self.spec = spec
        key = spec.spec_hash()
        if key not in _SHAPES:
            _SHAPES[key] = ({r.id: shape(spec, r) for r in spec.rules}, {})
        self.shapes, self._pair_cache = _SHAPES[key]
        self._decided: dict[str, set[str]] = {}
        self._omitted: dict[str, list[str]] = {}

    def decided(self, rule_id: str) -> set[str]:
        """The request columns a rule tests for presence or a required value (cached)."""
        if rule_id not in self._decided:
            self._decided[rule_id] = decided_columns(self.spec, self.spec.rule(rule_id))
        return self._decided[rule_id]

    def omission(
        self, env: Environment, tool: str, args: dict[str, Any], omitted: list[str]
    ) -> list[tuple[str, str]]:
        """(rule, column) pairs: the rules a write call (on the state ``env`` holds) sits one
        omission from, through a column the request leaves out. The call passes the rule, and
        the rule's predicate turns true when that column is left out (NULL) or, for an enum,
        given another of its values: the value the agent supplies is the one the rule needs."""
        spec = env.domain.tools.get(tool)
        if spec is None or spec.kind not in ("insert", "update"):
            return []
        out = []
        for sh in self.shapes.values():
            rule = sh.rule
            cols = self.decided(rule.id) & set(omitted)
            if not cols or rule.table != spec.table or spec.kind not in rule.on:
                continue
            if _true(env.evaluate(sh.predicate, tool, args)):
                continue
            for col in sorted(cols):
                if any(_true(env.evaluate(v, tool, args)) for v in self._left_out(sh, col)):
                    out.append((rule.id, col))
                    break
        return out

    def _left_out(self, sh: RuleShape, column: str) -> list[str]:
        """The predicate with ``NEW.column`` left out (NULL), then with each other value of
        its enum (built once per rule and column)."""
        key = f"{sh.rule.id}\x00{column}"
        if key not in self._omitted:
            col = self.spec.table(sh.rule.table).column(column)
            values: list[exp.Expr] = [exp.Null()]
            values += [
                exp.Literal.string(v) if isinstance(v, str) else exp.Literal.number(v)
                for v in col.enum or []
            ]
            tree = sqlglot.parse_one(sh.predicate, read="sqlite")
            out = []
            for value in values:

                def put(node: exp.Expr, value: exp.Expr = value) -> exp.Expr:
                    hit = isinstance(node, exp.Column) and node.table.upper() == "NEW"
                    return value.copy() if hit and node.name == column else node

                out.append(tree.copy().transform(put, copy=False).sql(dialect="sqlite"))
            self._omitted[key] = out
        return self._omitted[key]

    def kind(self, rule_id: str) -> BoundaryKind | None:
        """The boundary kind of a rule (None: its predicate moves with no stored or timed input)."""
        found = self.shapes.get(rule_id)
        return found.kind if found is not None else None

    def adjacent(self, env: Environment, tool: str, args: dict[str, Any]) -> list[Adjacency]:
        """The rules a write call (on the state ``env`` holds) sits one change away from."""
        spec = env.domain.tools.get(tool)
        if spec is None or spec.kind not in ("insert", "update"):
            return []
        out = []
        for sh in self.shapes.values():
            if sh.kind is None or sh.rule.table != spec.table or spec.kind not in sh.rule.on:
                continue
            if _true(env.evaluate(sh.predicate, tool, args)):
                continue  # violated, not adjacent
            found = self._moves(env, tool, args, sh)
            if found:
                out.append(Adjacency(sh.rule.id, sh.kind, found))
        return out

    def _moves(
        self, env: Environment, tool: str, args: dict[str, Any], sh: RuleShape
    ) -> tuple[Move, ...]:
        moves = _moves(self.spec, sh)
        flips = [m for m in moves if _true(env.evaluate(m.sql, tool, args))]
        if flips:
            return (flips[0],)
        if sh.kind != "multi":
            return ()
        return self._pair(env, tool, args, sh)

    def _pair(
        self, env: Environment, tool: str, args: dict[str, Any], sh: RuleShape
    ) -> tuple[Move, ...]:
        """Two moves on two inputs that flip a multi-condition rule together."""
        for a, b, sql in self._pairs(sh):
            if _true(env.evaluate(sql, tool, args)):
                return (a, b)
        return ()

    def _pairs(self, sh: RuleShape) -> list[tuple[Move, Move, str]]:
        """The two-move variants of a multi-condition rule: for each pair of inputs, the
        first ``PAIR_MOVES`` moves of each (built once per process)."""
        if sh.rule.id in self._pair_cache:
            return self._pair_cache[sh.rule.id]
        moves = _moves(self.spec, sh)
        by_input: dict[Input, list[Move]] = {}
        for m in moves:
            by_input.setdefault(m.input, []).append(m)
        out: list[tuple[Move, Move, str]] = []
        tree = sqlglot.parse_one(sh.predicate, read="sqlite")
        for x, y in itertools.combinations(list(by_input)[:MAX_INPUTS], 2):
            for a in by_input[x][:PAIR_MOVES]:
                once = _variant_tree(tree, self.spec, sh.rule, a.input, a.step)
                for b in by_input[y][:PAIR_MOVES]:
                    sql = _variant_tree(once, self.spec, sh.rule, b.input, b.step)
                    out.append((a, b, sql.sql(dialect="sqlite")))
        self._pair_cache[sh.rule.id] = out
        return out
