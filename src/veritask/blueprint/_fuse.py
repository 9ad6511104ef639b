"""Cross-domain fusion (AgentSkiller sections 3.11-3.13), symbolic: two or more specs, one
environment.

- **Namespace isolation**: every table of service ``s`` except its actor becomes ``s_<table>``
  (so its tools become ``insert_s_<table>`` ...); rule and effect ids get ``S_``, procedures
  ``s_``. The fused spec's ``services`` field lists each service with the tables it owns: the
  generator reads the services from it, not from the names.
- **One person**: the actor tables merge into one person table (``_fuse_person``); every foreign
  key to an actor points at it, and seed rows, examples and SQL use the person ids.
- **SQL is rewritten, never pasted**: conditions, guards, details, repairs, effects and checks
  go through ``_sqlrewrite`` (sqlglot parse trees).
- **Policy harmonization** (:func:`harmonize`): rules of different services that guard the same
  table and event are compared. The same check twice is kept once. Two numeric limits on the
  same quantity in the same direction keep the stricter (``max``: the lower, ``min``: the
  higher). Two limits on the same quantity that cannot be ordered (one ``max`` and one ``min``,
  or a per-row limit) are refused with :class:`FusionError`. Every decision is reported.
- **Conflicts and bridge rules** (``_harmonize``): rules of different services that ask
  different things of the same person column are reported as conflicts; for two bounds on one
  side a bridge rule holds every service to the stricter one, and its examples are run.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import sqlglot

from veritask.blueprint._examples import example_failures
from veritask.blueprint._fuse_person import FusionError, PersonPlan, person_rows, plan_person
from veritask.blueprint._harmonize import Conflict, bridge_rule, find_conflicts
from veritask.blueprint._sqlrewrite import Renames, rewrite_sql
from veritask.policy import DomainSpec, Example, Rule, actor_table, spec_from_data

DEFAULT_PERSON = "persons"


@dataclass(frozen=True)
class Decision:
    """One harmonization decision: ``duplicate`` (kept once) or ``stricter`` (one kept)."""

    kind: str
    kept: str
    dropped: str
    reason: str


@dataclass
class Fusion:
    """A fused spec and what the fusion decided."""

    spec: DomainSpec
    services: list[str]
    person: str
    decisions: list[Decision] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    id_maps: dict[str, dict[Any, Any]] = field(default_factory=dict)
    conflicts: list[Conflict] = field(default_factory=list)
    """Rules of different services that ask different things of one person column."""

    def service_of(self, table: str) -> str | None:
        """The service a fused table belongs to (None for the shared person table)."""
        return self.spec.service_of(table)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready report."""
        return {
            "name": self.spec.name,
            "services": self.services,
            "person": self.person,
            "tables": len(self.spec.tables),
            "rules": len(self.spec.rules),
            "effects": len(self.spec.effects),
            "persons": len(self.spec.seed.get(self.person, [])),
            "decisions": [d.__dict__ for d in self.decisions],
            "conflicts": [c.to_json() for c in self.conflicts],
            "bridges": [c.bridge for c in self.conflicts if c.bridge],
            "notes": self.notes,
        }


@dataclass(frozen=True)
class _Service:
    """One input spec and how its names change."""

    spec: DomainSpec
    renames: Renames
    actor: str
    id_map: dict[Any, Any]

    @property
    def name(self) -> str:
        return self.spec.name

    def tool(self, name: str) -> str:
        kind, _, table = name.partition("_")
        return f"{kind}_{self.renames.table(table)}"

    def rule_id(self, rid: str) -> str:
        return f"{self.name.upper()}_{rid}"

    def tx_id(self, tid: str | None) -> str | None:
        return None if tid is None else f"{self.name}_{tid}"

    def value(self, table: str, column: str, value: Any) -> Any:
        """A seed or argument value in fused ids (actor ids map to person ids)."""
        if not self.spec.has_table(table) or column not in self.spec.table(table).column_names:
            return value
        col = self.spec.table(table).column(column)
        points_at_actor = col.references is not None and col.references.startswith(f"{self.actor}.")
        if points_at_actor or (table == self.actor and col.primary_key):
            return self.id_map.get(value, value)
        return value

    def row(self, table: str, row: dict[str, Any]) -> dict[str, Any]:
        return {self.renames.column(table, k): self.value(table, k, v) for k, v in row.items()}

    def sql(self, text: str | None, subject: str) -> str | None:
        return None if text is None else rewrite_sql(text, self.renames, subject)


