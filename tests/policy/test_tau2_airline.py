"""τ²-bench airline imported as procedural tools: parity on a hand-written fixture.

The fixture (tests/fixtures/tau2/airline) is in τ²-bench's format: five flights, three users,
three reservations, and tasks whose gold actions cover every write tool, refusals included.
Each task's expected final database is written here by hand as edits of the fixture, following
what τ²-bench's airline tools do (quirks included), and compared as data and by τ²-bench's hash
(sha256 of ``json.dumps(db.model_dump(), sort_keys=True, default=str)``, where balances are
floats, payments and prices integers, and a reservation's ``status`` is null until cancelled).
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from veritask.env import CompiledDomain, Environment
from veritask.env._tau2 import replay, tau2_db
from veritask.policy.tau2 import import_tau2
from veritask.policy.tau2._import import airports

ROOT = Path(__file__).parent.parent / "fixtures" / "tau2" / "airline"
DATA = ROOT / "data" / "tau2" / "domains" / "airline"
DB = dict[str, Any]


def tau2_hash(db: DB) -> str:
    """τ²-bench's database hash, written again from its description."""
    return hashlib.sha256(json.dumps(db, sort_keys=True, default=str).encode()).hexdigest()


def dumped(raw: DB) -> DB:
    """What τ²-bench's pydantic models make of a ``db.json``: float balances, a null status."""
    db = copy.deepcopy(raw)
    for user in db["users"].values():
        for pm in user["payment_methods"].values():
            if "amount" in pm:
                pm["amount"] = float(pm["amount"])
    for res in db["reservations"].values():
        res.setdefault("status", None)
    return db


@pytest.fixture(scope="module")
def domain() -> CompiledDomain:
    return CompiledDomain.from_spec(import_tau2(ROOT, "airline").spec)


@pytest.fixture(scope="module")
def seed() -> DB:
    return dumped(json.loads((DATA / "db.json").read_text()))


def _tasks() -> dict[str, list[dict[str, Any]]]:
    tasks = json.loads((DATA / "tasks.json").read_text())
    return {t["id"]: t["evaluation_criteria"]["actions"] for t in tasks}


def _pm(db: DB, user: str, pm: str) -> dict[str, Any]:
    found: dict[str, Any] = db["users"][user]["payment_methods"][pm]
    return found


def _book(db: DB) -> None:
    anna = db["users"]["anna_lee_1001"]
    del anna["payment_methods"]["certificate_1001"]  # a certificate is spent whole
    anna["payment_methods"]["gift_card_1001"]["amount"] = 0.0
    anna["reservations"].append("HATHAT")  # the first of three fixed ids
    db["flights"]["HAT003"]["dates"]["2024-05-10"]["available_seats"]["economy"] = 2
    db["reservations"]["HATHAT"] = {
        "reservation_id": "HATHAT",
        "user_id": "anna_lee_1001",
        "origin": "JFK",
        "destination": "SEA",
        "flight_type": "one_way",
        "cabin": "economy",
        "flights": [
            {
                "flight_number": "HAT003",
                "origin": "JFK",
                "destination": "SEA",
                "date": "2024-05-10",
                "price": 200,
            }
        ],
        "passengers": db["reservations"]["RES001"]["passengers"],
        "payment_history": [
            {"payment_id": "certificate_1001", "amount": 150},
            {"payment_id": "gift_card_1001", "amount": 200},
            {"payment_id": "credit_card_1001", "amount": 160},
        ],
        "created_at": "2024-05-15T15:00:00",  # τ²-bench's fixed "now"
        "total_baggages": 3,
        "nonfree_baggages": 1,
        "insurance": "yes",
    } | {"status": None}


def _book_twice(db: DB) -> None:
    seats = db["flights"]["HAT002"]["dates"]
    seats["2024-05-11"]["available_seats"]["basic_economy"] = 1
    seats["2024-05-10"]["available_seats"]["economy"] = 5
    db["users"]["cara_diaz_3003"]["reservations"] += ["HATHAT", "HATHAU"]
    base = {
        "user_id": "cara_diaz_3003",
        "origin": "ORD",
        "destination": "SEA",
        "flight_type": "one_way",
        "passengers": [{"first_name": "Cara", "last_name": "Diaz", "dob": "1972-05-09"}],
        "created_at": "2024-05-15T15:00:00",
        "total_baggages": 0,
        "nonfree_baggages": 0,
        "insurance": "no",
        "status": None,
    }
    for rid, cabin, date, price in (
        ("HATHAT", "basic_economy", "2024-05-11", 70),
        ("HATHAU", "economy", "2024-05-10", 120),
    ):
        flight = {"flight_number": "HAT002", "origin": "ORD", "destination": "SEA"}
        db["reservations"][rid] = base | {
            "reservation_id": rid,
            "cabin": cabin,
            "flights": [flight | {"date": date, "price": price}],
            "payment_history": [{"payment_id": "credit_card_3003", "amount": price}],
        }


