"""Spec SQL is parsed, not pasted: the accepted subset of SQLite for conditions, checks and effects.

Every piece of SQL a spec carries (rule ``when`` / ``condition`` / ``detail`` / ``repair.value``,
effect ``when`` / ``sql``, column ``check``) is parsed with sqlglot (SQLite dialect) and checked
before it is compiled:

- an expression field is one expression: no statement, no ``;``, no ``WITH`` (so no recursive
  query), no parameters;
- an effect is INSERT / UPDATE statements on the spec's own tables, nothing else;
- every table is a spec table, every column exists where it is used, ``NEW`` / ``OLD`` only
  where the rule's events provide them, and only the functions in ``ALLOWED_FUNCTIONS``;
- SQLite's own reading of the text (its tokenizer rules, in ``_sqltext``) must agree with the
  parser's on where strings, quoted names and comments begin and end, so the text that is
  checked is the text SQLite runs.

The validated original text is what the compiler pastes, so compiled DDL stays byte-identical.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError

from veritask.policy._spec import DomainSpec, Event, Rule
from veritask.policy._sql import sql_literal
from veritask.policy._sqltext import reserved_word, tokenize

Loc = tuple[str | int, ...]

ALLOWED_FUNCTIONS = frozenset(
    {
        "abs", "avg", "coalesce", "count", "glob", "group_concat", "ifnull", "iif", "instr",
        "length", "like", "lower", "ltrim", "max", "min", "nullif", "round", "rtrim", "sign",
        "substr", "substring", "sum", "total", "trim", "typeof", "upper",
    }
)  # fmt: skip
"""SQLite functions spec SQL may call: deterministic, bounded, no side effects."""

MAX_SQL_CHARS = 20_000
"""The longest piece of SQL one field may hold."""

_ROWID = frozenset({"rowid", "oid", "_rowid_"})
_SCOPES = (exp.Select, exp.Update, exp.Insert, exp.Delete)
_FORBIDDEN: tuple[type[exp.Expr], ...] = (
    exp.DML,
    exp.DDL,
    exp.Command,
    exp.Pragma,
    exp.Attach,
    exp.Detach,
    exp.Transaction,
    exp.Commit,
    exp.Rollback,
    exp.Placeholder,
    exp.Parameter,
)
_QUOTED = frozenset(
    {
        "STRING", "IDENTIFIER", "HEX_STRING", "BIT_STRING", "BYTE_STRING", "NATIONAL_STRING",
        "RAW_STRING", "HEREDOC_STRING", "UNICODE_STRING",
    }
)  # fmt: skip
_SAFE_INSERT = (None, "IGNORE", "ABORT", "FAIL", "ROLLBACK")


@dataclass(frozen=True)
class Scope:
    """What one piece of spec SQL may refer to.

    Attributes:
        tables: every spec table and its columns.
        subject: the rule's or effect's table, or the table a column CHECK belongs to.
        pseudo: the trigger rows available (``NEW``, ``OLD``); empty for a column CHECK.
    """

    tables: Mapping[str, frozenset[str]]
    subject: str
    pseudo: tuple[str, ...]


@contextmanager
def _quiet() -> Iterator[None]:
    """Silence sqlglot's 'falling back to a Command' warnings: a Command is refused anyway."""
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _syntax_message(exc: ParseError) -> str:
    err = exc.errors[0] if exc.errors else {}
    desc = str(err.get("description") or exc).splitlines()[0]
    desc = re.sub(r"<class '(?:\w+\.)*(\w+)'>", r"\1", desc)
    line, col = err.get("line"), err.get("col")
    if line is None:
        return f"syntax error: {desc}"
    return f"syntax error at line {line}, column {col} of the SQL: {desc}"


def _lexical_problem(text: str, statements: bool) -> str | None:
    """Check the text as SQLite's tokenizer reads it, and that sqlglot reads it the same way."""
    if len(text) > MAX_SQL_CHARS:
        return f"is longer than {MAX_SQL_CHARS} characters"
    ours = tokenize(text)
    for tok in ours:
        if tok.kind == "op" and tok.text in "'\"`[":
            return f"unterminated quote {tok.text} at offset {tok.start}"
        if tok.kind == "comment" and tok.text.startswith("/*") and not tok.text.endswith("*/"):
            return "unterminated /* comment"
        if tok.text == ";" and tok.kind == "op" and not statements:
            return "must be a single expression: ';' is not allowed"
    try:
        theirs = sqlglot.Dialect.get_or_raise("sqlite").tokenize(text)
    except SqlglotError as exc:
        return f"syntax error: {str(exc).splitlines()[0]}"
    quoted = {(t.start, t.end + 1) for t in theirs if t.token_type.name in _QUOTED}
    covered = {i for t in theirs for i in range(t.start, t.end + 1)}
    same = quoted == {(t.start, t.end) for t in ours if t.kind in ("str", "qident")}
    if not same or any(t.start not in covered for t in ours if t.kind not in ("ws", "comment")):
        return "is read differently by SQLite and by the SQL checker (quotes or comments)"
    return None