def _services(specs: list[DomainSpec], plan: PersonPlan, person: str) -> list[_Service]:
    out = []
    for spec in specs:
        actor = actor_table(spec)
        tables = {t.name: f"{spec.name}_{t.name}" for t in spec.tables if t.name != actor}
        tables[actor] = person
        renames = Renames(tables, {actor: plan.renames[spec.name]})
        out.append(_Service(spec, renames, actor, plan.id_maps[spec.name]))
    return out


def _service(svc: _Service) -> dict[str, Any]:
    """The ``services`` entry of one input spec: its tables in fused names, not its actor."""
    tables = [svc.renames.table(t.name) for t in svc.spec.tables if t.name != svc.actor]
    return {"name": svc.name, "tables": tables}


def _tables(svc: _Service) -> list[dict[str, Any]]:
    out = []
    for table in svc.spec.tables:
        if table.name == svc.actor:
            continue
        data = table.model_dump(mode="json", exclude_defaults=True)
        data["name"] = svc.renames.table(table.name)
        for col in data["columns"]:
            if "references" in col:
                col["references"] = svc.renames.reference(col["references"])
            if "check" in col:
                col["check"] = svc.sql(col["check"], table.name)
        out.append(data)
    return out


def _person_table(plan: PersonPlan, svcs: list[_Service]) -> dict[str, Any]:
    """The person table with each column's reference and check in its owner's fused names."""
    by_name = {svc.name: svc for svc in svcs}
    data = plan.table.model_dump(mode="json", exclude_defaults=True)
    for col in data["columns"]:
        svc = by_name[plan.owners.get(col["name"], svcs[0].name)]
        if "references" in col:
            col["references"] = svc.renames.reference(col["references"])
        if "check" in col:
            col["check"] = svc.sql(col["check"], svc.actor)
    return data


def _example(svc: _Service, example: Example) -> dict[str, Any]:
    rule_ids = {r.id for r in svc.spec.rules}
    calls = []
    for call in example.calls:
        table = call.tool.partition("_")[2]
        calls.append(
            {
                "tool": svc.tool(call.tool),
                "args": svc.row(table, call.args),
                "expect": svc.rule_id(call.expect) if call.expect in rule_ids else call.expect,
            }
        )
    rows = [
        {
            "table": svc.renames.table(r.table),
            "where": svc.row(r.table, r.where),
            "values": svc.row(r.table, r.values),
        }
        for r in example.expect_rows
    ]
    return {"name": example.name, "calls": calls, "expect_rows": rows}


def _threshold(svc: _Service, rule: Rule) -> dict[str, Any] | None:
    """The threshold with its ``quantity`` and ``column`` in fused names (parsed as SQL; a
    phrase that is not SQL stays as written)."""
    if rule.threshold is None:
        return None
    data = rule.threshold.model_dump(mode="json", exclude_defaults=True)
    for key in ("quantity", "column"):
        text = data.get(key)
        if isinstance(text, str) and "." in text:
            try:
                data[key] = rewrite_sql(text, svc.renames, rule.table)
            except sqlglot.errors.SqlglotError:
                continue
    return data


