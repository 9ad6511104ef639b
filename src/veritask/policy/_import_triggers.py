"""Turn SQLite triggers into spec rules (BEFORE, RAISE branches) and effects (AFTER, verbatim).

A BEFORE INSERT/UPDATE trigger is imported when its body is one or more
``SELECT CASE WHEN <cond> THEN RAISE(ABORT, '[CODE] message') ... END;`` statements (or
``SELECT RAISE(ABORT, '[CODE] message') WHERE <cond>;``): each WHEN branch becomes one rule
``<TRIGGER_NAME>_<n>``, numbered across the body. The trigger's WHEN clause becomes the rule's
``when``. ``UPDATE OF c1, c2`` is approximated by ANDing ``NEW.c IS NOT OLD.c`` (ORed over the
columns) into ``when``: SQLite fires ``UPDATE OF`` when a column is assigned, even to its
current value, the spec only when the value changes. AFTER triggers become effects whose SQL is
the body verbatim. Anything else is a SpecError naming the trigger.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from veritask.policy._sql import quote_ident
from veritask.policy._sqltext import Statement, Tok, fail, render, split_top, unquote

_RAISE_TEXT = re.compile(r"^\[(?P<code>[A-Z][A-Z0-9_]*)\]\s*(?P<message>\S.*)$", re.S)
_SUBQUERY_COUNTER = re.compile(r"^\(\s*SELECT\s+(\w+)\s+FROM\s+(\w+)\s+WHERE\b.*\)$", re.I | re.S)
_RAISE_ACTIONS = ("ABORT", "FAIL")
_CASE_WORDS = ("WHEN", "THEN", "ELSE", "END")
_EXPECTED = "SELECT CASE WHEN <cond> THEN RAISE(ABORT, '[CODE] message') ... END"
_CATEGORIES = {
    "QUOTA_EXCEEDED": "quota",
    "IRREVERSIBLE": "irreversibility",
    "IMMUTABLE": "irreversibility",
    "AUTHORITY_ERROR": "authority",
    "CONFLICT_OF_INTEREST": "authority",
    "PREREQ_FAIL": "prerequisite",
}
_Failer = Callable[[str], NoReturn]
Branch = tuple[list[Tok], list[Tok]]


@dataclass(frozen=True)
class Trigger:
    """A parsed CREATE TRIGGER statement."""

    name: str
    timing: str
    """``BEFORE`` or ``AFTER``."""
    event: str
    """``insert`` or ``update``."""
    table: str
    of_columns: list[str]
    when: str | None
    body: list[list[Tok]]
    """The body's statements, as significant tokens."""
    body_sql: str
    comment: str
    line: int
    order: int
    """Position in the script; SQLite fires newer triggers first."""


class _Cursor:
    """Walks the significant tokens of a CREATE TRIGGER header."""

    def __init__(self, tokens: list[Tok]) -> None:
        self.tokens = tokens
        self.i = 0

    def take(self, *words: str) -> str | None:
        if self.i < len(self.tokens) and self.tokens[self.i].kw in words:
            self.i += 1
            return self.tokens[self.i - 1].kw
        return None

    def name(self) -> str:
        tok = self.tokens[self.i]
        self.i += 1
        if self.i < len(self.tokens) and self.tokens[self.i].text == ".":
            self.i += 1
            return self.name()
        return tok.name


def _header(cur: _Cursor, fail_on: Callable[[str, str], NoReturn]) -> tuple[str, ...]:
    """(name, timing, event, table) and the UPDATE OF columns joined by commas."""
    cur.take("CREATE")
    cur.take("TEMP", "TEMPORARY")
    cur.take("TRIGGER")
    if cur.take("IF"):
        cur.take("NOT")
        cur.take("EXISTS")
    name = cur.name()
    timing = cur.take("BEFORE", "AFTER", "INSTEAD") or "BEFORE"
    event = cur.take("INSERT", "UPDATE", "DELETE") or ""
    if timing == "INSTEAD" or event in ("DELETE", ""):
        fail_on(name, "only BEFORE/AFTER INSERT/UPDATE triggers can be imported")
    columns: list[str] = []
    if event == "UPDATE" and cur.take("OF"):
        columns.append(cur.name())
        while cur.tokens[cur.i].text == ",":
            cur.i += 1
            columns.append(cur.name())
    cur.take("ON")
    return name, timing, event.lower(), cur.name(), ",".join(columns)


