"""Requests a careful person would accept, one crafted case per class found reading datasets of
domains written from the docs: no look-alike of a row whose name is a kind, an approver never
acts on their own claim, a row's times keep the order of their meaning, spec examples seed
requests without being replayed, free text never names another value of the row it describes,
and cloned users bring their own records."""

from __future__ import annotations

import random
from pathlib import Path

from veritask.env import CompiledDomain, Environment
from veritask.policy import load_spec
from veritask.synth._analysis import DomainModel
from veritask.synth._designer import faker_for
from veritask.synth._inject import ResourceInjector, names_a_kind
from veritask.synth._sampler import Sampler, StateView

FIXTURES = Path(__file__).parents[1] / "fixtures" / "unseen_domains"


def _sampler(name: str, seed: int = 1) -> tuple[DomainModel, Sampler]:
    spec = load_spec(FIXTURES / f"{name}.yaml")
    model = DomainModel.from_spec(spec)
    env = Environment(CompiledDomain.from_spec(spec))
    return model, Sampler(model, StateView(model, env), random.Random(seed), faker_for(seed))


def _injected(name: str, seed: int) -> dict[str, list[dict[str, object]]]:
    spec = load_spec(FIXTURES / f"{name}.yaml")
    injector = ResourceInjector(CompiledDomain.from_spec(spec), DomainModel.from_spec(spec))
    rows = {k: [dict(r) for r in v] for k, v in spec.seed.items()}
    injector.inject(rows, seed, random.Random(seed), faker_for(seed))
    return rows


def test_a_row_whose_name_is_its_kind_gets_no_look_alike() -> None:
    """Expense categories and part families are what a claim or a part *is*: no 'Everyday
    Training' next to 'Training'. Parts, whose names say their attributes, are still cloned."""
    spec = load_spec(FIXTURES / "parts_shop.yaml")
    model = DomainModel.from_spec(spec)
    assert names_a_kind(model, spec.table("part_families"))
    assert not names_a_kind(model, spec.table("parts"))
    assert not names_a_kind(model, spec.table("customers"))  # people are cloned
    assert not names_a_kind(model, spec.table("car_models"))  # 'Ford Focus 2018' has a number
    bikes = load_spec(FIXTURES / "bike_share.yaml")
    plans = bikes.table("plans")  # members hold a plan and switch: its look-alikes are offers
    assert not names_a_kind(DomainModel.from_spec(bikes), plans)
    for seed in range(3):
        expense = _injected("expense_desk", seed)
        assert len(expense["expense_categories"]) == 4
        parts = _injected("parts_shop", seed)
        assert len(parts["part_families"]) == 3
        assert len(parts["parts"]) > 9


def test_a_cloned_user_brings_look_alikes_of_their_own_records() -> None:
    """A cloned customer gets a registered car of their own (a fresh plate), so requests can
    come from more than the seeded few."""
    spec = load_spec(FIXTURES / "parts_shop.yaml")
    seeded = {r["id"] for r in spec.seed["customers"]}
    rows = _injected("parts_shop", 2)
    clones = [r["id"] for r in rows["customers"] if r["id"] not in seeded]
    assert clones
    owners = {v["customer_id"] for v in rows["vehicles"]}
    assert set(clones) <= owners
    plates = [v["plate"] for v in rows["vehicles"]]
    assert len(plates) == len(set(plates))


def test_an_approver_is_offered_the_claims_assigned_to_them_never_their_own() -> None:
    """A decision is made by a claim's approver on someone else's claim (separation of
    duties): the claims offered to a staff member deciding are those routed to them, not their
    own; an employee no claim is routed to is offered none."""
    model, sampler = _sampler("expense_desk")
    claim_id = model.spec.table("decisions").column("claim_id")
    assert sampler.other_role(claim_id)
    seeded = model.spec.seed["claims"]
    for actor in ("s_marco", "s_farah", "s_raj"):
        offered = sampler.fk_candidates(claim_id, actor, on_path=False)
        assigned = [c["id"] for c in seeded if c["approver_id"] == actor != c["claimant_id"]]
        assert offered == assigned, (actor, offered)
    assert sampler.fk_candidates(claim_id, "s_marco", on_path=False)
    # a claimant files for themselves: the claims table's own path is unchanged
    claimant = model.spec.table("claims").column("claimant_id")
    assert sampler.fk_candidates(claimant, "s_raj", on_path=True) == ["s_raj"]


def test_an_expense_is_incurred_before_its_claim_is_filed() -> None:
    """A walk toward a rule may draw the filing step before the expense step; the row keeps
    the order its seed rows show, whatever column was moved."""
    model, sampler = _sampler("expense_desk")
    tx = next(t for t in model.write_transactions if t.id == "submit_claim")
    args = {"claimant_id": "s_lena", "purpose": "Team lunch", "category": "MEALS"}
    args |= {"amount": 40, "receipt_attached": 0, "expense_step": 9, "submitted_step": 4}
    sampler.cohere(tx, args)
    assert (args["expense_step"], args["submitted_step"]) == (4, 9)


