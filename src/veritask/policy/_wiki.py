"""Render a DomainSpec as the agent-facing wiki policy (markdown, LOGIGEN Appendix A shape).

The text is derived only from the spec, in spec order, so the same spec always yields the same
wiki. Sections follow the Appendix: data governance, persona and mission, conversation rules,
the data model, the standard operating procedures and a summary of what the system enforces.
"""

from __future__ import annotations

from veritask.policy._dual import dual_policy_section
from veritask.policy._spec import Column, DomainSpec, Rule, Scalar, Table, Threshold, Transaction
from veritask.policy._sql import sql_literal

_TIER_ORDER = {"reference": 0, "entity": 1, "transaction": 2}
_READ_ONLY_MODE = "[READ-ONLY] SELECT only. You cannot modify this table directly."
_READ_WRITE_MODE = "[READ/WRITE] SELECT, INSERT, UPDATE. You have direct control."
_INSERT_ONLY_MODE = "[INSERT-ONLY] SELECT, INSERT. Rows cannot be changed once written."
_NONE = "None in this domain."


def render_wiki(spec: DomainSpec) -> str:
    """Render the wiki policy of a domain as markdown.

    Args:
        spec: The domain to describe.

    Returns:
        Markdown text with a title, Sections 0-5 and a trailing newline. The output depends only
        on ``spec``: rendering the same spec twice gives identical text.
    """
    parts = [
        _header(spec),
        _governance(spec),
        _persona(spec),
        _conversation(spec),
        _data_model(spec),
        _procedures(spec),
        _enforcement(spec),
    ]
    dual = dual_policy_section(spec)  # empty for a spec without user tools or hand-offs
    if dual:
        parts.append(dual)
    return "\n\n".join(p.rstrip() for p in parts) + "\n"


def _lit(value: Scalar | None) -> str:
    return sql_literal(value)


def _values(values: list[Scalar]) -> str:
    return " or ".join(_lit(v) for v in values)


