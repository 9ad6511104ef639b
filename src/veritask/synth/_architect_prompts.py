"""Prompts of the Architect, one per stage, plus the Check-Fix-Verify repair message.

Modelled on LOGIGEN's prompts: a fixed role, the upstream artifacts in tagged blocks, the exact
output format, and a short list of rules. Everything is rendered deterministically (same inputs,
same text), which recordings and replays rely on.
"""

from __future__ import annotations

import json
from string import Template
from typing import Any

from veritask.policy import DomainSpec, build_tools
from veritask.synth._architect_artifacts import (
    COMPLEX_KINDS,
    ComplexityPlan,
    StageError,
    TablesArtifact,
)
from veritask.synth._architect_checks import PlanLimits
from veritask.synth._architect_seed import Seed

MAX_ERRORS_SHOWN = 40
"""At most this many verifier errors are sent back in one repair message (all are reported)."""

SYSTEM_PROMPT = """\
You are the Architect of a verifiable agent environment. You compile seed domain data into a \
hard-compiled policy environment: a wiki policy, SQLite tables, and business rules that the \
database enforces (BEFORE triggers reject invalid writes with a structured error; AFTER triggers \
do the bookkeeping the policy mandates). Agents act only through atomic tools: query_<table> for \
every table, insert_<table> and update_<table> for read-write tables. There is no delete: \
records are retired through a status or active column.

Rules:
- Answer with exactly the artifact the current stage asks for, in the requested format, and \
nothing else.
- Inject complex decision logic: quotas with small integer thresholds, state machines, \
irreversible states, role-based permissions, system-computed fields. Never settle for a shallow \
CRUD design.
- Names are stable across stages: reuse table names, column names and rule ids verbatim.
- When a verifier reports errors, fix every one of them and return the complete corrected artifact.
"""

PLAN_PROMPT = Template("""\
# Stage 1 of 4: complexity plan

$seed

Draft the blueprint of this domain. Reply with one ```json block:
{
  "entities": [{"name": "snake_case_table", "tier": "reference | entity | transaction", "description": "..."}],
  "actors": ["the entity table whose rows are the people the agent serves"],
  "rules": [{"id": "UPPER_SNAKE_ID", "kind": "...", "entity": "the table it guards", "statement": "one precise sentence", "seed_rules": [1], "threshold": 3}],
  "targets": {"tables": 0, "rules": 0, "effects": 0}
}

Requirements:
- kind is one of quota, state_machine, immutability, permission, prerequisite, calculation, \
policy, integrity (writes the database must reject), or side_effect (bookkeeping the system does \
itself: counters, computed flags, audit or workflow rows).
- Every seed rule is listed (by its number) in the seed_rules of at least one planned rule. Expand \
each seed rule into all the precise rules it implies, and add the prerequisites, state \
transitions and bookkeeping a real system needs.
- threshold is the number a quota or limit guards; omit it otherwise.
- Include at least $min_kinds of: $complex_kinds.
- targets: the number of entities ($min_entities..$max_entities), of rules that are not \
side_effect ($min_rules..$max_rules) and of side_effect rules (at most $max_effects).
""")

WIKI_PROMPT = Template("""\
# Stage 2 of 4: wiki policy

$seed

<plan>
$plan
</plan>

Expand the seed and the plan into the wiki policy the agent will follow: the semantic source of \
truth for the tables and triggers of the next stages. Write markdown with these sections:

# <Policy title>
## Section 0: Data Governance & Authority (read-only and writable tables, no DELETE, how records are retired)
## Section 1: Persona & Mission
## Section 2: Conversation Flow & Policies (authentication, confirmation before writes, escalation)
## Section 3: Domain Data Model (per table: permission mode, purpose, key columns, relationships)
## Section 4: Standard Operating Procedures (per transaction: goal, business rules, execution, system outcome, potential failures)
## Section 5: Critical System Enforcement (summary)

Requirements:
- Name every planned rule by its id, side effects included (e.g. "**ORDER_QUOTA** (quota): ...").
- Name every entity by its table name.
- Write every number of the seed rules in digits.
- Reply with the markdown document only.
""")

