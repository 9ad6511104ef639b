"""Rules the aimed Explorer reaches only through a direct request (an outcome no procedure
offers) or on a state the user's own earlier request made: each becomes a certified, grounded,
spoiler-free package that the faithful agent solves from its text alone."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from veritask._util import derive_seed
from veritask.agent import FaithfulAgent, ScriptedUser
from veritask.domains import builtin_domains, load_domain
from veritask.env import Environment, Snapshot
from veritask.rollout import EpisodeTask, run_episode
from veritask.synth._analysis import DomainModel
from veritask.synth._sampler import StateView
from veritask.synth._unit import UnitResult, UnitWorker
from veritask.task import ARCHETYPES, DatasetDir, TaskPackage, sha256, text_keys

SCENES = 4
TRIES = 3


def _packages(domain: str, rule_id: str, out: Path) -> list[tuple[TaskPackage, bytes]]:
    """Packages aimed at ``rule_id`` over a few scenes, as ``generate`` admits them."""
    worker = UnitWorker(domain)
    worker.want = list(ARCHETYPES)  # a slot that takes any archetype the package carries
    rule = worker.spec.rule(rule_id)
    ds = DatasetDir(out)
    found = []
    for unit in range(SCENES):
        scene = worker.designer.design(unit, derive_seed(domain, 0, "scene", unit), fill=True)
        env = Environment(worker.domain, scene.origin)
        view = StateView(worker.model, env)
        internal = text_keys(worker.spec, scene.origin)
        origin = Snapshot(scene.origin, worker.domain.layout)
        for t in range(TRIES):
            rng = random.Random(derive_seed(unit, "t", t))
            episode = worker._episode(scene, env, view, rng, rule, refusal_ok=t == 0)
            if episode is None:
                continue
            if worker._admit(episode, env, origin, set(), worker.checker) is not None:
                continue
            digests = (sha256(scene.origin), ds.put_policy(worker.policy))
            where = (domain, 0, unit * 10 + t)
            result = UnitResult(unit, 0)
            worker.texts.clear()  # tries of one aim, not a unit: the same text may recur
            pkg = worker._accepted(where, scene, episode, view, internal, digests, ds, result)
            # generation discards a candidate whose text does not determine a write (a
            # chained request with a value no rule fixes), one a careful reader would not
            # accept (the semantic lint) or one whose user no archetype fits; never a leak
            assert all(
                r in ("ungrounded", "archetype not built") or r.startswith("lint: ")
                for r in result.discarded
            ), result.leaks
            if pkg is not None and rule_id in pkg.rules_exercised:
                found.append((pkg, scene.origin))
        env.close()
    return found


CASES = [
    ("retail", "RETURN_CLOSE_BY_SYSTEM"),  # a status only the system sets: a direct request
    ("retail", "REFUND_COMPLETE_NEEDS_APPROVAL"),
    ("clinic", "PREAUTH_INSURER_DECIDES"),
    ("travel", "FLIGHT_TICKETED_IMMUTABLE"),  # any change of a final record, not a cancellation
    ("gym", "FREEZE_WITHDRAWN_FINAL"),
    ("retail", "APPROVAL_NOT_PENDING"),  # after the user's own decision on the same approval
    ("registrar", "ENR_WITHDRAW_QUOTA"),  # after the user's own withdrawal filled the quota
    ("clinic", "PAYMENT_INVOICE_PAID"),  # the invoice is named without its amount due
]


@pytest.mark.parametrize(("domain", "rule"), CASES, ids=[r for _, r in CASES])
def test_a_rule_no_procedure_meets_first_becomes_a_solvable_task(
    domain: str, rule: str, tmp_path: Path
) -> None:
    found = _packages(domain, rule, tmp_path)
    assert found, f"no package exercises {rule}"
    worker = UnitWorker(domain)
    worker.want = list(ARCHETYPES)  # a slot that takes any archetype the package carries
    for pkg, origin in found:
        target = DatasetDir(tmp_path).read_state(pkg.target)
        task = EpisodeTask(pkg, worker.domain, "policy", origin, target)
        traj = asyncio.run(run_episode(task, FaithfulAgent(worker.spec), ScriptedUser(pkg)))
        assert traj.final_distance == 0, pkg.task_description


def test_a_request_refused_after_the_users_own_request_comes_last(tmp_path: Path) -> None:
    """The refused request stands where it was made (after the request that made its state),
    and the user gives it up and stops there."""
    found = _packages("retail", "APPROVAL_NOT_PENDING", tmp_path)
    assert found
    for pkg, _ in found:
        *before, last = pkg.task.sub_goals
        assert before and [fb.rule for fb in last.fallbacks] == ["APPROVAL_NOT_PENDING"]
        assert last.fallbacks[0].then is None
        assert any("end the conversation" in t for t in last.reactive_triggers)
        writes = [c for c in pkg.witness if c.tool.startswith(("insert_", "update_"))]
        assert writes[0].ok and not writes[-1].ok and not pkg.refusal


def test_direct_requests_name_only_values_no_procedure_sets() -> None:
    for domain in builtin_domains():
        spec = load_domain(domain)
        model = DomainModel.from_spec(spec)
        for rule in spec.rules:
            tx = model.direct_request(rule)
            if tx is None:
                continue
            assert model.is_direct(tx) and tx not in model.write_transactions
            tool = model.tool(tx.tool)
            assert tool.kind == "update" and tool.table == rule.table
            key, col = tx.parameters
            assert key == tool.key
            set_by = {
                model.fixed_values(p).get(col)
                for p in model.write_transactions
                if p.tool == tool.name
            }
            enum = spec.table(rule.table).column(col).enum or []
            assert col in {c for p in model.write_transactions for c in model.fixed_values(p)}
            free = [v for v in enum if v not in set_by]
            assert free
            if rule.when and f"NEW.{col}" in rule.when:
                assert any(f"'{v}'" in rule.when for v in free)
            assert model.fixed_values(tx) == {}
    travel = DomainModel.from_spec(load_domain("travel"))
    # the guard pins the status to CANCELLED, which the cancellation procedure sets: a direct
    # request for another status never meets the rule
    assert travel.direct_request(travel.spec.rule("FLIGHT_REFUND_FULL")) is None
    assert travel.direct_request(travel.spec.rule("FLIGHT_TICKETED_IMMUTABLE")) is not None
    retail = DomainModel.from_spec(load_domain("retail"))
    assert retail.direct_request(retail.spec.rule("APPROVAL_WITHDRAW_BY_SYSTEM")) is None
    close = retail.direct_request(retail.spec.rule("RETURN_CLOSE_BY_SYSTEM"))
    assert close is not None and close.parameters == ["id", "status"]
