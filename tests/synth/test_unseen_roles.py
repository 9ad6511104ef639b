"""The symbolic roles on shapes the built-in domains do not have (fixtures in
tests/fixtures/unseen_domains/): a formula that gives NULL, a revised value the record already
has, a write no agent can work out, two links to one table, an empty optional link."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from veritask.env import CompiledDomain, Environment
from veritask.policy import load_spec
from veritask.synth import DomainModel
from veritask.synth._designer import faker_for
from veritask.synth._explorer import SymbolicExplorer as Explorer
from veritask.synth._projector import SymbolicProjector
from veritask.synth._refs import part_text
from veritask.synth._sampler import Sampler, StateView
from veritask.synth._workable import unworkable
from veritask.task import RowRef

UNSEEN = Path(__file__).parent.parent / "fixtures" / "unseen_domains"


MD_LEAVE: dict[str, Any] = {
    "employee_id": "e_md",
    "leave_type": "ANNUAL",
    "approver_id": "e_lead",
    "note": "Sailing",
    "start_step": 10,
    "end_step": 12,
    "days": 3,
}
"""The managing director's leave request, naming a team lead as approver (``hr_review`` apart)."""


def _world(spec: str) -> tuple[DomainModel, Environment, StateView]:
    loaded = load_spec(UNSEEN / spec)
    env = Environment(CompiledDomain.from_spec(loaded))
    model = DomainModel.from_spec(loaded)
    return model, env, StateView(model, env)


def _explorer(spec: str) -> Explorer:
    model, env, view = _world(spec)
    rng = random.Random(0)
    return Explorer(model, env, view, Sampler(model, view, rng, faker_for(0)), rng)


def test_a_formula_that_gives_null_is_tried_as_null() -> None:
    """The managing director has no manager: APPROVER_IS_MANAGER's formula gives NULL, and the
    repaired request names no approver (it passes) instead of giving the goal up."""
    ex = _explorer("hr_leave.yaml")
    tx = next(t for t in ex.model.spec.transactions if t.id == "file_leave")
    rule = ex.model.spec.rule("APPROVER_IS_MANAGER")
    args = {**MD_LEAVE, "hr_review": 0}
    assert not ex.env.call(tx.tool, args).ok
    repaired = ex._repair(tx, rule, args, "e_md", None)
    assert repaired is not None and repaired["approver_id"] is None
    assert ex.env.call(tx.tool, repaired).ok


def test_a_null_repair_stands_when_another_rule_refuses_next() -> None:
    """With the HR route also wrong, no approver still gets past APPROVER_IS_MANAGER: the next
    refusal (HR_REVIEW_ROUTE) is repaired next, as after any repair."""
    ex = _explorer("hr_leave.yaml")
    tx = next(t for t in ex.model.spec.transactions if t.id == "file_leave")
    args = {**MD_LEAVE, "hr_review": 1}
    repaired = ex._repair(tx, ex.model.spec.rule("APPROVER_IS_MANAGER"), args, "e_md", None)
    assert repaired is not None and repaired["approver_id"] is None
    assert repaired["hr_review"] == 1


def test_a_revised_value_the_record_already_has_stays_in_the_request() -> None:
    ex = _explorer("hr_leave.yaml")
    tx = next(t for t in ex.model.spec.transactions if t.id == "edit_draft")
    args = {"id": 2, "start_step": 7, "end_step": 8, "days": 2}  # the draft ends at step 8
    assert ex._effective(tx, args) == {"id": 2, "start_step": 7, "days": 2}
    assert ex._effective(tx, args, frozenset({"end_step"})) == args
    assert ex._effective(tx, {"id": 2, "end_step": 8}, frozenset({"end_step"})) is None


def test_a_weight_of_a_product_not_on_file_is_unworkable() -> None:
    model, env, _ = _world("warehouse.yaml")
    tx = next(t for t in model.spec.transactions if t.id == "pick_line")
    args = {
        "clerk_id": "k_ana",
        "order_ref": "SO-1001",
        "sku": "SKU-10%_A",
        "bin_code": "A-01/03",
        "qty": 2,
        "weight_kg": 1.0,
    }
    assert unworkable(model, env, tx, args, {"weight_kg"}) is None
    missing = {**args, "sku": "SKU-10%_A_68"}
    assert unworkable(model, env, tx, missing, {"weight_kg"}) == "weight_kg"


@pytest.mark.parametrize(
    ("spec", "table", "column", "ref", "said"),
    [
        (
            "bank.yaml",
            "transfers",
            "to_account",
            RowRef(table="accounts", match={"nickname": "Main account"}),
            "to account: the account 'Main account'",
        ),
        (
            "library.yaml",
            "loans",
            "item_code",
            RowRef(table="items", match={"title": "Emma"}),
            "the item 'Emma'",
        ),
    ],
)
def test_a_link_says_its_role_when_another_link_reaches_the_same_table(
    spec: str, table: str, column: str, ref: RowRef, said: str
) -> None:
    model, _, _ = _world(spec)
    assert part_text(model, table, column, ref, "someone") == said


def test_an_empty_optional_link_is_left_out_of_the_profile() -> None:
    model, _, view = _world("hr_leave.yaml")
    projector = SymbolicProjector(model)
    director, _ = projector.who(view, "e_md")
    staff, _ = projector.who(view, "e_ali")
    assert "manager" not in director and "not on file" not in director
    assert "manager 'Tomás Ortega'" in staff


def test_the_table_noun_in_a_procedure_name_fixes_no_state() -> None:
    """``close_pick`` on ``picks``: "pick" names the record, so it must not fix status PICKED
    (no close could then be asked for); ``reverse_transfer`` still fixes REVERSED."""
    warehouse, _, _ = _world("warehouse.yaml")
    close = next(t for t in warehouse.spec.transactions if t.id == "close_pick")
    assert warehouse.fixed_values(close) == {}
    bank, _, _ = _world("bank.yaml")
    reverse = next(t for t in bank.spec.transactions if t.id == "reverse_transfer")
    assert bank.fixed_values(reverse) == {"status": "REVERSED"}