TABLES_PROMPT = Template("""\
# Stage 3 of 4: database tables

<plan>
$plan
</plan>

<wiki_policy>
$wiki
</wiki_policy>

Translate the data model of the policy into tables and an initial state. Reply with one ```json block:
{
  "actor": "the actor table",
  "tables": [{
    "name": "snake_case", "tier": "reference | entity | transaction", "access": "read-only | read-write",
    "description": "...",
    "columns": [{"name": "snake_case", "type": "TEXT | INTEGER | REAL", "description": "...",
                 "primary_key": false, "autoincrement": false, "not_null": false, "unique": false,
                 "enum": ["ALLOWED", "VALUES"], "references": "table.column", "default": null,
                 "check": "SQL expression", "computed": false, "insertable": true,
                 "updatable": true, "technical": false}],
    "unique": [["column", "column"]],
    "lifecycle": {"column": "status", "inactive_values": ["CANCELLED"], "description": "how a record is retired"}
  }],
  "seed": {"table": [{"column": "value"}]}
}

Requirements:
- One table per planned entity, named exactly as planned; omit optional fields you do not need.
- Exactly one primary-key column per table: TEXT ids for reference and entity rows, INTEGER \
autoincrement ids (technical: true) for transaction rows.
- Reference and entity tables are read-only; tables the agent writes are read-write.
- computed: true for columns only the system sets (counters, flags); insertable: false for columns \
that start at their default (an initial status); updatable: false for columns fixed after insert.
- A counter a quota guards is a column of the parent row, maintained by side effects in stage 4.
- Seed rows: a small realistic initial state (3 to 12 rows per table) with boundary cases: a \
parent one below each quota, records in every status, inactive entities. Give explicit ids; rows \
must satisfy keys, enums, checks and foreign keys.
""")

RULES_PROMPT = Template("""\
# Stage 4 of 4: rules and effects

<plan>
$plan
</plan>

<wiki_policy>
$wiki
</wiki_policy>

<tables>
$tables
</tables>

<tools>
$tools
</tools>

Compile the operational rules of the policy. Reply with one ```json block:
{
  "description": "one paragraph about the domain",
  "wiki": {"title": "...", "context": "...", "persona": "...", "mission": "...", "conversation_rules": ["..."]},
  "rules": [{"id": "PLANNED_ID", "table": "...", "on": ["insert"], "when": "optional SQL guard",
             "condition": "SQL that is true for a violating write", "code": "QUOTA_EXCEEDED",
             "category": "quota", "message": "...", "hint": "how to comply",
             "threshold": {"quantity": "table.column", "value": 3}, "transaction": "transaction id",
             "examples": [{"name": "...", "calls": [{"tool": "insert_x", "args": {"column": "value"}, "expect": "ok"},
                                                    {"tool": "insert_x", "args": {"column": "value"}, "expect": "PLANNED_ID"}]}]}],
  "effects": [{"id": "PLANNED_ID", "table": "...", "on": "insert", "when": "optional SQL guard",
               "description": "one line", "sql": "UPDATE ... WHERE id = NEW.parent_id;", "transaction": "...",
               "examples": [{"calls": [...], "expect_rows": [{"table": "...", "where": {"id": 1}, "values": {"column": "value"}}]}]}],
  "transactions": [{"id": "snake_case", "name": "...", "goal": "...", "tool": "insert_x | update_x",
                    "parameters": ["column"], "agent_decides": ["column"], "notes": ["..."]}]
}

How it compiles: the rules of one (table, event) become one BEFORE trigger, \
`SELECT CASE WHEN (<when>) AND (<condition>) THEN RAISE(ABORT, '[CODE] message (rule ID)') ... END`, \
in the order listed, so the first violated rule is the one reported. Conditions are SQLite \
expressions over NEW.<column> and OLD.<column> (OLD on update only), with subqueries over any \
table; write {threshold} where threshold.value belongs. Each effect becomes an AFTER trigger \
running its sql (INSERT / UPDATE statements over NEW and OLD).

Requirements:
- One rule per planned rule and one effect per planned side_effect, with the planned id.
- category is one of prerequisite, quota, authority, irreversibility, calculation, policy, \
integrity, system_control; code is an UPPER_SNAKE error code.
- Examples are executed, each from the seed state, calling the tools above. Every rule has at \
least one call it rejects (expect: its id) and one similar call that succeeds (expect: ok); put \
quota examples at the boundary (a call accepted at N-1, then one rejected at N). Every effect \
has an example whose expect_rows show what it wrote.
- A violating call that is accepted, a passing call that is rejected, or SQL that SQLite \
rejects fails the stage.
""")

