"""Rules also check the writes effects make (docs/domain-reference.md, section rules)."""

from __future__ import annotations

from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment
from veritask.policy import spec_from_data


def test_an_effect_write_that_breaks_a_rule_rejects_the_whole_call() -> None:
    data = load_domain("mock").model_dump(mode="json", exclude_defaults=True)
    data["rules"].append(
        {
            "id": "MEMBER_CAP",
            "table": "members",
            "on": ["update"],
            "condition": "NEW.active_loans > 1",
            "code": "CAP_REACHED",
            "message": "A member may hold one book at a time here.",
            "hint": "Return a book first.",
        }
    )
    env = Environment(CompiledDomain.from_spec(spec_from_data(data)))
    before = env.snapshot().data
    # Ben holds one book; lending him another makes ON_LEND raise his counter to 2.
    result = env.call("insert_loans", {"member_id": "m_ben", "book_id": "b_dune", "due_step": 10})
    assert not result.ok and result.error is not None
    assert (result.error.violated_rule, result.error.code) == ("MEMBER_CAP", "CAP_REACHED")
    assert not result.state_changed and env.snapshot().data == before
    assert [r["available"] for r in env.rows("books") if r["id"] == "b_dune"] == [1]
    ok = env.call("insert_loans", {"member_id": "m_ana", "book_id": "b_dune", "due_step": 10})
    assert ok.ok, ok.error