def _code_list(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _lifecycle_action(table: Table) -> str:
    life = table.lifecycle
    if life is None:
        return ""
    action = f"Set `{life.column}={_values(life.inactive_values)}`."
    return f"{action} {life.description.strip()}".strip()


def _header(spec: DomainSpec) -> str:
    lines = [f"# {spec.wiki.title}"]
    context = spec.wiki.context.strip() or spec.description.strip()
    if context:
        lines += ["", context]
    return "\n".join(lines)


# -- Section 0 ---------------------------------------------------------------------------------


def _read_only_lines(spec: DomainSpec) -> list[str]:
    lines = []
    for tier, label in (
        ("reference", "are **STRICTLY READ-ONLY** system catalogs."),
        ("entity", "are **READ-ONLY** records. You cannot create, edit or retire them directly."),
        ("transaction", "are **READ-ONLY** records kept by the system."),
    ):
        names = [t.name for t in spec.tables if t.tier == tier and not t.writable]
        if names:
            lines.append(f"   - {_code_list(names)} {label}")
    return lines or [f"   - {_NONE}"]


def _writable_lines(spec: DomainSpec) -> list[str]:
    names = [t.name for t in spec.tables if t.updatable]
    once = [t.name for t in spec.tables if t.writable and t.insert_only]
    if not names and not once:
        return ["   - None: every table is read-only in this domain."]
    lines = []
    if names:
        lines.append(
            f"   - {_code_list(names)} are your workspace. You can INSERT new records into them "
            "and UPDATE existing ones, only through the tools."
        )
    if once:
        lines.append(
            f"   - {_code_list(once)} are **INSERT-ONLY**: you can INSERT new records through the "
            "tools, but a record cannot be changed once written."
        )
    return lines


def _lifecycle_lines(spec: DomainSpec) -> list[str]:
    lines = []
    for table in spec.tables:
        if table.lifecycle is None:
            continue
        note = "" if table.updatable else " (You cannot do this directly; see Indirect Access.)"
        lines.append(f"     - **{table.name}:** {_lifecycle_action(table)}{note}")
    permanent = [t.name for t in spec.tables if t.lifecycle is None]
    if permanent:
        lines.append(
            f"     - {_code_list(permanent)} have no retirement method; rows stay as they are."
        )
    return lines


def _governance(spec: DomainSpec) -> str:
    lines = [
        "## Section 0: Data Governance & Authority",
        "",
        "CRITICAL INSTRUCTION: You operate in a strictly governed environment. You must adhere to "
        "these foundational laws of data interaction:",
        "",
        "1. **READ-ONLY Tables (You CANNOT modify these directly):**",
        *_read_only_lines(spec),
        "2. **WRITEABLE Tables (You can INSERT and UPDATE these):**",
        *_writable_lines(spec),
        '3. **The Universal "No-Delete" Rule:**',
        "   - You are **STRICTLY FORBIDDEN** from deleting records from any table; no tool "
        "deletes.",
        '   - **Deactivation/Lifecycle Method:** To "remove" a record, use the prescribed update:',
        *_lifecycle_lines(spec),
    ]
    return "\n".join(lines)


# -- Sections 1 and 2 --------------------------------------------------------------------------


def _persona(spec: DomainSpec) -> str:
    lines = [
        "## Section 1: Persona & Mission",
        "",
        f"**Your Persona:** {spec.wiki.persona.strip()}",
    ]
    if spec.wiki.mission.strip():
        lines += ["", f"**Your Mission:** {spec.wiki.mission.strip()}"]
    return "\n".join(lines)


def _conversation(spec: DomainSpec) -> str:
    rules = [f"- {r.strip()}" for r in spec.wiki.conversation_rules] or [f"- {_NONE}"]
    return "\n".join(["## Section 2: Conversation Flow & Policies", "", *rules])


# -- Section 3 ---------------------------------------------------------------------------------


def _column_facts(col: Column) -> list[str]:
    facts: list[str] = [col.type]
    if col.primary_key:
        facts.append("primary key, assigned by the system" if col.autoincrement else "primary key")
    elif col.not_null and col.default is None:
        facts.append("required")
    if col.unique:
        facts.append("unique")
    if col.enum is not None:
        facts.append("one of " + ", ".join(str(v) for v in col.enum))
    if col.default is not None:
        facts.append(f"default {_lit(col.default)}")
    if col.references:
        facts.append(f"references {col.references}")
    if col.check:
        facts.append(f"must satisfy {col.check}")
    if not col.computed and not col.autoincrement and not col.insertable:
        facts.append("not settable on insert")
    if not col.computed and not col.primary_key and not col.updatable:
        facts.append("fixed after insert")
    return facts


def _column_line(col: Column) -> str:
    extras = ["**System-calculated.**"] if col.computed else []
    extras += [col.description.strip()] if col.description.strip() else []
    text = f"  - `{col.name}` ({'; '.join(_column_facts(col))})"
    return f"{text}: {' '.join(extras)}" if extras else text


def _relationships(spec: DomainSpec, table: Table) -> str:
    parts = []
    for col in table.columns:
        if col.references:
            parts.append(f"Linked to {col.references.split('.')[0]} via {col.name}.")
    for other in spec.tables:
        for col in other.columns:
            if col.references and col.references.split(".")[0] == table.name:
                parts.append(f"Parent of {other.name} (via {other.name}.{col.name}).")
    return " ".join(parts)


def _permission_mode(table: Table) -> str:
    if not table.writable:
        return _READ_ONLY_MODE
    return _INSERT_ONLY_MODE if table.insert_only else _READ_WRITE_MODE


def _table_section(spec: DomainSpec, table: Table) -> str:
    lines = [
        f"### Table: {table.name} [{table.tier}]",
        "",
        f"- **Permission Mode:** {_permission_mode(table)}",
    ]
    if table.description.strip():
        lines.append(f"- **Purpose:** {table.description.strip()}")
    lines += ["- **Key Columns:**", *(_column_line(c) for c in table.columns)]
    if table.lifecycle is not None:
        note = "" if table.updatable else " (Note: You cannot do this directly.)"
        lines.append(f"- **Lifecycle Method:** {_lifecycle_action(table)}{note}")
    relations = _relationships(spec, table)
    if relations:
        lines.append(f"- **Relationships:** {relations}")
    return "\n".join(lines)


def _data_model(spec: DomainSpec) -> str:
    tables = sorted(spec.tables, key=lambda t: _TIER_ORDER[t.tier])
    return "\n\n".join(
        ["## Section 3: Domain Data Model", *(_table_section(spec, t) for t in tables)]
    )


# -- Section 4 ---------------------------------------------------------------------------------


def _threshold_text(threshold: Threshold) -> str:
    bound = "maximum" if threshold.comparison == "max" else "minimum"
    if threshold.value is not None:
        return f"Threshold: {threshold.quantity}, {bound} {threshold.value}."
    return f"Threshold: {threshold.quantity}, {bound} held in {threshold.column}."


def _sentence(text: str) -> str:
    text = text.strip()
    return text if not text or text[-1] in ".!?" else f"{text}."


def _rule_line(rule: Rule) -> str:
    text = f"  - **{rule.id}** ({rule.category}): {_sentence(rule.message)}"
    if rule.threshold is not None:
        text += f" {_threshold_text(rule.threshold)}"
    return f"{text} {rule.hint.strip()}".rstrip()


def _failure_line(rule: Rule) -> str:
    return f"  - [{rule.code}] {rule.message.strip()}"


def _tool_action(tx: Transaction) -> str:
    kind, _, table = tx.tool.partition("_")
    if kind == "insert":
        return f"INSERT into {table} via `{tx.tool}`."
    return f"UPDATE on {table} via `{tx.tool}`."


def _system_set_lines(spec: DomainSpec, tx: Transaction) -> list[str]:
    kind, _, name = tx.tool.partition("_")
    if not spec.has_table(name):
        return []
    lines = []
    for col in spec.table(name).columns:
        if col.computed:
            lines.append(f"  - The system calculates `{col.name}`; never set it yourself.")
        elif kind == "insert" and col.autoincrement:
            lines.append(f"  - The system assigns `{col.name}` automatically.")
        elif kind == "insert" and not col.insertable and col.default is not None:
            lines.append(
                f"  - The system automatically sets the initial `{col.name}={_lit(col.default)}`."
            )
    return lines


def _outcome_lines(spec: DomainSpec, tx: Transaction) -> list[str]:
    effects = [e for e in spec.effects if e.transaction == tx.id]
    lines = [f"  - The system automatically: {e.description.strip()}" for e in effects]
    lines += _system_set_lines(spec, tx)
    return lines or ["  - No automatic side effects."]


def _transaction_section(spec: DomainSpec, tx: Transaction) -> str:
    rules = [r for r in spec.rules if r.transaction == tx.id]
    params = ", ".join(tx.parameters) if tx.parameters else "see the tool schema"
    lines = [
        f"### Transaction: {tx.name}",
        "",
        f"- **Goal:** {tx.goal.strip()}",
        "- **Business Rules (Prerequisites):**",
        *([_rule_line(r) for r in rules] or ["  - No additional checks."]),
        '- **Execution (The "How"):**',
        f"  - **Action:** {_tool_action(tx)}",
        f"  - **Parameters:** {params}.",
        "- **Outcome (System Logic):**",
        *_outcome_lines(spec, tx),
        "- **Potential Failures:**",
        *([_failure_line(r) for r in rules] or ["  - None declared."]),
    ]
    if tx.notes:
        lines += ["- **Notes:**", *(f"  - {n.strip()}" for n in tx.notes)]
    return "\n".join(lines)


def _other_rules_section(spec: DomainSpec) -> str:
    tx_ids = {t.id for t in spec.transactions}
    rules = [r for r in spec.rules if r.transaction not in tx_ids]
    if not rules:
        return ""
    lines = ["### Other Enforced Rules", ""]
    for rule in rules:
        events = "/".join(e.upper() for e in rule.on)
        lines.append(f"- {events} on {rule.table}: [{rule.code}] {rule.message.strip()}")
    return "\n".join(lines)


def _procedures(spec: DomainSpec) -> str:
    parts = ["## Section 4: Standard Operating Procedures (SOP)"]
    parts += [_transaction_section(spec, tx) for tx in spec.transactions]
    if not spec.transactions:
        parts.append(f"No procedures are defined. {_NONE}")
    other = _other_rules_section(spec)
    if other:
        parts.append(other)
    return "\n\n".join(parts)


# -- Section 5 ---------------------------------------------------------------------------------


def _category_lines(spec: DomainSpec, category: str) -> list[str]:
    lines = []
    for rule in spec.rules:
        if rule.category != category:
            continue
        text = f"   - [{rule.code}] {rule.message.strip()}"
        if rule.threshold is not None:
            text += f" ({_threshold_text(rule.threshold)})"
        lines.append(text)
    return list(dict.fromkeys(lines))


def _or_none(lines: list[str]) -> list[str]:
    return lines or [f"   - {_NONE}"]


def _no_delete_line(spec: DomainSpec) -> str:
    methods = [
        f"{t.name}.{t.lifecycle.column} -> {_values(t.lifecycle.inactive_values)}"
        for t in spec.tables
        if t.lifecycle is not None
    ]
    how = f" ({'; '.join(methods)})" if methods else ""
    return f"1. **NEVER delete.** All lifecycle changes are status or flag updates{how}."


def _indirect_line(spec: DomainSpec) -> str:
    names = [t.name for t in spec.tables if not t.writable]
    if not names:
        return "2. **Indirect Access:** Every table is writable through its tools."
    return (
        f"2. **Indirect Access:** You cannot modify {_code_list(names)} directly. Changes to them "
        "happen only as system side effects or outside your control."
    )


def _system_control_lines(spec: DomainSpec) -> list[str]:
    computed = [f"{t.name}.{c.name}" for t in spec.tables for c in t.columns if c.computed]
    lines = (
        [f"   - Never set {_code_list(computed)}; the system calculates them."] if computed else []
    )
    return _or_none(lines + _category_lines(spec, "system_control"))


def _enforcement(spec: DomainSpec) -> str:
    lines = [
        "## Section 5: Critical System Enforcement (Summary)",
        "",
        _no_delete_line(spec),
        _indirect_line(spec),
        "3. **Irreversible States:**",
        *_or_none(_category_lines(spec, "irreversibility")),
        "4. **Quota Enforcement:**",
        *_or_none(_category_lines(spec, "quota")),
        "5. **System-Control Columns:**",
        *_system_control_lines(spec),
        "6. **Provenance & Calculation:** The system validates your math.",
        *_or_none(_category_lines(spec, "calculation")),
    ]
    return "\n".join(lines)
