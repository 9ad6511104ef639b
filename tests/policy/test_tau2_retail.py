"""τ²-bench retail imported as procedural tools: parity on a hand-written fixture.

The fixture (tests/fixtures/tau2/retail) is in τ²-bench's format and holds a few users, products
and orders. Each task's expected final database is written here by hand as edits of the fixture,
following what τ²-bench's tools do (quirks included), and compared both as data and by an
independent re-implementation of τ²-bench's hash: the sha256 of ``json.dumps(db.model_dump(),
sort_keys=True, default=str)``, where ``model_dump`` lists every optional order field (null when
absent) and gives every float field as a float.
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

ROOT = Path(__file__).parent.parent / "fixtures" / "tau2" / "retail"
DATA = ROOT / "data" / "tau2" / "domains" / "retail"
_OPTIONAL = (
    "cancel_reason",
    "exchange_items",
    "exchange_new_items",
    "exchange_payment_method_id",
    "exchange_price_difference",
    "return_items",
    "return_payment_method_id",
)
DB = dict[str, Any]


def tau2_hash(db: DB) -> str:
    """τ²-bench's database hash, written again from its description."""
    return hashlib.sha256(json.dumps(db, sort_keys=True, default=str).encode()).hexdigest()


def dumped(raw: DB) -> DB:
    """What τ²-bench's pydantic models make of a ``db.json``: floats, and every optional field."""
    db = copy.deepcopy(raw)
    for product in db["products"].values():
        for v in product["variants"].values():
            v["price"] = float(v["price"])
    for user in db["users"].values():
        for pm in user["payment_methods"].values():
            if "balance" in pm:
                pm["balance"] = float(pm["balance"])
    for order in db["orders"].values():
        for field in _OPTIONAL:
            order.setdefault(field, None)
        for item in order["items"]:
            item["price"] = float(item["price"])
        for p in order["payment_history"]:
            p["amount"] = float(p["amount"])
    return db


@pytest.fixture(scope="module")
def domain() -> CompiledDomain:
    return CompiledDomain.from_spec(import_tau2(ROOT, "retail").spec)


@pytest.fixture(scope="module")
def seed() -> DB:
    return dumped(json.loads((DATA / "db.json").read_text()))


def _tasks() -> dict[str, list[dict[str, Any]]]:
    tasks = json.loads((DATA / "tasks.json").read_text())
    return {t["id"]: t["evaluation_criteria"]["actions"] for t in tasks}


def _cancel(db: DB) -> None:
    order = db["orders"]["#W1000001"]
    order["status"], order["cancel_reason"] = "cancelled", "no longer needed"
    order["payment_history"].append(
        {"transaction_type": "refund", "amount": 50.05, "payment_method_id": "gift_card_1001"}
    )
    db["users"]["ana_kim_1001"]["payment_methods"]["gift_card_1001"]["balance"] = 100.05


def _last_variant(db: DB) -> None:
    order = db["orders"]["#W1000001"]
    # quirk: both modified items get the price and options of the LAST new variant (blue, 12.5),
    # though the first was exchanged for the white one; the item ids are set pairwise
    for item, new_id in zip(order["items"][:2], ["2000000005", "2000000002"], strict=True):
        item.update(item_id=new_id, price=12.5, options={"color": "blue", "size": "small"})
    order["status"] = "pending (item modified)"
    # quirk: the price difference keeps its float artefact (0 + 0.05000000000000071 + 2.5)
    order["payment_history"].append(
        {
            "transaction_type": "payment",
            "amount": 2.5500000000000007,
            "payment_method_id": "gift_card_1001",
        }
    )
    db["users"]["ana_kim_1001"]["payment_methods"]["gift_card_1001"]["balance"] = 47.45


def _round_tie(db: DB) -> None:
    order = db["orders"]["#W1000002"]
    order.update(
        status="exchange requested",
        exchange_items=["2000000002"],
        exchange_new_items=["2000000004"],
        exchange_payment_method_id="credit_card_1001",
        # quirk: 12.625 - 12.5 = 0.125 exactly; Python's round gives 0.12 (SQLite's gives 0.13)
        exchange_price_difference=0.12,
    )


def _return(db: DB) -> None:
    order = db["orders"]["#W1000002"]
    order.update(
        status="return requested",
        return_items=["2000000002", "3000000002"],  # sorted
        return_payment_method_id="gift_card_1001",
    )