def _body_sql(stmt: Statement, body: list[Tok]) -> str:
    """The body text as written, dedented (the first line is padded to its real column)."""
    if not body:
        return ""
    before = stmt.text(stmt.tokens[0], body[0])[: -len(body[0].text)]
    column = len(before) - (before.rfind("\n") + 1)
    return textwrap.dedent(" " * column + stmt.text(body[0], body[-1])).strip()


def parse_trigger(stmt: Statement, source: str, order: int) -> Trigger:
    """Parse a CREATE TRIGGER statement that SQLite has accepted.

    Args:
        stmt: The statement.
        source: Where the script came from, for errors.
        order: Position of the statement in the script.

    Returns:
        The trigger's parts.

    Raises:
        SpecError: The trigger is INSTEAD OF or ON DELETE.
    """

    def fail_on(name: str, message: str) -> NoReturn:
        fail(source, stmt.line, f"trigger {name}", message)

    cur = _Cursor(stmt.tokens)
    name, timing, event, table, of_columns = _header(cur, fail_on)
    if cur.take("FOR"):
        cur.take("EACH")
        cur.take("ROW")
    begin = next(i for i in range(cur.i, len(cur.tokens)) if cur.tokens[i].kw == "BEGIN")
    when = render(cur.tokens[cur.i : begin]) if cur.take("WHEN") else None
    end = max(i for i, t in enumerate(stmt.tokens) if t.kw == "END")
    body = stmt.tokens[begin + 1 : end]
    columns = of_columns.split(",") if of_columns else []
    return Trigger(
        name=name,
        timing=timing,
        event=event,
        table=table,
        of_columns=columns,
        when=when,
        body=split_top(body, ";"),
        body_sql=_body_sql(stmt, body),
        comment=stmt.comment,
        line=stmt.line,
        order=order,
    )


def _guard(trigger: Trigger) -> str | None:
    parts = [trigger.when] if trigger.when else []
    if trigger.of_columns:
        refs = [
            c if re.fullmatch(r"[a-z][a-z0-9_]*", c) else quote_ident(c) for c in trigger.of_columns
        ]
        parts.append(" OR ".join(f"NEW.{c} IS NOT OLD.{c}" for c in refs))
    if len(parts) < 2:
        return parts[0] if parts else None
    return " AND ".join(f"({p})" for p in parts)


def _case_parts(tokens: Sequence[Tok]) -> list[tuple[str, list[Tok]]]:
    """Split the tokens after ``CASE`` into (WHEN|THEN|ELSE|END, tokens) at nesting depth 0."""
    parts: list[tuple[str, list[Tok]]] = [("", [])]
    depth = 0
    for tok in tokens:
        if depth == 0 and tok.kw in _CASE_WORDS:
            parts.append((tok.kw, []))
            continue
        depth += 1 if tok.text == "(" or tok.kw == "CASE" else 0
        depth -= 1 if tok.text == ")" or tok.kw == "END" else 0
        parts[-1][1].append(tok)
    return parts


def _select_raise(stmt: Sequence[Tok]) -> list[Branch] | None:
    """``SELECT RAISE(...) WHERE cond`` as one branch."""
    where = next((i for i, t in enumerate(stmt) if t.kw == "WHERE"), None)
    return [(list(stmt[where + 1 :]), list(stmt[1:where]))] if where else None


