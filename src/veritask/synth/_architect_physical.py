"""Physical checks of Architect output: does the SQL run in SQLite, do the examples behave.

Model-written SQL (column checks, rule conditions, effect bodies) is executed one statement at a
time in an in-memory database whose authorizer refuses ATTACH, DETACH and PRAGMA, and every
statement must be the CREATE TABLE / INDEX / TRIGGER the compiler meant to emit. SQLite resolves
the names inside a trigger body only when a statement that fires it is prepared, so each trigger
is also prepared against ``EXPLAIN INSERT`` / ``EXPLAIN UPDATE`` of its table: an unknown column
in a subquery is reported at this stage, with SQLite's message, not at the first tool call.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from veritask.env import ExampleFailure, build_image, insert_rows
from veritask.env import run_spec_examples as run_env_examples
from veritask.policy import DomainSpec, Effect, Rule, compile_sql, quote_ident, table_order
from veritask.synth._architect_artifacts import StageError

_DENIED = {sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH, sqlite3.SQLITE_PRAGMA}
_CREATE = re.compile(r"CREATE\s+(TABLE|INDEX|TRIGGER)\s+\"((?:[^\"]|\"\")+)\"", re.IGNORECASE)
_ON_TABLE = re.compile(r"\bON\s+\"((?:[^\"]|\"\")+)\"", re.IGNORECASE)


class _Sandbox:
    """An in-memory database for trying model-written DDL."""

    def __init__(self) -> None:
        self.conn = sqlite3.connect(":memory:", isolation_level=None)
        self.conn.execute("PRAGMA foreign_keys = ON")
        self.conn.set_authorizer(self._authorize)

    @staticmethod
    def _authorize(action: int, *_: str | None) -> int:
        return sqlite3.SQLITE_DENY if action in _DENIED else sqlite3.SQLITE_OK

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def trial(self) -> Iterator[sqlite3.Connection]:
        """Run DDL that is undone afterwards."""
        self.conn.execute("SAVEPOINT vt_trial")
        try:
            yield self.conn
        finally:
            self.conn.execute("ROLLBACK TO vt_trial")
            self.conn.execute("RELEASE vt_trial")


def split_statements(script: str) -> list[str]:
    """Split SQL text into complete statements (SQLite's own notion, triggers included)."""
    out: list[str] = []
    start = 0
    for match in re.finditer(";", script):
        candidate = script[start : match.end()]
        if sqlite3.complete_statement(candidate):
            out.append(candidate.strip())
            start = match.end()
    rest = script[start:]
    if _strip_comments(rest).strip():
        out.append(rest.strip())
    return out


def _strip_comments(sql: str) -> str:
    lines = [ln for ln in sql.splitlines() if not ln.lstrip().startswith("--")]
    return "\n".join(lines).strip()


def _created(statement: str) -> tuple[str, str] | None:
    """``(kind, name)`` of a CREATE statement, or None for anything else."""
    match = _CREATE.match(_strip_comments(statement))
    if match is None:
        return None
    return match.group(1).upper(), match.group(2).replace('""', '"')


def _execute_ddl(conn: sqlite3.Connection, statement: str, kinds: tuple[str, ...]) -> str | None:
    """Execute one statement that must be a CREATE of one of ``kinds``; the error, or None."""
    created = _created(statement)
    if created is None or created[0] not in kinds:
        head = " ".join(_strip_comments(statement).split())[:120]
        return f"expected one CREATE {' or '.join(kinds)} statement, got: {head}"
    try:
        conn.execute(statement)
    except (sqlite3.Error, sqlite3.Warning) as exc:
        return str(exc)
    return None


# -- tables ------------------------------------------------------------------------------------


def _table_of(statement: str) -> str:
    created = _created(statement)
    if created is not None and created[0] == "TABLE":
        return created[1]
    on = _ON_TABLE.search(statement)
    return on.group(1) if on else "?"


def check_tables_sql(spec: DomainSpec, stage: str = "tables") -> list[StageError]:
    """Execute the spec's CREATE TABLE statements, then load its seed rows (FKs, CHECKs on)."""
    sandbox = _Sandbox()
    try:
        errors = _create_tables(sandbox.conn, spec, stage)
        return errors or _load_seed_rows(sandbox.conn, spec, stage)
    finally:
        sandbox.close()


def _create_tables(conn: sqlite3.Connection, spec: DomainSpec, stage: str) -> list[StageError]:
    errors: list[StageError] = []
    for statement in split_statements(compile_sql(spec).tables):
        problem = _execute_ddl(conn, statement, ("TABLE", "INDEX"))
        if problem is not None:
            message = f"SQLite rejected the DDL: {problem}"
            errors.append(
                StageError(stage, "ddl_compile", message, f"table {_table_of(statement)}")
            )
    return errors


def _load_seed_rows(conn: sqlite3.Connection, spec: DomainSpec, stage: str) -> list[StageError]:
    errors: list[StageError] = []
    conn.execute("BEGIN")
    try:
        for name in table_order(spec):
            for k, row in enumerate(spec.seed.get(name, [])):
                try:
                    insert_rows(conn, spec, {name: [row]})
                except (sqlite3.Error, ValueError) as exc:
                    errors.append(
                        StageError(
                            stage,
                            "seed_rows",
                            f"the row {json.dumps(row, sort_keys=True)} does not load: {exc}",
                            f"seed.{name}[{k}]",
                        )
                    )
    finally:
        conn.execute("ROLLBACK")
    if not errors:
        errors += _build_errors(spec, stage)
    return errors


def _build_errors(spec: DomainSpec, stage: str) -> list[StageError]:
    try:
        build_image(spec)
    except Exception as exc:  # report any build failure of a model-made spec
        return [StageError(stage, "build", f"the database image does not build: {exc}")]
    return []


# -- triggers ----------------------------------------------------------------------------------


def _probe_sql(spec: DomainSpec, table: str, event: str) -> str:
    """A statement whose preparation compiles every ``event`` trigger on ``table``."""
    name = quote_ident(table)
    if event == "insert":
        return f"EXPLAIN INSERT INTO {name} DEFAULT VALUES"
    column = quote_ident(spec.table(table).columns[0].name)
    return f"EXPLAIN UPDATE {name} SET {column} = {column}"


def _try_trigger(
    sandbox: _Sandbox, spec: DomainSpec, statement: str, table: str, event: str
) -> str | None:
    """Create one trigger and prepare a statement that fires it; SQLite's error, or None."""
    with sandbox.trial() as conn:
        problem = _execute_ddl(conn, statement, ("TRIGGER",))
        if problem is not None:
            return problem
        try:
            conn.execute(_probe_sql(spec, table, event))
        except (sqlite3.Error, sqlite3.Warning) as exc:
            return str(exc)
    return None


def _units(spec: DomainSpec) -> dict[str, tuple[str, str, list[Rule] | Effect]]:
    """Trigger name -> (table, event, what it compiles) for every trigger ``compile_sql`` emits."""
    units: dict[str, tuple[str, str, list[Rule] | Effect]] = {}
    for table in spec.tables:
        for event in ("insert", "update"):
            rules = [r for r in spec.rules if r.table == table.name and event in r.on]
            if rules:
                units[f"vt_rules_{table.name}_{event}"] = (table.name, event, rules)
    for effect in spec.effects:
        units[f"vt_effect_{effect.id.lower()}"] = (effect.table, effect.on, effect)
    return units


def _rule_trigger(spec: DomainSpec, rule: Rule) -> str:
    """The trigger ``compile_sql`` would emit for ``rule`` alone."""
    return compile_sql(spec.model_copy(update={"rules": [rule], "effects": []})).triggers


def _blame_rules(
    sandbox: _Sandbox, spec: DomainSpec, rules: list[Rule], table: str, event: str
) -> list[tuple[str, str]]:
    """The rules of a failing trigger that fail on their own, with SQLite's message."""
    out = []
    for rule in rules:
        problem = _try_trigger(sandbox, spec, _rule_trigger(spec, rule), table, event)
        if problem is not None:
            out.append((f"rule {rule.id}", problem))
    return out


def _trigger_errors(
    sandbox: _Sandbox, spec: DomainSpec, statement: str, stage: str
) -> list[StageError]:
    created = _created(statement)
    unit = _units(spec).get(created[1]) if created is not None else None
    if unit is None:
        head = " ".join(_strip_comments(statement).split())[:120]
        return [StageError(stage, "trigger_compile", f"unexpected SQL statement: {head}")]
    table, event, what = unit
    problem = _try_trigger(sandbox, spec, statement, table, event)
    if problem is None:
        return []
    blamed: list[tuple[str, str]] = []
    if isinstance(what, list):
        blamed = _blame_rules(sandbox, spec, what, table, event)
    else:
        blamed = [(f"effect {what.id}", problem)]
    if not blamed:
        blamed = [(f"trigger {created[1] if created else '?'}", problem)]
    return [
        StageError(stage, "trigger_compile", f"the compiled trigger fails in SQLite: {msg}", item)
        for item, msg in blamed
    ]


def check_triggers_sql(spec: DomainSpec, stage: str = "rules") -> list[StageError]:
    """Create and prepare every trigger of the spec, each on its own; blame rules, not triggers."""
    sandbox = _Sandbox()
    try:
        errors = _create_tables(sandbox.conn, spec, stage)
        if errors:
            return errors
        for statement in split_statements(compile_sql(spec).triggers):
            errors += _trigger_errors(sandbox, spec, statement, stage)
        return errors
    finally:
        sandbox.close()


# -- examples ----------------------------------------------------------------------------------


def run_spec_examples(spec: DomainSpec, stage: str = "rules") -> list[StageError]:
    """Execute every rule and effect example on a fresh environment built from the spec (the
    runner of ``veritask.env``), as stage errors."""
    return [as_stage_error(f, stage) for f in run_env_examples(spec)]


def as_stage_error(failure: ExampleFailure, stage: str) -> StageError:
    """An example failure in the structured form sent back to the model."""
    return StageError(stage, failure.check, failure.message, failure.where or None)
