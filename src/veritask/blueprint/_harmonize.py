"""Conflicts between fused services' rules on the shared person, and bridge rules
(AgentSkiller section 3.13: conflict detection and interaction-rule synthesis), symbolic.

After fusion every service reads the one person table. A rule states a requirement on a person
column when its condition looks the acting person up (``SELECT ... FROM persons WHERE id =
NEW.fk AND col OP literal``). Two rules of different services with requirements on the same
column that differ are a **conflict**:

- ``thresholds``: both bound the column from the same side with different values (``age >= 18``
  and ``age >= 21``): a person can pass one service and fail the other;
- ``incompatible``: no value meets both (``= 1`` and ``= 0``, ``= v`` and ``!= v``, bounds that
  do not meet);
- ``different``: any other pair (reported, nothing written).

For a ``thresholds`` conflict a **bridge rule** is written on the laxer rule's table: it rejects
exactly the persons in the gap (they meet the laxer bound, not the stricter one), so the fused
policy holds every service to the stricter requirement and the laxer rule keeps its own refusals.
Its examples are a call in the gap (rejected by the bridge, when a seed person sits there) and
the laxer rule's own accepted calls; the fusion runs them, and a bridge whose examples fail is
dropped with a note.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

Json = dict[str, Any]
OPS: dict[type[exp.Expression], str] = {
    exp.EQ: "=",
    exp.NEQ: "!=",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.LT: "<",
    exp.LTE: "<=",
}
FLIP = {"=": "=", "!=": "!=", ">": "<", ">=": "<=", "<": ">", "<=": ">="}


@dataclass(frozen=True)
class Requirement:
    """``column op value`` a rule asks of the acting person, and the key it looks them up by."""

    column: str
    op: str
    value: Any
    fk: str

    def text(self) -> str:
        """The requirement as SQL on the person row."""
        return f"{self.column} {self.op} {_literal(self.value)}"

    def holds(self, value: Any) -> bool:
        """Whether a person's ``value`` meets the requirement."""
        if value is None:
            return False
        return bool(
            {
                "=": value == self.value,
                "!=": value != self.value,
                ">": value > self.value,
                ">=": value >= self.value,
                "<": value < self.value,
                "<=": value <= self.value,
            }[self.op]
        )


@dataclass(frozen=True)
class Conflict:
    """Two rules of different services that ask different things of one person column."""

    kind: str
    column: str
    rules: tuple[str, str]
    requirements: tuple[str, str]
    bridge: str | None = None

    def to_json(self) -> Json:
        """A JSON-ready dict."""
        return {
            "kind": self.kind,
            "column": self.column,
            "rules": list(self.rules),
            "requirements": list(self.requirements),
            "bridge": self.bridge,
        }


def _literal(value: Any) -> str:
    return f"'{value}'" if isinstance(value, str) else str(value)


def _value(node: exp.Expression) -> Any:
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        text = node.this
        return float(text) if "." in text else int(text)
    if isinstance(node, exp.Boolean):
        return int(bool(node.this))
    raise ValueError("not a literal")


def _required(select: exp.Select) -> bool:
    """Whether the rule fires when the lookup finds nothing (``NOT EXISTS (...)``): its
    predicates are then what the person must meet."""
    node = select.parent
    while isinstance(node, exp.Paren):
        node = node.parent
    if not isinstance(node, exp.Exists):
        return False
    node = node.parent
    while isinstance(node, exp.Paren):
        node = node.parent
    return isinstance(node, exp.Not)


def person_requirements(condition: str, person: str) -> list[Requirement]:
    """The requirements a rule condition states on the person it looks up by ``NEW.fk``."""
    try:
        tree = sqlglot.parse_one(condition, read="sqlite")
    except sqlglot.errors.SqlglotError:
        return []
    out: list[Requirement] = []
    for select in tree.find_all(exp.Select):
        source = select.args.get("from_") or select.args.get("from")
        where = select.args.get("where")
        if source is None or where is None or source.find(exp.Table) is None:
            continue
        if source.find(exp.Table).name != person or not _required(select):
            continue
        fk, found = None, []
        for node in where.find_all(*OPS):
            left, right = node.this, node.expression
            op = OPS[type(node)]
            if isinstance(right, exp.Column) and not isinstance(left, exp.Column):
                left, right, op = right, left, FLIP[op]
            if not isinstance(left, exp.Column):
                continue
            if isinstance(right, exp.Column) and right.table.upper() == "NEW" and op == "=":
                fk = right.name if left.name == "id" else fk
                continue
            try:
                found.append((left.name, op, _value(right)))
            except ValueError:
                continue
        if fk is not None:
            out += [Requirement(c, o, v, fk) for c, o, v in found if c != "id"]
    return out


