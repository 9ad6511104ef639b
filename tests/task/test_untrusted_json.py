"""JSON written by a model or a client, decoded wherever it arrives, never raises.

``json.loads`` raises ``RecursionError`` on deep nesting (not a ``ValueError``) and ``ValueError``
(not a ``JSONDecodeError``) on an integer past Python's digit limit; code that caught only
``JSONDecodeError`` crashed on either. Each entry point below takes such text and answers with
a structured error or a reason.
"""

from __future__ import annotations

import json

import pytest

from veritask._util import loads_untrusted, raw_decode_untrusted, repair_untrusted
from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment
from veritask.export._chat import arguments_dict
from veritask.integrations.toolparse import parse_tool_calls
from veritask.model import extract_json
from veritask.simulate import catalog_from_spec, observation
from veritask.task import EnvSession

DEEP = "[" * 20_000  # past the recursion limit of the JSON parser
DIGITS = '{"due_step": ' + "9" * 5000 + "}"
HOSTILE = [DEEP, '{"a": ' + DEEP, DIGITS, '{"member_id": "m_', "", "nul\x00", '{"a": NaN}']


@pytest.mark.parametrize("text", HOSTILE)
def test_the_untrusted_decoders_raise_only_value_error(text: str) -> None:
    for decode in (loads_untrusted, raw_decode_untrusted, extract_json):
        try:
            decode(text)
        except ValueError as exc:
            assert str(exc)
    repair_untrusted(text)  # returns whatever it could repair, or None


@pytest.mark.parametrize("text", HOSTILE)
def test_an_env_session_records_a_hostile_call(text: str) -> None:
    domain = CompiledDomain.from_spec(load_domain("mock"))
    session = EnvSession(domain, Environment(domain).image())
    before = session.env.image()
    result = session.call("insert_loans", text)
    assert not result.ok and result.error is not None and result.error.code
    assert session.env.image() == before
    assert session.steps[-1].tool == "insert_loans"
    json.dumps(result.to_json())


@pytest.mark.parametrize("text", HOSTILE)
def test_tool_call_parsers_keep_a_hostile_block_visible(text: str) -> None:
    for block in (
        f"<tool_call>{text}</tool_call>",
        f'<tool_call>{{"name": "query_loans", "arguments": {json.dumps(text)}}}</tool_call>',
    ):
        for call in parse_tool_calls(block):
            assert isinstance(call["function"]["name"], str)
    assert isinstance(arguments_dict(text), dict)


@pytest.mark.parametrize("text", HOSTILE)
def test_a_simulator_answer_that_cannot_be_read_is_unusable_with_a_reason(text: str) -> None:
    catalog = catalog_from_spec(load_domain("mock"))
    result, why = observation("query_loans", catalog.get("query_loans"), text)
    assert not result.ok and why