def _rule(svc: _Service, rule: Rule) -> dict[str, Any]:
    data = rule.model_dump(mode="json", exclude_defaults=True)
    data.update(
        id=svc.rule_id(rule.id),
        table=svc.renames.table(rule.table),
        condition=svc.sql(rule.condition, rule.table),
        examples=[_example(svc, e) for e in rule.examples],
    )
    for key in ("when", "detail"):
        if key in data:
            data[key] = svc.sql(data[key], rule.table)
    if rule.repair is not None:
        data["repair"] = {
            "column": svc.renames.column(rule.table, rule.repair.column),
            "value": svc.sql(rule.repair.value, rule.table),
        }
    if rule.threshold is not None:
        data["threshold"] = _threshold(svc, rule)
    if rule.transaction is not None:
        data["transaction"] = svc.tx_id(rule.transaction)
    return data


def _effects(svc: _Service) -> list[dict[str, Any]]:
    out = []
    for effect in svc.spec.effects:
        data = effect.model_dump(mode="json", exclude_defaults=True)
        data.update(
            id=svc.rule_id(effect.id),
            table=svc.renames.table(effect.table),
            sql=svc.sql(effect.sql, effect.table),
            examples=[_example(svc, e) for e in effect.examples],
        )
        if effect.when is not None:
            data["when"] = svc.sql(effect.when, effect.table)
        if effect.transaction is not None:
            data["transaction"] = svc.tx_id(effect.transaction)
        out.append(data)
    return out


def _transactions(svc: _Service) -> list[dict[str, Any]]:
    out = []
    for tx in svc.spec.transactions:
        table = tx.tool.partition("_")[2]
        data = tx.model_dump(mode="json", exclude_defaults=True)
        data.update(
            id=svc.tx_id(tx.id),
            name=f"{svc.name.title()}: {tx.name}",
            tool=svc.tool(tx.tool),
            parameters=[svc.renames.column(table, p) for p in tx.parameters],
            agent_decides=[svc.renames.column(table, p) for p in tx.agent_decides],
        )
        out.append(data)
    return out


def _seed(svcs: list[_Service], plan: PersonPlan, person: str) -> dict[str, list[dict[str, Any]]]:
    seed: dict[str, list[dict[str, Any]]] = {person: plan.rows}
    for svc in svcs:
        for table, rows in svc.spec.seed.items():
            if table != svc.actor:
                seed[svc.renames.table(table)] = [svc.row(table, r) for r in rows]
    return seed


def _wiki(specs: list[DomainSpec]) -> dict[str, Any]:
    rules = [r for s in specs for r in s.wiki.conversation_rules]
    return {
        "title": " + ".join(s.wiki.title for s in specs),
        "context": "\n\n".join(f"{s.name}: {s.wiki.context}" for s in specs if s.wiki.context),
        "persona": " ".join(dict.fromkeys(s.wiki.persona.strip() for s in specs)),
        "mission": " ".join(dict.fromkeys(s.wiki.mission.strip() for s in specs if s.wiki.mission)),
        "conversation_rules": list(dict.fromkeys(r.strip() for r in rules)),
    }


def _quantity(rule: dict[str, Any]) -> tuple[str, str] | None:
    limit = rule.get("threshold")
    if not limit:
        return None
    return str(limit["quantity"]), str(limit.get("comparison", "max"))


def _compare(a: dict[str, Any], b: dict[str, Any]) -> Decision | None:
    """The decision about two rules of different services on one table (None: independent)."""
    same_events = set(a["on"]) & set(b["on"])
    if not same_events:
        return None
    if (a.get("when"), a["condition"]) == (b.get("when"), b["condition"]):
        return Decision("duplicate", a["id"], b["id"], "the same check")
    qa, qb = _quantity(a), _quantity(b)
    if qa is None or qb is None or qa[0] != qb[0]:
        return None
    va, vb = a["threshold"].get("value"), b["threshold"].get("value")
    if qa[1] != qb[1] or va is None or vb is None:
        raise FusionError(
            f"rules {a['id']} and {b['id']} both limit {qa[0]} and cannot be ordered"
            f" ({qa[1]} {va} vs {qb[1]} {vb}); fuse refuses the conflict"
        )
    a_stricter = va <= vb if qa[1] == "max" else va >= vb
    kept, dropped = (a, b) if a_stricter else (b, a)
    reason = f"both limit {qa[0]} ({qa[1]}): {kept['threshold']['value']} is stricter"
    return Decision("stricter", kept["id"], dropped["id"], reason)


