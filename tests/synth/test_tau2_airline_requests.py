"""Airline requests of the procedural generator on the imported fixture (with guards).

Each builder reads a user's records through the read tools and writes one call; here every kind
is built for the fixture's users over a few seeds and run in the engine: bookings pay exactly
their price with the user's own methods, changes keep the route, bags follow the allowance,
compensation is 100 per passenger and refused where the policy does not cover the user.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from veritask.env import CompiledDomain, Environment, ToolResult
from veritask.policy.tau2 import import_tau2
from veritask.synth._procedural_air import (
    AIR_BUILDERS,
    air_bags,
    air_book,
    air_cabin,
    air_change,
    air_compensate,
)
from veritask.synth._procedural_base import Builder, Draft, Reader

FIXTURE = Path(__file__).parent.parent / "fixtures" / "tau2" / "airline"
USERS = ["anna_lee_1001", "ben_ng_2002", "cara_diaz_3003", "dan_roe_4004"]


@pytest.fixture(scope="module")
def domain() -> CompiledDomain:
    return CompiledDomain.from_spec(import_tau2(FIXTURE, "airline", guards=True).spec)


def _drafts(domain: CompiledDomain, build: Builder, seeds: int = 12) -> list[Draft]:
    env = Environment(domain)
    origin = env.image()
    found = []
    for user_id in USERS:
        for seed in range(seeds):
            env.restore(origin)
            reader = Reader(env)
            user = reader.get("get_user_details", {"user_id": user_id})
            draft = build(reader, user, random.Random(seed))
            if draft is not None:
                found.append(draft)
    return found


def _run(domain: CompiledDomain, draft: Draft) -> tuple[Environment, ToolResult]:
    env = Environment(domain)
    for tool, args in draft.lookups:
        assert env.call(tool, args).ok
    return env, env.call(draft.tool, draft.args)


def test_every_airline_write_has_a_builder() -> None:
    spec = import_tau2(FIXTURE, "airline").spec
    writes = {p.name for p in spec.procedures if p.access == "write"}
    assert writes == set(AIR_BUILDERS)


def test_bookings_pay_their_price_with_the_users_own_methods(domain: CompiledDomain) -> None:
    drafts = _drafts(domain, air_book)
    assert drafts
    split = 0
    for draft in drafts:
        pays = draft.args["payment_methods"]
        total = sum(p["amount"] for p in pays)
        assert f"The total should be {total}" in draft.request
        assert sum(p["payment_id"].startswith("certificate") for p in pays) <= 1
        assert sum(p["payment_id"].startswith("credit_card") for p in pays) <= 1
        assert all(p["payment_id"] not in draft.request for p in pays)  # looked up, not said
        assert not any(f["flight_number"] in draft.request for f in draft.args["flights"])
        _, result = _run(domain, draft)
        assert result.ok, result.error
        split += len(pays) > 1
    assert split  # some bookings split a certificate or gift card with a card


def test_flight_changes_keep_the_route_and_cabin_changes_the_flights(
    domain: CompiledDomain,
) -> None:
    for draft in _drafts(domain, air_change):
        env = Environment(domain)
        before = env.call(
            "get_reservation_details", {"reservation_id": draft.args["reservation_id"]}
        )
        old = before.result["flights"]
        new = draft.args["flights"]
        assert (
            len(old) == len(new)
            and sum(
                (o["flight_number"], o["date"]) != (n["flight_number"], n["date"])
                for o, n in zip(old, new, strict=True)
            )
            == 1
        )
        assert draft.args["cabin"] == before.result["cabin"]
    cabin = _drafts(domain, air_cabin)
    assert cabin and all(d.args["cabin"] in d.request for d in cabin)


def test_added_bags_follow_the_allowance(domain: CompiledDomain) -> None:
    drafts = _drafts(domain, air_bags)
    accepted = 0
    for draft in drafts:
        _, result = _run(domain, draft)
        error = result.error
        # a gift card short of the fee is the toolkit's refusal; the allowance always holds
        assert error is None or error.violated_rule is None, error
        accepted += error is None
    assert accepted


def test_compensation_is_100_per_passenger_and_refused_when_not_covered(tmp_path: Path) -> None:
    # on a copy of the fixture whose two one-flight reservations fly the cancelled HAT001
    root = tmp_path / "co"
    shutil.copytree(FIXTURE, root)
    path = root / "data" / "tau2" / "domains" / "airline" / "db.json"
    db = json.loads(path.read_text())
    for rid in ("RES002", "RES004"):
        flight = db["reservations"][rid]["flights"][0]
        flight.update(flight_number="HAT001", date="2024-05-12", origin="JFK", destination="ORD")
    path.write_text(json.dumps(db))
    domain = CompiledDomain.from_spec(import_tau2(root, "airline", guards=True).spec)
    outcome = {}
    for draft in _drafts(domain, air_compensate, seeds=4):
        assert draft.args["amount"] == 100 and "100 per passenger" in draft.request
        _, result = _run(domain, draft)
        outcome[draft.args["user_id"]] = result.error.violated_rule if result.error else None
    # gold: covered; regular, economy, uninsured: refused by the guard
    assert outcome == {"anna_lee_1001": None, "dan_roe_4004": "AIRLINE_COMPENSATION_ELIGIBLE"}