def _parse(text: str, statements: bool) -> tuple[list[exp.Expr], str | None]:
    problem = _lexical_problem(text, statements)
    if problem is not None:
        return [], problem
    try:
        with _quiet():
            trees = sqlglot.parse(text, read="sqlite")
    except ParseError as exc:
        return [], _syntax_message(exc)
    except (SqlglotError, RecursionError) as exc:
        return [], f"syntax error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
    return [t for t in trees if t is not None], None


def _sample_functions() -> tuple[frozenset[type[exp.Func]], frozenset[str]]:
    """The sqlglot node types (and anonymous names) that the allowed SQLite functions parse to."""
    samples = [f"{f}({', '.join(['1'] * n)})" for f in ALLOWED_FUNCTIONS for n in (1, 2, 3)]
    samples += [
        "CASE WHEN 1 THEN 2 ELSE 3 END",
        "CASE 1 WHEN 1 THEN 2 END",
        "CAST(1 AS INTEGER)",
        "EXISTS (SELECT 1)",
        "1 AND 2 OR 3",
        "COUNT(*)",
        "COUNT(DISTINCT 1)",
    ]
    kinds: set[type[exp.Func]] = set()
    names: set[str] = set()
    for sample in samples:
        try:
            with _quiet():
                tree = sqlglot.parse_one(sample, read="sqlite")
        except SqlglotError:
            continue
        for node in tree.walk():
            if isinstance(node, exp.Anonymous):
                names.add(node.name.lower())
            elif isinstance(node, exp.Func):
                kinds.add(type(node))
    return frozenset(kinds), frozenset(names) & ALLOWED_FUNCTIONS


_FUNC_KINDS, _FUNC_NAMES = _sample_functions()


def _function_problem(node: exp.Func) -> str | None:
    if isinstance(node, exp.Anonymous):
        if node.name.lower() in _FUNC_NAMES:
            return None
        name = node.name
    elif type(node) in _FUNC_KINDS:
        return None
    else:
        name = node.sql(dialect="sqlite").split("(")[0].strip() or type(node).__name__
    return f"function {name}() is not allowed (allowed: {', '.join(sorted(ALLOWED_FUNCTIONS))})"


def _statement_kind(tree: exp.Expr) -> str:
    """The first word of a statement as written (SELECT, DELETE, ATTACH, ...)."""
    if isinstance(tree, exp.Command):
        return str(tree.this).upper()
    words = tree.sql(dialect="sqlite").split()
    return words[0].upper() if words else type(tree).__name__.upper()


def _forbidden_message(node: exp.Expr) -> str:
    if isinstance(node, exp.Command):
        return f"{str(node.this).upper()} is not allowed here"
    if isinstance(node, exp.Placeholder | exp.Parameter):
        return "parameters are not allowed"
    return f"{type(node).__name__.upper()} is not allowed here"


def _enclosing_scopes(node: exp.Expr) -> list[exp.Expr]:
    """The query scopes around ``node``, innermost first."""
    out: list[exp.Expr] = []
    parent = node.parent
    while parent is not None:
        if isinstance(parent, _SCOPES):
            out.append(parent)
        parent = parent.parent
    return out


def _aliases(tree: exp.Expr) -> dict[int, dict[str, str]]:
    """For each query scope (by id), its table aliases (and bare names) mapped to table names."""
    out: dict[int, dict[str, str]] = {}
    for table in tree.find_all(exp.Table):
        scopes = _enclosing_scopes(table)
        if scopes:
            out.setdefault(id(scopes[0]), {})[table.alias_or_name.lower()] = table.name.lower()
    return out