def _branches(stmt: Sequence[Tok]) -> list[Branch] | None:
    """(condition, THEN result) pairs of one body statement; None for another shape."""
    words = [t.kw for t in stmt[:2]]
    if words == ["SELECT", "RAISE"]:
        return _select_raise(stmt)
    if words != ["SELECT", "CASE"]:
        return None
    parts = _case_parts(stmt[2:])
    if parts[0][1] or parts[-1] != ("END", []):
        return None
    middle = parts[1:-1]
    if middle and middle[-1][0] == "ELSE":
        if [t.kw for t in middle[-1][1]] != ["NULL"]:
            return None
        middle = middle[:-1]
    if not middle or [k for k, _ in middle] != ["WHEN", "THEN"] * (len(middle) // 2):
        return None
    return [(middle[i][1], middle[i + 1][1]) for i in range(0, len(middle), 2)]


def _raise_parts(result: Sequence[Tok]) -> tuple[str, str, str | None] | None:
    """(code, message, detail) from ``RAISE(ABORT, '[CODE] message' [|| detail])``."""
    if len(result) < 6 or result[0].kw != "RAISE" or result[1].text != "(":
        return None
    if result[2].kw not in _RAISE_ACTIONS or result[3].text != "," or result[4].kind != "str":
        return None
    match = _RAISE_TEXT.match(unquote(result[4].text))
    rest = list(result[5:-1])
    if match is None or result[-1].text != ")" or (rest and rest[0].text != "||"):
        return None
    detail = render(rest[1:]) if rest else None
    return match["code"], match["message"].strip(), detail


def category(code: str) -> str:
    """Guess a rule category from its error code."""
    if code.startswith("CALCULATION_"):
        return "calculation"
    if code.startswith("SYSTEM_"):
        return "system_control"
    return _CATEGORIES.get(code, "policy")


def _threshold(condition: str) -> tuple[str, dict[str, Any]] | None:
    """Lift a trailing ``>= N`` of a quota condition into a threshold a seeder can use."""
    match = re.fullmatch(r"(?P<lhs>.+?)\s*>=\s*(?P<n>\d+)", condition, re.S)
    if match is None or "{" in condition or "}" in condition:
        return None
    counter = _SUBQUERY_COUNTER.match(match["lhs"])
    quantity = f"{counter[2]}.{counter[1]}" if counter else match["lhs"][:80]
    return f"{match['lhs']} >= {{threshold}}", {"quantity": quantity, "value": int(match["n"])}


def _rule_id(trigger: Trigger, suffix: str = "") -> str:
    base = re.sub(r"[^A-Z0-9_]", "_", trigger.name.upper())
    base = base if base[:1].isalpha() else f"T_{base}"
    return f"{base[: 80 - len(suffix)]}{suffix}"


def _rule(trigger: Trigger, index: int, branch: Branch, source: str) -> dict[str, Any]:
    cond, result = branch
    parsed = _raise_parts(result)
    if parsed is None or not cond:
        got = render(result)
        message = f"branch {index}: expected THEN RAISE(ABORT, '[CODE] message'), got {got!r}"
        fail(source, trigger.line, f"trigger {trigger.name}", message)
    code, message, detail = parsed
    rule: dict[str, Any] = {
        "id": _rule_id(trigger, f"_{index}"),
        "table": trigger.table,
        "on": [trigger.event],
        "when": _guard(trigger),
        "condition": render(cond),
        "code": code,
        "category": category(code),
        "message": message,
        "hint": f"See the policy: {message}",
        "detail": detail,
    }
    lifted = _threshold(rule["condition"]) if rule["category"] == "quota" else None
    if lifted is not None:
        rule["condition"], rule["threshold"] = lifted
    return {k: v for k, v in rule.items() if v is not None}


def trigger_rules(trigger: Trigger, source: str) -> list[dict[str, Any]]:
    """One rule (spec data) per WHEN branch of a BEFORE trigger, numbered from 1.

    Raises:
        SpecError: A body statement or a branch has another shape.
    """
    branches: list[Branch] = []
    for n, stmt in enumerate(trigger.body, start=1):
        found = _branches(stmt)
        if found is None:
            where = f"trigger {trigger.name}"
            fail(source, trigger.line, where, f"body statement {n} is not {_EXPECTED}")
        branches += found
    return [_rule(trigger, i, b, source) for i, b in enumerate(branches, start=1)]


def trigger_effect(trigger: Trigger) -> dict[str, Any]:
    """The effect (spec data) of an AFTER trigger: its body SQL, kept verbatim."""
    pattern = rf"^\s*Trigger:\s*{re.escape(trigger.name)}\b\s*"
    description = re.sub(pattern, "", trigger.comment, flags=re.I).strip()
    fallback = f"Trigger {trigger.name} runs after each {trigger.event} on {trigger.table}."
    effect = {
        "id": _rule_id(trigger),
        "table": trigger.table,
        "on": trigger.event,
        "when": _guard(trigger),
        "description": description or fallback,
        "sql": trigger.body_sql,
    }
    return {k: v for k, v in effect.items() if v is not None}


def firing_order(triggers: list[Trigger], tables: list[str]) -> list[Trigger]:
    """Triggers grouped by table (script order) and event, newest first within a group.

    SQLite fires the newest trigger of a (table, event) first, and the compiled spec checks
    rules (and runs effects) in spec order, so this order keeps the first reported violation.
    """
    position = {name.lower(): i for i, name in enumerate(tables)}
    return sorted(
        triggers, key=lambda t: (position.get(t.table.lower(), len(position)), t.event, -t.order)
    )
