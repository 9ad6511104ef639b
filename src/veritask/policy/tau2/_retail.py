"""τ²-bench retail's nested database as relational tables, and back.

Each dict of objects becomes a table keyed by the dict key, each list of objects a child table
with the list position in ``pos`` (so lists come back in order), each list of strings and each
``options`` mapping a JSON text column (key order kept). ``export_retail`` rebuilds the exact
shape τ²-bench's pydantic models dump, optional fields included as null, floats as floats.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

Rows = dict[str, list[dict[str, Any]]]
_ADDRESS = ("address1", "address2", "city", "country", "state", "zip")
_T, _I, _R = "TEXT", "INTEGER", "REAL"

TABLES: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "products": ("reference", "read-only", [("product_id", _T), ("pos", _I), ("name", _T)]),
    "variants": (
        "reference",
        "read-only",
        [
            ("product_id", _T),
            ("pos", _I),
            ("item_id", _T),
            ("options", _T),
            ("available", _I),
            ("price", _R),
        ],
    ),
    "users": (
        "entity",
        "read-write",
        [
            ("user_id", _T),
            ("pos", _I),
            ("first_name", _T),
            ("last_name", _T),
            *((a, _T) for a in _ADDRESS),
            ("email", _T),
            ("first_name_lower", _T),
            ("last_name_lower", _T),
            ("email_lower", _T),
        ],
    ),
    "payment_methods": (
        "entity",
        "read-write",
        [
            ("user_id", _T),
            ("pos", _I),
            ("id", _T),
            ("source", _T),
            ("brand", _T),
            ("last_four", _T),
            ("balance", _R),
        ],
    ),
    "user_orders": ("entity", "read-write", [("user_id", _T), ("pos", _I), ("order_id", _T)]),
    "orders": (
        "transaction",
        "read-write",
        [
            ("order_id", _T),
            ("pos", _I),
            ("user_id", _T),
            *((a, _T) for a in _ADDRESS),
            ("status", _T),
            ("cancel_reason", _T),
            ("exchange_items", _T),
            ("exchange_new_items", _T),
            ("exchange_payment_method_id", _T),
            ("exchange_price_difference", _R),
            ("return_items", _T),
            ("return_payment_method_id", _T),
        ],
    ),
    "order_items": (
        "transaction",
        "read-write",
        [
            ("order_id", _T),
            ("pos", _I),
            ("name", _T),
            ("product_id", _T),
            ("item_id", _T),
            ("price", _R),
            ("options", _T),
        ],
    ),
    "fulfillments": (
        "transaction",
        "read-write",
        [("order_id", _T), ("pos", _I), ("tracking_id", _T), ("item_ids", _T)],
    ),
    "payments": (
        "transaction",
        "read-write",
        [
            ("order_id", _T),
            ("pos", _I),
            ("transaction_type", _T),
            ("amount", _R),
            ("payment_method_id", _T),
        ],
    ),
}
"""Per table: tier, access and (column, SQL type) in order; the first column of products,
users and orders is the dict key (primary key)."""
KEYED = frozenset({"products", "users", "orders"})
REFERENCES = {
    ("variants", "product_id"): "products.product_id",
    ("payment_methods", "user_id"): "users.user_id",
    ("user_orders", "user_id"): "users.user_id",
    ("order_items", "order_id"): "orders.order_id",
    ("fulfillments", "order_id"): "orders.order_id",
    ("payments", "order_id"): "orders.order_id",
}
"""Child rows name their parent (a foreign key, so also an index on the column reads use)."""
_JSON_LISTS = ("exchange_items", "exchange_new_items", "return_items")


def _text(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def flatten_retail(db: Mapping[str, Any]) -> Rows:
    """The seed rows of every table for a τ²-bench retail ``db.json`` (parsed)."""
    rows: Rows = {name: [] for name in TABLES}
    for pos, product in enumerate(db["products"].values()):
        rows["products"].append(
            {"product_id": product["product_id"], "pos": pos, "name": product["name"]}
        )
        for vpos, v in enumerate(product["variants"].values()):
            rows["variants"].append(
                {
                    "product_id": product["product_id"],
                    "pos": vpos,
                    "item_id": v["item_id"],
                    "options": _text(v["options"]),
                    "available": int(bool(v["available"])),
                    "price": float(v["price"]),
                }
            )
    for pos, user in enumerate(db["users"].values()):
        _flatten_user(rows, pos, user)
    for pos, order in enumerate(db["orders"].values()):
        _flatten_order(rows, pos, order)
    return rows


def _flatten_user(rows: Rows, pos: int, user: Mapping[str, Any]) -> None:
    name, uid = user["name"], user["user_id"]
    rows["users"].append(
        {
            "user_id": uid,
            "pos": pos,
            "first_name": name["first_name"],
            "last_name": name["last_name"],
            **{a: user["address"][a] for a in _ADDRESS},
            "email": user["email"],
            "first_name_lower": name["first_name"].lower(),
            "last_name_lower": name["last_name"].lower(),
            "email_lower": user["email"].lower(),
        }
    )
    for ppos, pm in enumerate(user["payment_methods"].values()):
        rows["payment_methods"].append(
            {
                "user_id": uid,
                "pos": ppos,
                "id": pm["id"],
                "source": pm["source"],
                "brand": pm.get("brand"),
                "last_four": pm.get("last_four"),
                "balance": _float(pm.get("balance")),
            }
        )
    for opos, oid in enumerate(user["orders"]):
        rows["user_orders"].append({"user_id": uid, "pos": opos, "order_id": oid})


def _flatten_order(rows: Rows, pos: int, order: Mapping[str, Any]) -> None:
    oid = order["order_id"]
    rows["orders"].append(
        {
            "order_id": oid,
            "pos": pos,
            "user_id": order["user_id"],
            **{a: order["address"][a] for a in _ADDRESS},
            "status": order["status"],
            "cancel_reason": order.get("cancel_reason"),
            **{k: _text(order.get(k)) for k in _JSON_LISTS},
            "exchange_payment_method_id": order.get("exchange_payment_method_id"),
            "exchange_price_difference": _float(order.get("exchange_price_difference")),
            "return_payment_method_id": order.get("return_payment_method_id"),
        }
    )
    for ipos, item in enumerate(order["items"]):
        rows["order_items"].append(
            {
                "order_id": oid,
                "pos": ipos,
                "name": item["name"],
                "product_id": item["product_id"],
                "item_id": item["item_id"],
                "price": float(item["price"]),
                "options": _text(item["options"]),
            }
        )
    for fpos, f in enumerate(order["fulfillments"]):
        rows["fulfillments"].append(
            {
                "order_id": oid,
                "pos": fpos,
                "tracking_id": _text(f["tracking_id"]),
                "item_ids": _text(f["item_ids"]),
            }
        )
    for ppos, p in enumerate(order["payment_history"]):
        rows["payments"].append(
            {
                "order_id": oid,
                "pos": ppos,
                "transaction_type": p["transaction_type"],
                "amount": float(p["amount"]),
                "payment_method_id": p["payment_method_id"],
            }
        )


def _by(rows: Iterable[dict[str, Any]], key: str) -> dict[Any, list[dict[str, Any]]]:
    out: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: r["pos"]):
        out[row[key]].append(row)
    return out


def _load(text: Any) -> Any:
    return None if text is None else json.loads(text)


def payment_method(pm: Mapping[str, Any]) -> dict[str, Any]:
    """One payment method in τ²-bench's shape (the fields of its ``source``)."""
    out: dict[str, Any] = {"source": pm["source"], "id": pm["id"]}
    if pm["source"] == "credit_card":
        out.update(brand=pm["brand"], last_four=pm["last_four"])
    elif pm["source"] == "gift_card":
        out["balance"] = pm["balance"]
    return out


