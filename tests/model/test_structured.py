"""Structured answers: extraction, validation, repair rounds, rejection and cost ledgers."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from veritask.model import (
    CostLedger,
    ScriptedProvider,
    StructuredOutputError,
    ask,
    extract_block,
    extract_json,
    parse_model,
)


class Plan(BaseModel):
    tables: list[str]
    rules: int


def test_extract_json_from_fences_and_prose() -> None:
    assert extract_json('```json\n{"a": 1}\n```') == {"a": 1}
    assert extract_json('Sure! Here it is: {"a": [1, 2]} hope that helps') == {"a": [1, 2]}
    assert extract_json("[1, 2]") == [1, 2]
    with pytest.raises(ValueError, match="no JSON value"):
        extract_json("no json here {broken")


def test_extract_block_by_language() -> None:
    text = "intro\n```yaml\nx: 1\n```\nthen\n```python\nprint(1)\n```"
    assert extract_block(text, ("python",)) == "print(1)\n"
    assert extract_block(text) == "x: 1\n"
    assert extract_block("nothing fenced") is None


def test_parse_model_names_the_field() -> None:
    parse = parse_model(Plan)
    assert parse('{"tables": ["a"], "rules": 3}') == Plan(tables=["a"], rules=3)
    with pytest.raises(ValueError, match="rules: Field required"):
        parse('{"tables": ["a"]}')


def test_ask_repairs_then_succeeds_and_charges_the_ledger() -> None:
    provider = ScriptedProvider(['{"tables": ["a"]}', '{"tables": ["a"], "rules": 2}'])
    ledger = CostLedger()
    messages = [{"role": "user", "content": "plan it"}]
    plan = asyncio.run(ask(provider, messages, parse_model(Plan), module="plan", ledger=ledger))
    assert plan.rules == 2
    # The second request carries the rejected answer and the reason.
    second = provider.requests[1]["messages"]
    assert second[1] == {"role": "assistant", "content": '{"tables": ["a"]}'}
    assert "rules: Field required" in second[2]["content"]
    record = ledger.modules["plan"]
    assert (record.calls, record.attempts, record.successes) == (2, 1, 1)
    assert record.prompt_tokens > 0 and record.completion_tokens > 0
    assert messages == [{"role": "user", "content": "plan it"}]  # caller's list untouched


def test_ask_rejects_with_every_reason_after_bounded_rounds() -> None:
    provider = ScriptedProvider(["nope", "still nope", "{}"])
    ledger = CostLedger()
    with pytest.raises(StructuredOutputError) as info:
        asyncio.run(
            ask(
                provider,
                [{"role": "user", "content": "x"}],
                parse_model(Plan),
                module="plan",
                ledger=ledger,
                max_repairs=2,
            )
        )
    assert len(info.value.reasons) == 3
    assert info.value.last_text == "{}"
    assert ledger.modules["plan"].success_rate == 0.0
    assert provider.remaining == 0


def test_ledger_round_trips_and_totals() -> None:
    ledger = CostLedger()
    ledger.module("a").prompt_tokens = 10
    ledger.outcome("a", True)
    ledger.module("b").completion_tokens = 5
    ledger.outcome("b", False)
    data = ledger.to_json()
    assert data["total"]["prompt_tokens"] == 10 and data["total"]["completion_tokens"] == 5
    assert data["total"]["success_rate"] == 0.5
    assert CostLedger.from_json(data).to_json() == data
