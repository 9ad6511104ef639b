"""render_wiki: the Appendix-A-shaped policy text derived from a DomainSpec."""

from __future__ import annotations

import re

import pytest

from veritask.domains import builtin_domains, load_domain
from veritask.policy import DomainSpec, render_wiki, spec_from_data

SECTIONS = [
    "## Section 0: Data Governance & Authority",
    "## Section 1: Persona & Mission",
    "## Section 2: Conversation Flow & Policies",
    "## Section 3: Domain Data Model",
    "## Section 4: Standard Operating Procedures (SOP)",
    "## Section 5: Critical System Enforcement (Summary)",
]


@pytest.fixture(scope="module")
def mock() -> DomainSpec:
    return load_domain("mock")


@pytest.fixture(scope="module")
def wiki(mock: DomainSpec) -> str:
    return render_wiki(mock)


def block(text: str, heading: str) -> str:
    """The text under ``heading`` up to the next heading of the same or a higher level."""
    level = heading.split(" ")[0]
    start = text.index(heading + "\n")
    stop = re.compile(rf"^#{{1,{len(level)}}} ", re.M).search(text, start + len(heading))
    return text[start : stop.start() if stop else len(text)]


def with_changes(spec: DomainSpec, **changes: object) -> DomainSpec:
    data = spec.model_dump(mode="json")
    data.update(changes)
    return spec_from_data(data)


def test_title_and_sections_in_order(wiki: str, mock: DomainSpec) -> None:
    assert wiki.startswith(f"# {mock.wiki.title}\n")
    assert mock.wiki.context in wiki
    positions = [wiki.index(s) for s in SECTIONS]
    assert positions == sorted(positions)
    assert wiki.endswith("\n") and not wiki.endswith("\n\n")


def test_is_deterministic(mock: DomainSpec, wiki: str) -> None:
    assert render_wiki(mock) == wiki
    assert render_wiki(DomainSpec.model_validate(mock.model_dump())) == wiki


def test_governance_lists_read_only_writable_and_lifecycles(wiki: str) -> None:
    section = block(wiki, SECTIONS[0])
    read_only = section.split("2. **WRITEABLE")[0]
    writable = section.split("2. **WRITEABLE")[1].split("3. **")[0]
    assert "`books`" in read_only and "`members`" in read_only and "`loans`" not in read_only
    assert "`loans`" in writable and "INSERT" in writable and "UPDATE" in writable
    assert "FORBIDDEN" in section
    assert "**loans:** Set `status='RETURNED'`." in section
    assert "**members:** Set `active=0`." in section


def test_persona_and_conversation_rules(wiki: str, mock: DomainSpec) -> None:
    assert mock.wiki.persona in block(wiki, SECTIONS[1])
    assert mock.wiki.mission in block(wiki, SECTIONS[1])
    for rule in mock.wiki.conversation_rules:
        assert f"- {rule}" in block(wiki, SECTIONS[2])


def test_every_table_has_its_permission_mode(wiki: str, mock: DomainSpec) -> None:
    for table in mock.tables:
        text = block(wiki, f"### Table: {table.name} [{table.tier}]")
        if table.writable:
            assert "[READ/WRITE] SELECT, INSERT, UPDATE" in text
        else:
            assert "[READ-ONLY] SELECT only" in text
        for col in table.columns:
            assert f"`{col.name}` ({col.type}" in text


def test_table_details(wiki: str) -> None:
    loans = block(wiki, "### Table: loans [transaction]")
    assert "one of OPEN, RETURNED" in loans
    assert "**Lifecycle Method:** Set `status='RETURNED'`" in loans
    assert "Linked to members via member_id." in loans
    assert "Linked to books via book_id." in loans
    members = block(wiki, "### Table: members [entity]")
    assert "Parent of loans (via loans.member_id)." in members
    assert re.search(r"`active_loans` \([^)]*\): \*\*System-calculated\.\*\*", members)
    assert "You cannot do this directly" in members


def test_tables_are_grouped_by_tier(wiki: str) -> None:
    order = [wiki.index(f"### Table: {n}") for n in ("books", "members", "loans")]
    assert order == sorted(order)


def test_every_sop_lists_its_rules_and_failures(wiki: str, mock: DomainSpec) -> None:
    for tx in mock.transactions:
        text = block(wiki, f"### Transaction: {tx.name}")
        assert tx.goal in text
        kind, _, table = tx.tool.partition("_")
        assert (
            f"{kind.upper()} {'into' if kind == 'insert' else 'on'} {table} via `{tx.tool}`" in text
        )
        assert ", ".join(tx.parameters) in text
        failures = text.split("**Potential Failures:**")[1]
        for rule in mock.rules:
            line = f"- [{rule.code}] {rule.message}"
            assert (line in failures) == (rule.transaction == tx.id), (tx.id, rule.id)


def test_sop_outcome_has_effects_and_system_set_columns(wiki: str, mock: DomainSpec) -> None:
    lend = block(wiki, "### Transaction: Lend Book")
    outcome = lend.split("**Outcome (System Logic):**")[1].split("**Potential Failures:**")[0]
    assert mock.effects[0].description in outcome
    assert "`status='OPEN'`" in outcome
    assert "assigns `id`" in outcome
    assert "Threshold: members.active_loans, maximum 2." in lend


def test_enforcement_summary(wiki: str) -> None:
    summary = block(wiki, SECTIONS[5])
    assert "NEVER delete" in summary and "loans.status -> 'RETURNED'" in summary
    assert "`members`, `books`" in summary.split("2. **Indirect Access:**")[1].split("\n")[0]
    irreversible = summary.split("3. **Irreversible States:**")[1].split("4. **")[0]
    assert "[IRREVERSIBLE] A returned loan cannot be changed." in irreversible
    quota = summary.split("4. **Quota Enforcement:**")[1].split("5. **")[0]
    assert "[QUOTA_EXCEEDED]" in quota and "maximum 2" in quota
    control = summary.split("5. **System-Control Columns:**")[1].split("6. **")[0]
    assert "`members.active_loans`" in control and "`books.available`" in control
    assert "[CALCULATION_ERROR]" in summary.split("6. **")[1]


def test_rules_outside_any_transaction_are_still_listed(mock: DomainSpec) -> None:
    data = mock.model_dump(mode="json")
    for rule in data["rules"]:
        rule["transaction"] = None
    for effect in data["effects"]:
        effect["transaction"] = None
    text = render_wiki(spec_from_data(data))
    other = block(text, "### Other Enforced Rules")
    for rule in mock.rules:
        assert f"[{rule.code}] {rule.message}" in other


def test_empty_parts_render_placeholders(mock: DomainSpec) -> None:
    spec = with_changes(
        mock,
        transactions=[],
        rules=[],
        effects=[],
        wiki={"title": "T", "persona": "P"},
    )
    text = render_wiki(spec)
    assert "No procedures are defined." in text
    assert "- None in this domain." in block(text, SECTIONS[2])
    assert "**Your Mission:**" not in text
    assert "### Other Enforced Rules" not in text


@pytest.mark.parametrize("name", builtin_domains())
def test_every_builtin_domain_renders_completely(name: str) -> None:
    spec = load_domain(name)
    text = render_wiki(spec)
    assert text == render_wiki(spec)
    for table in spec.tables:
        assert f"### Table: {table.name} [{table.tier}]" in text
    for tx in spec.transactions:
        assert f"### Transaction: {tx.name}" in text
    for rule in spec.rules:
        assert f"[{rule.code}] {rule.message.strip()}" in text