@dataclass
class _Resolver:
    """Resolves the column references of one tree against the spec's tables."""

    scope: Scope
    aliases: dict[int, dict[str, str]]

    def _sources(self, node: exp.Expr) -> list[dict[str, str]]:
        found = [self.aliases.get(id(s), {}) for s in _enclosing_scopes(node)]
        if not self.scope.pseudo:
            found.append({self.scope.subject: self.scope.subject})
        return found

    def _has(self, table: str, name: str) -> bool:
        return name in _ROWID or name in self.scope.tables.get(table, frozenset())

    def _pseudo(self, ref: str, name: str) -> str | None:
        if ref not in self.scope.pseudo:
            if not self.scope.pseudo:
                return f"{ref}.{name}: NEW and OLD exist only in rules and effects"
            return f"{ref}.{name} is not available on insert"
        if name != "*" and not self._has(self.scope.subject, name):
            return f"{ref}.{name}: {self.scope.subject} has no column {name!r}"
        return None

    def problem(self, col: exp.Column) -> str | None:
        """Why ``col`` does not resolve, or None when it does."""
        name, qual = col.name.lower(), col.table
        if col.args.get("db") or col.args.get("catalog"):
            return f"schema-qualified column {col.sql(dialect='sqlite')} is not allowed"
        sources = self._sources(col)
        if qual:
            for names in sources:
                if qual.lower() in names:
                    table = names[qual.lower()]
                    ok = name == "*" or self._has(table, name)
                    return None if ok else f"{qual}.{name}: {table} has no column {name!r}"
            if qual.upper() in ("NEW", "OLD"):
                return self._pseudo(qual.upper(), name)
            return f"{qual}.{name}: unknown table or alias {qual!r}"
        if any(self._has(t, name) for names in sources for t in names.values()):
            return None
        if self._select_alias(col, name):
            return None
        hint = " (use NEW.<column> or OLD.<column>)" if self.scope.pseudo else ""
        return f"unknown column {col.name!r}{hint}"

    @staticmethod
    def _select_alias(col: exp.Column, name: str) -> bool:
        for scope in _enclosing_scopes(col):
            if isinstance(scope, exp.Select) and any(
                e.alias.lower() == name for e in scope.expressions if isinstance(e, exp.Alias)
            ):
                return True
        return False


def _table_problem(table: exp.Table, scope: Scope) -> str | None:
    if table.args.get("db") or table.args.get("catalog"):
        return f"schema-qualified table {table.sql(dialect='sqlite')} is not allowed"
    if not isinstance(table.this, exp.Identifier):
        return f"{table.sql(dialect='sqlite')} is not a table of this spec"
    if table.name.lower() not in scope.tables:
        return f"unknown table {table.name!r}"
    return None


def _node_problem(node: exp.Expr, scope: Scope, resolver: _Resolver) -> str | None:
    if isinstance(node, exp.With):
        if node.args.get("recursive"):
            return "WITH RECURSIVE is not allowed (it can run forever)"
        return "WITH (common table expressions) is not supported"
    if isinstance(node, _FORBIDDEN):
        return _forbidden_message(node)
    if isinstance(node, exp.Func):
        return _function_problem(node)
    if isinstance(node, exp.Identifier) and not node.quoted and reserved_word(node.name):
        return f'{node.name!r} is an SQL keyword: write it in double quotes ("{node.name}")'
    if isinstance(node, exp.Table):
        return _table_problem(node, scope)
    if isinstance(node, exp.Column):
        return resolver.problem(node)
    if isinstance(node, exp.From | exp.Join) and not isinstance(node.this, exp.Table):
        return "FROM and JOIN take spec tables only (no subquery or VALUES)"
    if isinstance(node, exp.Select) and not scope.pseudo:
        return "a column CHECK cannot contain a subquery"
    return None


def _tree_problems(tree: exp.Expr, scope: Scope, root: exp.Expr | None = None) -> Iterator[str]:
    resolver = _Resolver(scope, _aliases(tree))
    seen: set[str] = set()
    for node in tree.walk():
        if node is root:
            continue
        problem = _node_problem(node, scope, resolver)
        if problem is not None and problem not in seen:
            seen.add(problem)
            yield problem


def expression_problems(text: str, scope: Scope) -> list[str]:
    """What is wrong with ``text`` as one SQL expression in ``scope`` (empty when it is fine)."""
    if not text.strip():
        return ["is empty: write one SQL expression"]
    trees, error = _parse(text, statements=False)
    if error is not None:
        return [error]
    if len(trees) != 1:
        return ["must be a single expression"]
    tree = trees[0]
    bare_query = isinstance(tree, exp.Query) and not isinstance(tree, exp.Subquery)
    if bare_query or isinstance(tree, exp.DML | exp.DDL | exp.Command):
        kind = _statement_kind(tree)
        return [f"must be an expression, not a {kind} statement (parenthesize a subquery)"]
    return list(_tree_problems(tree, scope))


