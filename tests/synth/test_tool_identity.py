"""Tool identity in the symbolic roles comes from the spec's tools, and the spoiler check's
identifier cache follows the spec's schema, not the spec object."""

from __future__ import annotations

import pytest

from veritask.domains import load_domain
from veritask.policy import build_tools
from veritask.synth._analysis import DomainModel, target_key
from veritask.task import find_spoilers
from veritask.task._spoiler import _schema_identifiers


@pytest.mark.parametrize("domain", ["mock", "travel"])
def test_every_transaction_names_a_write_tool(domain: str) -> None:
    model = DomainModel.from_spec(load_domain(domain))
    for tx in model.write_transactions:
        tool = model.tool(tx.tool)
        assert tool.writes and model.writes(tx.tool)
        assert model.tool_for(tool.kind, tool.table) is tool
        key = target_key(tool)
        assert (key is not None) == (tool.kind == "update")
    for table in model.spec.tables:
        assert model.query_tool(table.name).table == table.name


def test_default_transactions_follow_the_write_tools() -> None:
    """Without procedures, one per write tool: an update's rules are reachable too."""
    spec = load_domain("mock").model_copy(update={"transactions": []})
    model = DomainModel.from_spec(spec)
    writes = [t.name for t in build_tools(spec).values() if t.kind in ("insert", "update")]
    assert [tx.tool for tx in model.write_transactions] == writes
    update = next(tx for tx in model.write_transactions if tx.tool == "update_loans")
    assert update.parameters == ["id", "status", "return_step", "late_fee"]


def test_spoiler_identifiers_follow_the_schema() -> None:
    spec = load_domain("mock")
    assert find_spoilers("use query_loans", spec, [], []) == ["schema identifier 'query_loans'"]
    loans = spec.table("loans")
    renamed = spec.model_copy(
        update={
            "tables": [
                t if t is not loans else t.model_copy(update={"name": "book_loans"})
                for t in spec.tables
            ]
        }
    )
    assert find_spoilers("use query_loans", renamed, [], []) == []
    assert find_spoilers("use query_book_loans on book_loans", renamed, [], []) == [
        "schema identifier 'book_loans'",
        "schema identifier 'query_book_loans'",
    ]
    info = _schema_identifiers.cache_info()
    assert info.maxsize is not None and info.currsize <= info.maxsize
