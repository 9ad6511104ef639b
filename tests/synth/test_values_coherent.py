"""Free text agrees with the row it describes, and a sentence no rule needs is left out."""

from __future__ import annotations

import random
from pathlib import Path

from veritask.env import CompiledDomain, Environment
from veritask.policy import load_spec
from veritask.synth._analysis import DomainModel
from veritask.synth._designer import faker_for
from veritask.synth._sampler import Sampler, StateView

EXPENSE = Path(__file__).parents[1] / "fixtures" / "unseen_domains" / "expense_desk.yaml"


def _sampler(seed: int) -> tuple[DomainModel, Sampler]:
    spec = load_spec(EXPENSE)
    model = DomainModel.from_spec(spec)
    env = Environment(CompiledDomain.from_spec(spec))
    return model, Sampler(model, StateView(model, env), random.Random(seed), faker_for(seed))


def test_a_purpose_is_drawn_from_claims_of_the_same_category() -> None:
    """A claim's purpose comes from the claims the spec files under its category (no 'Team
    lunch' as Training), whatever the column's pool offers."""
    model, sampler = _sampler(3)
    tx = next(t for t in model.write_transactions if t.id == "submit_claim")
    seeded: dict[str, set[str]] = {}
    examples = [
        c.args for r in model.spec.rules for e in r.examples for c in e.calls
        if c.tool == "insert_claims"
    ]  # fmt: skip
    for row in [*model.spec.seed["claims"], *examples]:  # the rows the spec's author wrote
        seeded.setdefault(row["category"], set()).add(row["purpose"])
    checked = 0
    for _ in range(40):
        args = sampler.sample(tx, "s_lena")
        if args is None or args.get("category") not in seeded:
            continue
        assert args["purpose"] in seeded[args["category"]], args
        checked += 1
    assert checked >= 10


def test_a_comment_is_given_only_when_a_rule_needs_it() -> None:
    """An approval carries no comment; a rejection, which needs a reason, may."""
    model, sampler = _sampler(5)
    tx = next(t for t in model.write_transactions if t.id == "decide_claim")
    decisions = {"APPROVED": 0, "REJECTED": 0}
    for _ in range(60):
        args = sampler.sample(tx, "s_marco")  # the approver of claims 2-4
        if args is None:
            continue
        decisions[args["decision"]] = decisions.get(args["decision"], 0) + 1
        if args["decision"] == "APPROVED":
            assert "comment" not in args, args
    assert decisions["APPROVED"] > 0