def _target_problems(tree: exp.Insert | exp.Update, scope: Scope) -> Iterator[str]:
    target = tree.this
    columns: list[str] = []
    if isinstance(target, exp.Schema):
        columns = [c.name.lower() for c in target.expressions]
        target = target.this
    if not isinstance(target, exp.Table) or target.name.lower() not in scope.tables:
        yield f"writes to {target.sql(dialect='sqlite')!r}, which is not a table of this spec"
        return
    known = scope.tables[target.name.lower()]
    for name in columns:
        if name not in known:
            yield f"{target.name} has no column {name!r}"


def _statement_problems(tree: exp.Expr, scope: Scope) -> Iterator[str]:
    if not isinstance(tree, exp.Insert | exp.Update):
        yield f"only INSERT and UPDATE statements are allowed, not {_statement_kind(tree)}"
        return
    if isinstance(tree, exp.Insert) and tree.args.get("alternative") not in _SAFE_INSERT:
        yield f"INSERT OR {tree.args['alternative']} is not allowed"
    for clause in ("conflict", "returning", "with_", "with"):
        if tree.args.get(clause):
            yield f"{clause.rstrip('_').upper().replace('CONFLICT', 'ON CONFLICT')} is not allowed"
    yield from _target_problems(tree, scope)
    yield from _tree_problems(tree, scope, root=tree)


def statement_problems(text: str, scope: Scope) -> list[str]:
    """What is wrong with ``text`` as an effect body: INSERT / UPDATE statements on spec tables."""
    trees, error = _parse(text, statements=True)
    if error is not None:
        return [error]
    if not trees:
        return ["has no statement"]
    out: list[str] = []
    for i, tree in enumerate(trees, 1):
        prefix = f"statement {i}: " if len(trees) > 1 else ""
        out += [prefix + p for p in _statement_problems(tree, scope)]
    return out


def _pseudo_rows(events: list[Event]) -> tuple[str, ...]:
    return ("NEW",) if "insert" in events else ("NEW", "OLD")


def _condition_text(rule: Rule) -> str | None:
    cond = rule.condition
    if "{threshold}" in cond:
        if rule.threshold is None or rule.threshold.value is None:
            return None  # reported by the reference checks
        cond = cond.replace("{threshold}", sql_literal(rule.threshold.value))
    return cond


def _rule_fields(rule: Rule) -> Iterator[tuple[Loc, str | None]]:
    yield ("when",), rule.when
    yield ("condition",), _condition_text(rule)
    yield ("detail",), rule.detail
    if rule.repair is not None:
        yield ("repair", "value"), rule.repair.value


def _check_columns(
    spec: DomainSpec, tables: Mapping[str, frozenset[str]]
) -> Iterator[tuple[Loc, str]]:
    for i, table in enumerate(spec.tables):
        for j, col in enumerate(table.columns):
            if col.check:
                loc: Loc = ("tables", i, "columns", j, "check")
                for msg in expression_problems(col.check, Scope(tables, table.name, ())):
                    yield loc, msg


def check_spec_sql(spec: DomainSpec) -> Iterator[tuple[Loc, str]]:
    """Yield (location, message) for every piece of spec SQL outside the accepted subset."""
    tables = {t.name: frozenset(t.column_names) for t in spec.tables}
    yield from _check_columns(spec, tables)
    for i, rule in enumerate(spec.rules):
        if rule.table not in tables:
            continue
        scope = Scope(tables, rule.table, _pseudo_rows(list(rule.on)))
        for part, text in _rule_fields(rule):
            if text is None or (not text and part != ("condition",)):  # optional and left out
                continue
            for msg in expression_problems(text, scope):
                yield ("rules", i, *part), msg
    for i, effect in enumerate(spec.effects):
        if effect.table not in tables:
            continue
        scope = Scope(tables, effect.table, _pseudo_rows([effect.on]))
        for msg in expression_problems(effect.when, scope) if effect.when else []:
            yield ("effects", i, "when"), msg
        for msg in statement_problems(effect.sql, scope):
            yield ("effects", i, "sql"), msg