FIX_PROMPT = Template("""\
The stage verifier rejected your $artifact (round $round of $max_rounds): $count error(s).
```json
$errors
```
Each error gives the check that failed, the offending item and the evidence. Fix every error and \
reply with the complete corrected $artifact, in the same format as before, and nothing else.
""")

ARTIFACT_NAMES = {
    "plan": "complexity plan (JSON)",
    "wiki": "wiki policy (markdown)",
    "tables": "tables (JSON)",
    "rules": "rules and effects (JSON)",
}


def to_json(data: Any) -> str:
    """Deterministic, readable JSON for prompts."""
    return json.dumps(data, indent=2, ensure_ascii=False)


def seed_block(seed: Seed) -> str:
    """The seed as the tagged block every stage shows."""
    lines = [
        "<seed_domain_data>",
        f"Scenario: {seed.scenario}",
        f"Context: {seed.context}",
        "Key business rules:",
        *(f"{i}. {rule}" for i, rule in enumerate(seed.rules, 1)),
    ]
    if seed.hints.entities:
        lines.append(f"Expected entities: {', '.join(seed.hints.entities)}")
    if seed.hints.actor:
        lines.append(f"Actor: {seed.hints.actor}")
    lines += [f"Note: {note}" for note in seed.hints.notes]
    lines.append("</seed_domain_data>")
    return "\n".join(lines)


def _messages(user: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def plan_messages(seed: Seed, limits: PlanLimits) -> list[dict[str, Any]]:
    """Stage 1 request."""
    return _messages(
        PLAN_PROMPT.substitute(
            seed=seed_block(seed),
            min_kinds=limits.min_complex_kinds,
            complex_kinds=", ".join(sorted(COMPLEX_KINDS)),
            min_entities=limits.min_entities,
            max_entities=limits.max_entities,
            min_rules=limits.min_rules,
            max_rules=limits.max_rules,
            max_effects=limits.max_effects,
        )
    )


def _plan_json(plan: ComplexityPlan) -> str:
    return to_json(plan.model_dump(mode="json", exclude_defaults=True))


def wiki_messages(seed: Seed, plan: ComplexityPlan) -> list[dict[str, Any]]:
    """Stage 2 request."""
    return _messages(WIKI_PROMPT.substitute(seed=seed_block(seed), plan=_plan_json(plan)))


def tables_messages(plan: ComplexityPlan, wiki: str) -> list[dict[str, Any]]:
    """Stage 3 request."""
    return _messages(TABLES_PROMPT.substitute(plan=_plan_json(plan), wiki=wiki.strip()))


def tool_lines(spec: DomainSpec) -> str:
    """One line per write tool: ``insert_x(a, b?)``; optional arguments end with ``?``."""
    lines = []
    for tool in build_tools(spec).values():
        if tool.kind == "query":
            continue
        args = ", ".join(n if p.required else f"{n}?" for n, p in tool.params.items())
        lines.append(f"{tool.name}({args})")
    return "\n".join(lines) or "(no write tools)"


def rules_messages(
    plan: ComplexityPlan, wiki: str, tables: TablesArtifact, spec: DomainSpec
) -> list[dict[str, Any]]:
    """Stage 4 request; ``spec`` is the provisional spec of stage 3 (for the tool list)."""
    tables_json = to_json(tables.model_dump(mode="json", exclude_defaults=True))
    return _messages(
        RULES_PROMPT.substitute(
            plan=_plan_json(plan), wiki=wiki.strip(), tables=tables_json, tools=tool_lines(spec)
        )
    )


def fix_message(stage: str, errors: list[StageError], round_: int, max_rounds: int) -> str:
    """The repair request that carries the verifier's structured error report."""
    shown = [e.to_json() for e in errors[:MAX_ERRORS_SHOWN]]
    if len(errors) > MAX_ERRORS_SHOWN:
        shown.append({"note": f"{len(errors) - MAX_ERRORS_SHOWN} more error(s) not shown"})
    return FIX_PROMPT.substitute(
        artifact=ARTIFACT_NAMES[stage],
        round=round_,
        max_rounds=max_rounds,
        count=len(errors),
        errors=to_json(shown),
    )
