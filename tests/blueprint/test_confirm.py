"""The confirmation pattern on write tools: preview, then commit with the preview's token."""

from __future__ import annotations

import pytest

from veritask.blueprint._dag_compile import confirm_writes
from veritask.blueprint._dag_schema import Blueprint
from veritask.domains import load_domain
from veritask.env import (
    CONFIRMATION_REQUIRED,
    CompiledDomain,
    ConfirmationGate,
    Environment,
    build_image,
)
from veritask.policy import DomainSpec
from veritask.policy._tools import confirmation_tools
from veritask.serve.mcp_server import tool_definitions
from veritask.task import EnvSession

BORROW = {"member_id": "m_ana", "book_id": "b_dune", "due_step": 10}


def _spec() -> DomainSpec:
    return load_domain("mock").model_copy(update={"confirm_writes": ["insert_loans"]})


def _env() -> Environment:
    spec = _spec()
    return Environment(CompiledDomain.from_spec(spec), build_image(spec))


def test_a_commit_without_a_preview_is_refused_and_changes_nothing() -> None:
    env = _env()
    gate = ConfirmationGate(env)
    before = env.image()
    for args in (
        {**BORROW, "confirm": True},
        {**BORROW, "confirm": True, "confirmation_token": "cf-0000000000000000"},
    ):
        result = gate.call("insert_loans", args)
        assert not result.ok and result.error is not None
        assert result.error.code == CONFIRMATION_REQUIRED and "confirm=false" in result.error.hint
        assert env.image() == before


def test_preview_then_commit_reaches_the_direct_writes_state() -> None:
    env, direct = _env(), _env()
    gate = ConfirmationGate(env)
    before = env.image()
    preview = gate.call("insert_loans", dict(BORROW))
    assert preview.ok and not preview.state_changed
    assert preview.result["needs_confirmation"] is True
    assert preview.result["action_preview"]["would_return"]["book_id"] == "b_dune"
    assert env.image() == before  # the preview left the state as it was
    token = preview.result["confirmation_token"]
    # the token belongs to these arguments
    other = gate.call("insert_loans", {**BORROW, "due_step": 11, "confirm": True,
                                       "confirmation_token": token})  # fmt: skip
    assert other.error is not None and other.error.code == CONFIRMATION_REQUIRED
    assert env.image() == before
    commit = gate.call("insert_loans", {**BORROW, "confirm": True, "confirmation_token": token})
    assert commit.ok and commit.state_changed
    assert direct.call("insert_loans", dict(BORROW)).ok
    assert env.rows("loans") == direct.rows("loans")
    again = gate.call("insert_loans", {**BORROW, "confirm": True, "confirmation_token": token})
    assert again.error is not None and again.error.code == CONFIRMATION_REQUIRED  # spent


def test_a_refused_preview_gets_the_refusal_and_no_token() -> None:
    gate = ConfirmationGate(_env())
    result = gate.call("insert_loans", {**BORROW, "member_id": "m_lapsed"})
    assert not result.ok and result.error is not None
    assert result.error.violated_rule == "MEMBER_ACTIVE" and gate.pending == {}


def test_ungated_tools_and_the_agent_schema() -> None:
    spec = _spec()
    tools = confirmation_tools(spec)
    assert {"confirm", "confirmation_token"} <= set(tools["insert_loans"].params)
    assert "confirm" not in tools["update_loans"].params
    assert "Confirmation required" in tools["insert_loans"].description
    env = _env()
    gate = ConfirmationGate(env)
    assert gate.call("update_loans", {"id": 1, "status": "RETURNED", "return_step": 3,
                                      "late_fee": 0}).state_changed  # fmt: skip
    with pytest.raises(ValueError, match="not a write tool"):
        confirmation_tools(spec.model_copy(update={"confirm_writes": ["query_loans"]}))


def test_the_agent_session_follows_the_pattern() -> None:
    spec = _spec()
    session = EnvSession(CompiledDomain.from_spec(spec), build_image(spec))
    schema = next(t for t in session.tools if t["function"]["name"] == "insert_loans")
    assert "confirmation_token" in schema["function"]["parameters"]["properties"]
    refused = session.call("insert_loans", {**BORROW, "confirm": True})
    assert refused.error is not None and refused.error.code == CONFIRMATION_REQUIRED
    token = session.call("insert_loans", dict(BORROW)).result["confirmation_token"]
    assert session.call("insert_loans", {**BORROW, "confirm": True, "confirmation_token": token}).ok
    assert len(session.env.rows("loans")) == len(load_domain("mock").seed["loans"]) + 1


def test_a_blueprint_function_asks_for_confirmation() -> None:
    data = {
        "name": "library",
        "core": "member",
        "peripherals": ["book"],
        "relationships": [{"name": "loans", "links": ["book"]}],
        "functions": [
            {"name": "borrow", "kind": "create", "relationship": "loans", "confirm": True},
            {"name": "give_back", "kind": "update", "relationship": "loans"},
            {"name": "see", "kind": "lookup", "relationship": "loans", "confirm": True},
        ],
    }
    assert confirm_writes(Blueprint.model_validate(data)) == ["insert_loans"]


def test_the_mcp_server_publishes_the_gated_schema() -> None:
    spec = _spec()
    tools = {t.name: t for t in tool_definitions(_env())}
    assert "confirmation_token" in tools["insert_loans"].input_schema["properties"]
    plain = Environment(CompiledDomain.from_spec(load_domain("mock")), build_image(spec))
    assert (
        "confirm"
        not in {t.name: t for t in tool_definitions(plain)}["insert_loans"].input_schema[
            "properties"
        ]
    )