def harmonize(
    rules: list[tuple[str, dict[str, Any]]],
) -> tuple[list[dict[str, Any]], list[Decision]]:
    """Apply the harmonization rule to ``(service, rule)`` pairs; return the kept rules."""
    decisions: list[Decision] = []
    dropped: set[str] = set()
    for i, (sa, a) in enumerate(rules):
        for sb, b in rules[i + 1 :]:
            if sa == sb or a["table"] != b["table"] or a["id"] in dropped or b["id"] in dropped:
                continue
            decision = _compare(a, b)
            if decision is not None:
                decisions.append(decision)
                dropped.add(decision.dropped)
    return [r for _, r in rules if r["id"] not in dropped], decisions


def fuse_specs(
    specs: list[DomainSpec], person: str = DEFAULT_PERSON, name: str | None = None
) -> Fusion:
    """Fuse two or more specs into one (see the module docstring for every rule).

    Raises:
        FusionError: The specs cannot be fused (a conflict refused, an actor key mismatch).
        veritask.policy.SpecError: The fused spec does not validate.
    """
    names = [s.name for s in specs]
    if len(specs) < 2 or len(set(names)) != len(names):
        raise FusionError("fuse needs two or more specs with distinct names")
    plan = plan_person(specs, person)
    person_rows(plan, specs)
    svcs = _services(specs, plan, person)
    tagged = [(svc.name, _rule(svc, r)) for svc in svcs for r in svc.spec.rules]
    rules, decisions = harmonize(tagged)
    data: dict[str, Any] = {
        "name": name or "_".join(names),
        "description": " ".join(f"[{s.name}] {s.description}".strip() for s in specs),
        "actor": person,
        "services": [_service(svc) for svc in svcs],
        "wiki": _wiki(specs),
        "tables": [_person_table(plan, svcs)] + [t for svc in svcs for t in _tables(svc)],
        "rules": rules,
        "effects": [e for svc in svcs for e in _effects(svc)],
        "transactions": [t for svc in svcs for t in _transactions(svc)],
        "seed": _seed(svcs, plan, person),
    }
    conflicts, bridges = _conflicts(rules, svcs, plan, person)
    data["rules"] = rules + bridges
    spec = spec_from_data(data, source="<fused>")
    failing = {
        b["id"] for b in bridges if any(f.startswith(b["id"]) for f in example_failures(spec))
    }
    notes = list(plan.notes)
    if failing:
        notes += [f"bridge rule {b} dropped: its examples fail" for b in sorted(failing)]
        data["rules"] = rules + [b for b in bridges if b["id"] not in failing]
        conflicts = [replace(c, bridge=None) if c.bridge in failing else c for c in conflicts]
        spec = spec_from_data(data, source="<fused>")
    return Fusion(spec, names, person, decisions, notes, plan.id_maps, conflicts)


def _conflicts(
    rules: list[dict[str, Any]], svcs: list[_Service], plan: PersonPlan, person: str
) -> tuple[list[Conflict], list[dict[str, Any]]]:
    """The conflicts among the kept rules, and a bridge rule per ``thresholds`` conflict."""
    owner = {svc.rule_id(r.id): svc.name for svc in svcs for r in svc.spec.rules}
    tagged = [(owner.get(r["id"], ""), r) for r in rules]
    conflicts: list[Conflict] = []
    bridges: dict[str, dict[str, Any]] = {}
    for conflict, lax, laxer, stricter in find_conflicts(tagged, person):
        if conflict.kind == "thresholds":
            bridge = bridge_rule(lax, laxer, stricter, person, plan.rows)
            bridges.setdefault(bridge["id"], bridge)
            conflict = replace(conflict, bridge=bridge["id"])
        conflicts.append(conflict)
    return conflicts, list(bridges.values())