def _payment(db: DB) -> None:
    order = db["orders"]["#W2000003"]
    order["payment_history"] += [
        {"transaction_type": "payment", "amount": 30.05, "payment_method_id": "gift_card_2002"},
        {"transaction_type": "refund", "amount": 30.05, "payment_method_id": "paypal_2002"},
    ]
    db["users"]["ben_ode_2002"]["payment_methods"]["gift_card_2002"]["balance"] = 9.95


def _addresses(db: DB) -> None:
    address = {
        "address1": "9 Pine Rd",
        "address2": "",
        "city": "Ogdenville",
        "country": "USA",
        "state": "OR",
        "zip": "30003",
    }
    db["orders"]["#W2000003"]["address"] = dict(address)
    db["users"]["ben_ode_2002"]["address"] = dict(address)


def _unchanged(db: DB) -> None:
    del db  # every write of the task is refused


EXPECTED: dict[str, Callable[[DB], None]] = {
    "cancel": _cancel,
    "modify_items_short_balance": _unchanged,
    "modify_items_last_variant": _last_variant,
    "exchange_round_tie": _round_tie,
    "return": _return,
    "payment": _payment,
    "addresses": _addresses,
    "refusals": _unchanged,
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


def test_refused_gold_writes_say_what_tau2_says_and_change_nothing(domain: CompiledDomain) -> None:
    env = Environment(domain)
    before = env.image()
    contents = [c for _, c in replay(env, _tasks()["refusals"])]
    assert contents == [
        {"Desk Lamp": "1000000002", "Mug": "1000000001"},
        "Error: Non-pending order cannot be cancelled",
        "Error: New item 2000000003 not found or available",
        "Transfer successful",
        "0.15",  # str(round(0.15000000000000213, 2)), as Python computes it
        "Error: Invalid characters in expression",
    ]
    short = replay(env, _tasks()["modify_items_short_balance"])
    assert short == [
        (
            "modify_pending_order_items",
            "Error: Insufficient gift card balance to pay for the new item",
        )
    ]
    assert env.image() == before


def test_reads_return_tau2_shaped_objects(domain: CompiledDomain, seed: DB) -> None:
    env = Environment(domain)
    (_, found), (_, order), _ = replay(env, _tasks()["cancel"])
    assert found == "ana_kim_1001"  # the email is matched case-insensitively
    assert order == seed["orders"]["#W1000001"]
    user = env.call("get_user_details", {"user_id": "ben_ode_2002"}).result
    assert user == seed["users"]["ben_ode_2002"]
    assert list(user["payment_methods"]["gift_card_2002"]) == ["source", "id", "balance"]
    product = env.call("get_product_details", {"product_id": "1000000001"}).result
    assert product == seed["products"]["1000000001"]
    assert env.call("get_item_details", {"item_id": "9"}).error.message == "Item not found"


def test_the_import_reads_descriptions_and_reports_what_it_leaves_out() -> None:
    imported = import_tau2(ROOT, "retail")
    assert imported.unsupported == {}
    assert imported.policy.startswith("# Retail agent policy")
    names = [p.name for p in imported.spec.procedures]
    assert len(names) == 16 and "modify_pending_order_items" in names
    writes = [p.name for p in imported.spec.procedures if p.access == "write"]
    assert len(writes) == 7


def test_import_tau2_writes_a_spec_that_loads_and_runs(tmp_path: Path, seed: DB) -> None:
    from click.testing import CliRunner

    from veritask._cli.main import cli
    from veritask.policy import load_spec

    out = tmp_path / "retail"
    result = CliRunner().invoke(
        cli, ["import-tau2", str(ROOT), "--domain", "retail", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "16 tools" in result.output and "left out" not in result.output
    assert (out / "policy.md").read_text() == (DATA / "policy.md").read_text()
    env = Environment(CompiledDomain.from_spec(load_spec(out / "spec.yaml")))
    assert tau2_db(env) == seed


@pytest.mark.parametrize(
    ("expression", "content"),
    [
        ("2 + 2", "4.0"),
        ("7 / 2", "3.5"),
        ("-(1.005 * 100) // 3", "-34.0"),
        ("2 ** 10", "1024.0"),
        ("0.125 + 0", "0.12"),  # Python's round
        ("1 / 0", "Error: Invalid expression"),  # τ²-bench says "division by zero"
        ("9 ** 9 ** 9", "Error: Invalid expression"),  # refused, not computed
        ("__import__('os')", "Error: Invalid characters in expression"),
    ],
)
def test_calculate_is_pythons_arithmetic_without_eval(
    domain: CompiledDomain, expression: str, content: str
) -> None:
    env = Environment(domain)
    assert replay(env, [{"name": "calculate", "arguments": {"expression": expression}}]) == [
        ("calculate", content)
    ]
