"""Tasks with several requests: built so that no later request undoes or repeats an earlier one,
and the rules about the user's own standing aimed at by the refusals a unit may make."""

from __future__ import annotations

import random

import pytest

from veritask._util import derive_seed
from veritask.domains import load_domain
from veritask.env import Environment
from veritask.synth import _unit
from veritask.synth._analysis import DomainModel
from veritask.synth._chain import repeats, retired
from veritask.synth._episode import SubGoalTrace
from veritask.synth._sampler import StateView
from veritask.synth._standing import standing_rules
from veritask.synth._unit import REFUSAL_EVERY, UnitWorker
from veritask.task import ARCHETYPES, Ask, WitnessCall


@pytest.fixture(scope="module")
def retail() -> DomainModel:
    return DomainModel.from_spec(load_domain("retail"))


def _opened(key: int) -> WitnessCall:
    args = {"order_item_id": 3, "quantity": 1, "reason_code": "CHANGED_MIND", "request_step": 40}
    return WitnessCall(tool="insert_returns", args=args, ok=True, result={"id": key})


def _set(key: int, status: str, ok: bool = True) -> WitnessCall:
    return WitnessCall(tool="update_returns", args={"id": key, "status": status}, ok=ok)


def test_a_record_made_and_retired_in_one_task_is_found(retail: DomainModel) -> None:
    before = [_opened(7)]
    assert retired(retail, before, [_set(7, "CANCELLED")]) == [("returns", 7)]
    # another record, a status that keeps the record active, or a refused call: nothing undone
    assert retired(retail, before, [_set(8, "CANCELLED")]) == []
    assert retired(retail, before, [_set(7, "RECEIVED")]) == []
    assert retired(retail, before, [_set(7, "CANCELLED", ok=False)]) == []
    assert retired(retail, [], [_set(7, "CANCELLED")]) == []


def _claim(retail: DomainModel, issue: str) -> SubGoalTrace:
    tx = next(t for t in retail.write_transactions if t.tool == "insert_warranty_claims")
    ask = Ask(transaction=tx.id, tool=tx.tool, values={"issue": issue, "claim_step": 40})
    return SubGoalTrace(tx=tx, args={}, result={}, target=None, ask=ask)


def test_a_second_record_described_with_the_same_words_is_a_repeat(retail: DomainModel) -> None:
    first = [_claim(retail, "Screen flickers when charging")]
    assert repeats(retail, first, [_claim(retail, "Screen flickers when charging")])
    assert not repeats(retail, first, [_claim(retail, "Battery no longer holds a charge")])
    # the earlier goals among themselves are not the new goal's business
    assert not repeats(retail, [*first, *first], [])


def test_chained_requests_neither_undo_nor_repeat(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_unit, "CHAIN", 1.0)  # the user always asks for one more
    worker = UnitWorker("retail")
    worker.want = list(ARCHETYPES)
    scene = worker.designer.design(0, derive_seed("retail", 0, "scene", 0), fill=True)
    env = Environment(worker.domain, scene.origin)
    view = StateView(worker.model, env)
    several = 0
    for t in range(10):
        rng = random.Random(derive_seed("chain", t))
        aim = worker._aim(t, 0)
        episode = worker._episode(scene, env, view, rng, aim, refusal_ok=False)
        if episode is None:
            continue
        assert len(episode.subgoals) <= _unit.MAX_GOALS
        several += len(episode.subgoals) >= 2
        calls = episode.witness
        for cut in range(len(calls)):
            assert retired(worker.model, calls[:cut], calls[cut:]) == []
        goals = episode.subgoals
        assert not any(repeats(worker.model, goals[:i], goals[i:]) for i in range(len(goals)))
    env.close()
    assert several >= 3


def test_standing_rules_are_those_on_the_users_own_account() -> None:
    assert {r.id for r in standing_rules(load_domain("retail"))} == {
        "RETURN_CUSTOMER_ACTIVE",
        "EXCHANGE_CUSTOMER_ACTIVE",
        "CLAIM_CUSTOMER_ACTIVE",
    }
    travel = {r.id for r in standing_rules(load_domain("travel"))}
    assert {"TR_USER_ACTIVE", "TR_COMPANY_ACTIVE"} <= travel  # the user's and their company's
    assert {r.id for r in standing_rules(load_domain("mock"))} == {"MEMBER_ACTIVE"}


def test_every_other_refusing_unit_aims_at_the_standing_rules_in_turn() -> None:
    worker = UnitWorker("retail")
    standing = [r.id for r in worker.standing]
    aims = [worker._refusal_aim(2 * REFUSAL_EVERY * k, 0) for k in range(4)]
    assert [a.id for a in aims if a is not None] == [*standing, standing[0]]
    assert worker._refusal_aim(REFUSAL_EVERY, 0) is None  # the odd rounds aim as usual
    assert [a.id for a in (worker._refusal_aim(0, r) for r in range(3)) if a] == standing
    assert worker._refusal_aim(0, len(standing)) is None  # then the rotation takes over