def _change_flights(db: DB) -> None:
    res = db["reservations"]["RES001"]
    # 2 passengers x 200 for the new flight, minus 2 x (150 + 120) already paid: a refund
    res["payment_history"].append({"payment_id": "gift_card_1001", "amount": -140})
    _pm(db, "anna_lee_1001", "gift_card_1001")["amount"] = 340.0
    res["flights"] = [
        {
            "flight_number": "HAT003",
            "origin": "JFK",
            "destination": "SEA",
            "date": "2024-05-10",
            "price": 200,
        }
    ]  # and no seat count changes: the toolkit leaves seats alone on a change


def _change_cabin(db: DB) -> None:
    res = db["reservations"]["RES003"]
    res["cabin"] = "economy"  # the same flight in another cabin is priced again: 120 - 400
    res["flights"][0]["price"] = 120
    res["payment_history"].append({"payment_id": "gift_card_2002", "amount": -280})
    _pm(db, "ben_ng_2002", "gift_card_2002")["amount"] = 310.5


def _baggage(db: DB) -> None:
    res = db["reservations"]["RES003"]
    res["payment_history"].append({"payment_id": "credit_card_2002", "amount": 100})
    res["total_baggages"], res["nonfree_baggages"] = 2, 1  # fewer bags: no refund


def _cancel(db: DB) -> None:
    res = db["reservations"]["RES001"]
    res["status"] = "cancelled"  # cancelled twice: the second refunds the refund too
    res["payment_history"] += [
        {"payment_id": "credit_card_1001", "amount": -540},
        {"payment_id": "credit_card_1001", "amount": -540},
        {"payment_id": "credit_card_1001", "amount": 540},
    ]


def _passengers(db: DB) -> None:
    db["reservations"]["RES003"]["passengers"] = [
        {"first_name": "Bea", "last_name": "Ng", "dob": "1992-01-02"}
    ]


def _certificates(db: DB) -> None:
    pms = db["users"]["cara_diaz_3003"]["payment_methods"]
    for pid, amount in (("certificate_3221322", 50.0), ("certificate_3221323", 75.0)):
        pms[pid] = {"source": "certificate", "id": pid, "amount": amount}


def _unchanged(db: DB) -> None:
    del db


EXPECTED: dict[str, Callable[[DB], None]] = {
    "book": _book,
    "book_twice": _book_twice,
    "book_refused": _unchanged,
    "change_flights": _change_flights,
    "change_nothing": _unchanged,  # the same flights again: no payment, nothing changes
    "change_cabin": _change_cabin,
    "change_refused": _unchanged,
    "baggage": _baggage,
    "cancel": _cancel,
    "passengers": _passengers,
    "certificates": _certificates,
    "reads": _unchanged,
}


def test_the_fixture_round_trips_through_the_tables(domain: CompiledDomain, seed: DB) -> None:
    env = Environment(domain)
    assert tau2_db(env) == seed
    assert tau2_hash(tau2_db(env)) == tau2_hash(seed)


@pytest.mark.parametrize("task", list(EXPECTED))
def test_gold_actions_reach_the_hand_computed_database(
    domain: CompiledDomain, seed: DB, task: str
) -> None:
    env = Environment(domain)
    replay(env, _tasks()[task])
    expected = copy.deepcopy(seed)
    EXPECTED[task](expected)
    assert tau2_db(env) == expected
    assert tau2_hash(tau2_db(env)) == tau2_hash(expected)


def test_every_task_of_the_fixture_has_an_expectation() -> None:
    assert set(_tasks()) == set(EXPECTED)


def test_refused_gold_writes_say_what_tau2_says_and_change_nothing(domain: CompiledDomain) -> None:
    env = Environment(domain)
    before = env.image()
    books = [c for _, c in replay(env, _tasks()["book_refused"])]
    assert books == [
        "Error: Not enough seats on flight HAT002",
        "Error: Payment amount does not add up, total price is 120, but paid 130",
        "Error: Flight HAT001 not available on date 2024-05-12",
        "Error: Flight HAT009 not found",
        "Error: User nobody_0000 not found",
        "Error: Payment method gift_card_2002 not found",
    ]
    changes = [c for _, c in replay(env, _tasks()["change_refused"])]
    assert changes == [
        # refused even though the change costs 0
        "Error: Certificate cannot be used to update reservation",
        "Error: Gift card balance is not enough",  # 2 x 650 - 540 = 760 > 200
        "Error: Reservation RES009 not found",
    ]
    bags = replay(Environment(domain), _tasks()["baggage"])[0][1]
    assert bags == "Error: Gift card balance is not enough"
    pax = replay(Environment(domain), _tasks()["passengers"])[1][1]
    assert pax == "Error: Number of passengers does not match"
    assert env.image() == before


