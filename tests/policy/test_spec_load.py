"""Spec loading: validation errors name the file, line and field; compiled SQL is accepted."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from veritask.domains import builtin_domains, load_domain
from veritask.policy import (
    SpecError,
    build_tools,
    compile_sql,
    load_spec,
    parse_spec,
    render_wiki,
)

MOCK = Path(__file__).parents[2] / "src/veritask/domains/mock/spec.yaml"


def _break(old: str, new: str) -> str:
    text = MOCK.read_text()
    assert old in text
    return text.replace(old, new, 1)


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize(
    ("old", "new", "field", "fragment"),
    [
        (
            "type: TEXT, primary_key: true, description: Member id",
            "type: TXT, primary_key: true, description: Member id",
            "tables[0].columns[0].type",
            "TEXT",
        ),
        ("tier: reference", "tier: catalogue", "tables[1].tier", "reference"),
        (
            "references: members.id",
            "references: people.id",
            "tables[2].columns[1].references",
            "people.id",
        ),
        (
            "table: loans\n    on: [insert]\n    category: prerequisite",
            "table: loanz\n    on: [insert]\n    category: prerequisite",
            "rules[0].table",
            "loanz",
        ),
        ("code: QUOTA_EXCEEDED", "code: quota exceeded", "rules[2].code", "pattern"),
        (
            "condition: OLD.status = 'RETURNED'",
            "condition: OLD.state = 'RETURNED'",
            "rules[3].condition",
            "OLD.state",
        ),
        (
            "message: Member does not exist",
            "mesage: Member does not exist",
            "rules[0].mesage",
            "Extra inputs",
        ),
        (
            "tool: insert_loans\n    parameters",
            "tool: insert_books\n    parameters",
            "transactions[0].tool",
            "insert_books",
        ),
    ],
)
def test_errors_name_file_line_and_field(
    tmp_path: Path, old: str, new: str, field: str, fragment: str
) -> None:
    text = _break(old, new)
    path = tmp_path / "broken.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    issue = next((i for i in info.value.issues if i.field == field), None)
    assert issue is not None, [str(i) for i in info.value.issues]
    assert issue.path == str(path)
    assert issue.line == _line_of(text, new.split("\n")[0])
    assert fragment in issue.message or fragment in str(issue)
    assert f"{path}:{issue.line}: {field}" in str(info.value)


def test_error_line_points_at_the_field(tmp_path: Path) -> None:
    text = _break("tier: reference", "tier: catalogue")
    with pytest.raises(SpecError) as info:
        parse_spec(text, source="x.yaml")
    (issue,) = info.value.issues
    assert issue.line == _line_of(text, "tier: catalogue")


def test_yaml_syntax_error_has_a_line() -> None:
    with pytest.raises(SpecError) as info:
        parse_spec("name: x\ntables: [\n", source="bad.yaml")
    assert info.value.issues[0].line is not None and "bad.yaml" in str(info.value)


def test_on_is_a_key_not_a_boolean() -> None:
    spec = load_domain("mock")
    assert spec.rules[0].on == ["insert"]


def test_reserved_table_prefix() -> None:
    text = _break("- name: books", "- name: vt_books").replace("books.id", "vt_books.id")
    with pytest.raises(SpecError, match="reserved"):
        parse_spec(text)


@pytest.mark.parametrize("domain", builtin_domains())
def test_compiled_sql_is_accepted_by_sqlite(domain: str) -> None:
    spec = load_domain(domain)
    conn = sqlite3.connect(":memory:")
    conn.executescript(compile_sql(spec).full)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {t.name for t in spec.tables} <= names
    triggers = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    assert len(triggers) >= len(spec.effects) + 1


@pytest.mark.parametrize("domain", builtin_domains())
def test_tools_follow_the_access_modes(domain: str) -> None:
    spec = load_domain(domain)
    tools = build_tools(spec)
    expected = {f"query_{t.name}" for t in spec.tables}
    expected |= {f"insert_{t.name}" for t in spec.tables if t.writable}
    expected |= {f"update_{t.name}" for t in spec.tables if t.updatable and t.primary_key}
    assert set(tools) == expected
    for tool in tools.values():
        schema = tool.openai_schema()
        assert schema["type"] == "function"
        assert schema["function"]["parameters"]["additionalProperties"] is False
        if tool.kind == "query":
            assert {"limit", "offset", "order_by"} <= set(tool.params)
        for rule_id in tool.rules:
            rule = spec.rule(rule_id)
            assert f"[{rule.code}] {rule.message}" in tool.description, (
                "preconditions state the rules"
            )
        for effect in spec.effects:
            if effect.id in tool.effects:
                assert effect.description.strip() in tool.description, "side effects are stated"


def test_spec_hash_is_stable() -> None:
    a, b = load_spec(MOCK), load_spec(MOCK)
    assert a.spec_hash() == b.spec_hash() and len(a.spec_hash()) == 64


def _insert_only_loans(extra: str = "") -> str:
    """The mock spec with loans insert-only (its update rules and transaction removed)."""
    spec = load_spec(MOCK)
    data = spec.model_dump(mode="json", exclude_defaults=True)
    data["tables"][2]["insert_only"] = True
    data["rules"] = [r for r in data["rules"] if "update" not in r["on"]]
    kept = {r["id"] for r in data["rules"]}
    data["effects"] = [e for e in data["effects"] if e["on"] == "insert"]
    data["transactions"] = [t for t in data["transactions"] if t["tool"] == "insert_loans"]
    assert kept and data["transactions"]
    return json.dumps(data) + extra


def test_insert_only_table_has_no_update_tool() -> None:
    spec = parse_spec(_insert_only_loans())
    tools = build_tools(spec)
    assert "insert_loans" in tools and "update_loans" not in tools
    assert "cannot be changed once written" in tools["insert_loans"].description
    assert "insert-only" in tools["query_loans"].description
    wiki = render_wiki(spec)
    assert "[INSERT-ONLY]" in wiki and "**INSERT-ONLY**" in wiki


@pytest.mark.parametrize(
    ("change", "field", "fragment"),
    [
        ("read_only", "tables[2].insert_only", "read-write"),
        ("update_rule", "rules[0].on", "insert_only"),
        ("update_tool", "transactions[0].tool", "update_loans"),
    ],
)
def test_insert_only_is_validated(change: str, field: str, fragment: str) -> None:
    data = json.loads(_insert_only_loans())
    if change == "read_only":
        data["tables"][2]["access"] = "read-only"
        data["transactions"] = []
    elif change == "update_rule":
        data["rules"][0]["on"] = ["insert", "update"]
    else:
        data["transactions"][0]["tool"] = "update_loans"
    with pytest.raises(SpecError) as info:
        parse_spec(json.dumps(data))
    issue = next((i for i in info.value.issues if i.field == field), None)
    assert issue is not None, [str(i) for i in info.value.issues]
    assert fragment in issue.message