def _kind(a: Requirement, b: Requirement) -> str:
    lower, upper = {">", ">="}, {"<", "<="}
    if (a.op in lower and b.op in lower) or (a.op in upper and b.op in upper):
        return "thresholds"
    if {a.op, b.op} <= {"=", "!="} and a.value == b.value and a.op != b.op:
        return "incompatible"
    if a.op == b.op == "=":
        return "incompatible"
    if a.op == "=" or b.op == "=":
        eq, other = (a, b) if a.op == "=" else (b, a)
        return "different" if other.holds(eq.value) else "incompatible"
    return "different"


def _stricter(a: Requirement, b: Requirement) -> bool:
    """Whether ``a`` is the stricter of two same-side bounds."""
    if a.value == b.value:
        return a.op in {">", "<"}
    return bool(a.value > b.value) if a.op in {">", ">="} else bool(a.value < b.value)


def find_conflicts(
    rules: list[tuple[str, Json]], person: str
) -> list[tuple[Conflict, Json, Requirement, Requirement]]:
    """Every conflict between rules of different services, with the laxer rule (for a
    ``thresholds`` conflict; the first rule otherwise) and both requirements, laxer first."""
    reqs = [(s, r, q) for s, r in rules for q in person_requirements(r["condition"], person)]
    out: list[tuple[Conflict, Json, Requirement, Requirement]] = []
    for i, (sa, ra, qa) in enumerate(reqs):
        for sb, rb, qb in reqs[i + 1 :]:
            if sa == sb or qa.column != qb.column or (qa.op, qa.value) == (qb.op, qb.value):
                continue
            kind = _kind(qa, qb)
            lax, qlax, qstrict = (rb, qb, qa) if _stricter(qa, qb) else (ra, qa, qb)
            if kind != "thresholds":
                lax, qlax, qstrict = ra, qa, qb
            conflict = Conflict(kind, qa.column, (ra["id"], rb["id"]), (qa.text(), qb.text()))
            out.append((conflict, lax, qlax, qstrict))
    return out


def _accepted(call: Json) -> bool:
    return call.get("expect") in (None, "ok")


def bridge_rule(
    lax: Json, laxer: Requirement, stricter: Requirement, person: str, persons: list[Json]
) -> Json:
    """The bridge rule of a ``thresholds`` conflict (see the module docstring)."""
    rid = f"BRIDGE_{stricter.column.upper()}_{lax['id']}"
    condition = (
        f"EXISTS (SELECT 1 FROM {person} WHERE id = NEW.{laxer.fk} AND {laxer.text()}"
        f" AND NOT ({stricter.text()}))"
    )
    passing = [
        {"calls": [{**c, "expect": "ok"} for c in ex["calls"]]}
        for ex in lax.get("examples", [])
        if all(_accepted(c) for c in ex["calls"])
    ]
    gap = [p for p in persons if laxer.holds(p.get(laxer.column))]
    gap = [p for p in gap if not stricter.holds(p.get(stricter.column))]
    examples: list[Json] = []
    accepted = [c for ex in lax.get("examples", []) for c in ex["calls"] if _accepted(c)]
    if gap and accepted:
        first = accepted[0]
        refused = {**first, "args": {**first["args"], laxer.fk: gap[0]["id"]}, "expect": rid}
        calls = [refused, {**first, "expect": "ok"}]
        examples.append({"name": "a person in the gap is refused", "calls": calls})
    examples += passing
    return {
        "id": rid,
        "table": lax["table"],
        "on": list(lax["on"]),
        "category": "prerequisite",
        "condition": condition,
        "code": lax.get("code", "PREREQ_FAIL"),
        "message": (
            f"Every service asks {stricter.text()} of the person (bridge of two services'"
            f" rules, {laxer.text()} and {stricter.text()})."
        ),
        "hint": f"Check the person's {stricter.column} against the stricter requirement.",
        **({"transaction": lax["transaction"]} if lax.get("transaction") else {}),
        "examples": examples,
    }


__all__ = ["Conflict", "Requirement", "bridge_rule", "find_conflicts", "person_requirements"]