def test_a_spec_example_seeds_a_request_without_being_replayed() -> None:
    """The CATEGORY_CAP example (a 151 dinner as Meals, cap 150): the values the rule reads
    stay, the others are drawn anew across draws."""
    model, sampler = _sampler("expense_desk", seed=4)
    tx = next(t for t in model.write_transactions if t.id == "submit_claim")
    rule = model.spec.rule("CATEGORY_CAP")
    example = dict(rule.examples[0].calls[0].args)
    varied = [sampler.vary(tx, rule, example, "s_lena") for _ in range(12)]
    for args in varied:
        assert (args["category"], args["amount"], args["claimant_id"]) == ("MEALS", 151, "s_lena")
        assert args["expense_step"] <= args["submitted_step"]
    steps = {(a["expense_step"], a["submitted_step"]) for a in varied}
    assert len(steps) > 1 and steps != {(5, 6)}


def test_free_text_never_names_another_value_of_what_it_describes() -> None:
    """'Front brakes for a customer car' for rear pads becomes 'Rear brakes ...' (the part's
    name says REAR); for an oil filter (position NONE, which its name does not say) the
    sentence is not used at all."""
    model, sampler = _sampler("parts_shop")
    orders = model.spec.table("orders")
    sku = orders.column("sku")
    text = "Front brakes for a customer car"
    assert sampler._agreeing(text, [sku], {"sku": "PAD-R-GLF"}) == "Rear brakes for a customer car"
    assert sampler._agreeing(text, [sku], {"sku": "PAD-F-FOC"}) == text
    assert sampler._agreeing(text, [sku], {"sku": "OILF-FOC"}) is None
    tx = next(t for t in model.write_transactions if t.id == "place_order")
    args = {"customer_id": "c_joe", "job": "x", "vehicle_id": "v_joe_golf", "sku": "PAD-R-GLF"}
    sampler.cohere(tx, args | {"quantity": 1, "total": 41, "ordered_step": 4})
    jobs = {sampler.cohere(tx, dict(args))["job"] for _ in range(10)}
    assert "Front brakes for a customer car" not in jobs


def test_a_new_booking_does_not_copy_the_users_own_trip_on_that_sailing() -> None:
    """Ana holds 'Weekend at the cottage' on IF101; a new booking of hers on IF101 is named
    after other passengers' trips there ('Moving the kids to camp'), not the same trip again."""
    model, sampler = _sampler("ferry_desk")
    tx = next(t for t in model.write_transactions if t.id == "book_crossing")
    args = {"passenger_id": "p_ana", "trip_name": "x", "sailing_code": "IF101"}
    names = {sampler.cohere(tx, dict(args))["trip_name"] for _ in range(8)}
    assert names and "Weekend at the cottage" not in names


def test_a_clone_keeps_what_its_name_says_it_is() -> None:
    """A look-alike of '600 mm wiper blade for Focus' stays a front blade: intent attributes
    (a part's family, position, model) are never redrawn on a clone."""
    spec = load_spec(FIXTURES / "parts_shop.yaml")
    seeded = {r["sku"]: r for r in spec.seed["parts"]}
    checked = 0
    for seed in range(6):
        for row in _injected("parts_shop", seed)["parts"]:
            source = seeded.get(str(row["sku"]).rsplit("_", 1)[0])
            if source is not None and row["sku"] not in seeded:
                assert row["position"] == source["position"], row
                checked += 1
    assert checked > 10


def test_the_users_own_record_is_the_guide_when_it_alone_is_of_the_same_kind() -> None:
    """Amy's new oil filter order takes the job of her own oil change, not another customer's
    brake service: other users' texts come first only when they are as close."""
    model, sampler = _sampler("parts_shop")
    tx = next(t for t in model.write_transactions if t.id == "place_order")
    args = {"customer_id": "c_amy", "job": "x", "vehicle_id": "v_amy", "sku": "OILF-FOC"}
    jobs = {sampler.cohere(tx, dict(args))["job"] for _ in range(6)}
    assert jobs == {"Oil change"}


def test_a_varied_example_breaks_no_rule_the_example_did_not() -> None:
    """RETURN_SHIPPED_ONLY's example returns 1 unit of the unshipped 1-unit order 2 at step 6:
    a redrawn quantity or step would also break RETURN_QUANTITY or RETURN_WINDOW (11 units,
    a return before the order), so the example's numbers stay."""
    model, sampler = _sampler("parts_shop", seed=3)
    tx = next(t for t in model.write_transactions if t.id == "return_parts")
    rule = model.spec.rule("RETURN_SHIPPED_ONLY")
    example = dict(rule.examples[0].calls[0].args)
    for _ in range(30):
        args = sampler.vary(tx, rule, example, "c_amy")
        if args:
            assert sampler._violated(tx, args) == sampler._violated(tx, example)
            assert args["quantity"] == 1 and args["return_step"] >= 3, args