def export_retail(rows: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The τ²-bench ``RetailDB.model_dump()`` of a state given as rows per table."""
    variants, pms = _by(rows["variants"], "product_id"), _by(rows["payment_methods"], "user_id")
    user_orders = _by(rows["user_orders"], "user_id")
    items, fuls = _by(rows["order_items"], "order_id"), _by(rows["fulfillments"], "order_id")
    pays = _by(rows["payments"], "order_id")
    products = {
        p["product_id"]: {
            "name": p["name"],
            "product_id": p["product_id"],
            "variants": {
                v["item_id"]: {
                    "item_id": v["item_id"],
                    "options": _load(v["options"]),
                    "available": bool(v["available"]),
                    "price": v["price"],
                }
                for v in variants[p["product_id"]]
            },
        }
        for p in sorted(rows["products"], key=lambda r: r["pos"])
    }
    users = {
        u["user_id"]: {
            "user_id": u["user_id"],
            "name": {"first_name": u["first_name"], "last_name": u["last_name"]},
            "address": {a: u[a] for a in _ADDRESS},
            "email": u["email"],
            "payment_methods": {pm["id"]: payment_method(pm) for pm in pms[u["user_id"]]},
            "orders": [o["order_id"] for o in user_orders[u["user_id"]]],
        }
        for u in sorted(rows["users"], key=lambda r: r["pos"])
    }
    orders = {
        o["order_id"]: _order(o, items[o["order_id"]], fuls[o["order_id"]], pays[o["order_id"]])
        for o in sorted(rows["orders"], key=lambda r: r["pos"])
    }
    return {"products": products, "users": users, "orders": orders}


def _order(
    o: Mapping[str, Any],
    items: list[dict[str, Any]],
    fuls: list[dict[str, Any]],
    pays: list[dict[str, Any]],
) -> dict[str, Any]:
    return {
        "order_id": o["order_id"],
        "user_id": o["user_id"],
        "address": {a: o[a] for a in _ADDRESS},
        "items": [
            {
                "name": i["name"],
                "product_id": i["product_id"],
                "item_id": i["item_id"],
                "price": i["price"],
                "options": _load(i["options"]),
            }
            for i in items
        ],
        "status": o["status"],
        "fulfillments": [
            {"tracking_id": _load(f["tracking_id"]), "item_ids": _load(f["item_ids"])} for f in fuls
        ],
        "payment_history": [
            {
                "transaction_type": p["transaction_type"],
                "amount": p["amount"],
                "payment_method_id": p["payment_method_id"],
            }
            for p in pays
        ],
        "cancel_reason": o["cancel_reason"],
        "exchange_items": _load(o["exchange_items"]),
        "exchange_new_items": _load(o["exchange_new_items"]),
        "exchange_payment_method_id": o["exchange_payment_method_id"],
        "exchange_price_difference": o["exchange_price_difference"],
        "return_items": _load(o["return_items"]),
        "return_payment_method_id": o["return_payment_method_id"],
    }