def test_reads_return_tau2_shaped_objects(domain: CompiledDomain, seed: DB) -> None:
    env = Environment(domain)
    (_, user), (_, direct), _ = replay(env, _tasks()["book"])
    assert user == seed["users"]["anna_lee_1001"]
    assert [d["flight_number"] for d in direct] == ["HAT003"]
    assert direct[0]["date"] is None and direct[0]["status"] == "available"
    assert direct[0]["prices"] == {"business": 650, "economy": 200, "basic_economy": 90}
    res = env.call("get_reservation_details", {"reservation_id": "RES002"}).result
    assert res == seed["reservations"]["RES002"]
    contents = [c for _, c in replay(env, _tasks()["reads"])]
    night, padded, same_day = contents[:3]
    # an arrival "+1" searches the next day: 2024-05-09 -> 2024-05-10
    assert [(a["flight_number"], a["date"], b["flight_number"], b["date"]) for a, b in night] == [
        ("HAT004", "2024-05-09", "HAT005", "2024-05-10")
    ]
    assert padded == []  # 2024-05-05 + 1 is looked up as "2024-05-6", which no flight has
    assert [(a["flight_number"], b["flight_number"]) for a, b in same_day] == [("HAT001", "HAT002")]
    assert contents[3:] == [
        "delayed",
        "Error: Flight HAT003 not found on date 2024-05-01",
        "Error: User nobody_0000 not found",
        "540.0",
        "Transfer successful",
    ]


def test_certificates_have_fixed_ids_and_say_so(domain: CompiledDomain) -> None:
    env = Environment(domain)
    contents = [c for _, c in replay(env, _tasks()["certificates"])]
    assert contents == [
        "Certificate certificate_3221322 added to user cara_diaz_3003 with amount 50.",
        "Certificate certificate_3221323 added to user cara_diaz_3003 with amount 75.",
        "Error: User nobody_0000 not found",
    ]


def test_the_airport_list_comes_from_the_users_toolkit(domain: CompiledDomain) -> None:
    listed = Environment(domain).call("list_all_airports", {}).result
    assert listed == [
        {"iata": "JFK", "city": "New York"},
        {"iata": "ORD", "city": "Chicago"},
        {"iata": "SEA", "city": "Seattle"},
    ]
    assert airports("def list_all_airports(self):\n    return []\n") == []
    assert airports("not python (") == []


def test_the_import_reads_descriptions_and_reports_what_it_leaves_out(tmp_path: Path) -> None:
    imported = import_tau2(ROOT, "airline")
    assert imported.unsupported == {}
    names = [p.name for p in imported.spec.procedures]
    assert len(names) == 14 and "book_reservation" in names
    writes = [p.name for p in imported.spec.procedures if p.access == "write"]
    assert len(writes) == 6
    send = next(p for p in imported.spec.procedures if p.name == "send_certificate")
    assert send.description == "Send a certificate to a user (fixture)."
    copy_root = tmp_path / "co"
    target = copy_root / "data" / "tau2" / "domains" / "airline"
    target.mkdir(parents=True)
    for name in ("db.json", "policy.md"):
        (target / name).write_text((DATA / name).read_text())
    bare = import_tau2(copy_root, "airline")  # no toolkit source: no airport list
    assert bare.unsupported == {"list_all_airports": "the toolkit's airport list was not found"}
    (target / "db.json").write_text('{"products": {}}')
    with pytest.raises(ValueError, match="'flights', 'users' and 'reservations'"):
        import_tau2(copy_root, "airline")


def test_a_certificate_named_twice_is_refused_whole(domain: CompiledDomain) -> None:
    """The one known difference: τ²-bench removes the certificate at its first use and fails
    with a KeyError at the second, after it has already taken the gift card's share (it has no
    rollback). veritask returns the same text and leaves the state as it was."""
    env = Environment(domain)
    before = env.image()
    payments = [
        {"payment_id": "gift_card_1001", "amount": 50},
        {"payment_id": "certificate_1001", "amount": 75},
        {"payment_id": "certificate_1001", "amount": 75},
    ]
    res = env.call(
        "book_reservation",
        {
            "user_id": "anna_lee_1001",
            "origin": "JFK",
            "destination": "SEA",
            "flight_type": "one_way",
            "cabin": "economy",
            "flights": [{"flight_number": "HAT003", "date": "2024-05-10"}],
            "passengers": [{"first_name": "Anna", "last_name": "Lee", "dob": "1985-02-14"}],
            "payment_methods": payments,
            "total_baggages": 0,
            "nonfree_baggages": 0,
            "insurance": "no",
        },
    )
    assert res.error is not None and res.error.message == "'certificate_1001'"
    assert env.image() == before
