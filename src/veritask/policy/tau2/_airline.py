"""τ²-bench airline's nested database as relational tables, and back.

The same mapping as retail (docs/design/0044-tau2-mapping.md): each dict of objects is a table
keyed by its dict key, each list or nested dict of objects a child table with its position in
``pos``. Three airline specifics:

- A flight's per-date status (``dates``) is one ``flight_dates`` row per date with the union of
  the status variants' fields (null where a variant lacks one); seats and prices per cabin are
  columns. The flight's route and schedule are copied onto each row (flights never change), so
  a search is one equality read.
- τ²-bench removes a certificate from a user when it pays a booking and replaces a reservation's
  flight list when it is changed. The engine has no delete, so those rows are *retired*:
  ``retired = 1`` hides them from every tool and from the export, positions keep the order.
- Amounts keep τ²-bench's types: payments and prices are integers, gift-card and certificate
  balances floats.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

Rows = dict[str, list[dict[str, Any]]]
_ADDRESS = ("address1", "address2", "city", "country", "state", "zip")
CABINS = ("business", "economy", "basic_economy")
_TIMES = (
    "actual_departure_time_est",
    "actual_arrival_time_est",
    "estimated_departure_time_est",
    "estimated_arrival_time_est",
)
_T, _I, _R = "TEXT", "INTEGER", "REAL"
_PERSON = [("first_name", _T), ("last_name", _T), ("dob", _T)]

TABLES: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "flights": (
        "reference",
        "read-only",
        [
            ("flight_number", _T),
            ("pos", _I),
            ("origin", _T),
            ("destination", _T),
            ("scheduled_departure_time_est", _T),
            ("scheduled_arrival_time_est", _T),
        ],
    ),
    "flight_dates": (
        "entity",
        "read-write",
        [
            ("flight_number", _T),
            ("pos", _I),
            ("date", _T),
            ("status", _T),
            *((f"seats_{c}", _I) for c in CABINS),
            *((f"price_{c}", _I) for c in CABINS),
            *((t, _T) for t in _TIMES),
            ("cabin_order", _T),
            ("flight_pos", _I),
            ("origin", _T),
            ("destination", _T),
            ("scheduled_departure_time_est", _T),
            ("scheduled_arrival_time_est", _T),
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
            ("dob", _T),
            ("membership", _T),
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
            ("amount", _R),
            ("retired", _I),
        ],
    ),
    "saved_passengers": ("entity", "read-write", [("user_id", _T), ("pos", _I), *_PERSON]),
    "user_reservations": (
        "entity",
        "read-write",
        [("user_id", _T), ("pos", _I), ("reservation_id", _T)],
    ),
    "reservations": (
        "transaction",
        "read-write",
        [
            ("reservation_id", _T),
            ("pos", _I),
            ("user_id", _T),
            ("origin", _T),
            ("destination", _T),
            ("flight_type", _T),
            ("cabin", _T),
            ("created_at", _T),
            ("total_baggages", _I),
            ("nonfree_baggages", _I),
            ("insurance", _T),
            ("status", _T),
        ],
    ),
    "reservation_flights": (
        "transaction",
        "read-write",
        [
            ("reservation_id", _T),
            ("pos", _I),
            ("flight_number", _T),
            ("origin", _T),
            ("destination", _T),
            ("date", _T),
            ("price", _I),
            ("retired", _I),
        ],
    ),
    "passengers": ("transaction", "read-write", [("reservation_id", _T), ("pos", _I), *_PERSON]),
    "payments": (
        "transaction",
        "read-write",
        [("reservation_id", _T), ("pos", _I), ("payment_id", _T), ("amount", _I)],
    ),
}
"""Per table: tier, access and (column, SQL type) in order; the first column of flights,
users and reservations is the dict key (primary key)."""
KEYED = frozenset({"flights", "users", "reservations"})
REFERENCES = {
    ("flight_dates", "flight_number"): "flights.flight_number",
    ("payment_methods", "user_id"): "users.user_id",
    ("saved_passengers", "user_id"): "users.user_id",
    ("user_reservations", "user_id"): "users.user_id",
    ("reservation_flights", "reservation_id"): "reservations.reservation_id",
    ("passengers", "reservation_id"): "reservations.reservation_id",
    ("payments", "reservation_id"): "reservations.reservation_id",
}
"""Child rows name their parent (a foreign key, so also an index on the column reads use)."""
NEW_RESERVATION_POS = 1_000_000
"""Positions of the reservations a tool creates (after every imported one, in creation order)."""


def _person(p: Mapping[str, Any]) -> dict[str, Any]:
    return {"first_name": p["first_name"], "last_name": p["last_name"], "dob": p["dob"]}


def _date_row(flight: Mapping[str, Any], fpos: int, pos: int, date: str, st: Any) -> dict[str, Any]:
    seats, prices = st.get("available_seats") or {}, st.get("prices") or {}
    return {
        "flight_number": flight["flight_number"],
        "pos": pos,
        "date": date,
        "status": st["status"],
        **{f"seats_{c}": seats.get(c) for c in CABINS},
        **{f"price_{c}": prices.get(c) for c in CABINS},
        **{t: st.get(t) for t in _TIMES},
        "cabin_order": ",".join(seats) if seats else None,
        "flight_pos": fpos,
        **{
            k: flight[k]
            for k in (
                "origin",
                "destination",
                "scheduled_departure_time_est",
                "scheduled_arrival_time_est",
            )
        },
    }


def flatten_airline(db: Mapping[str, Any]) -> Rows:
    """The seed rows of every table for a τ²-bench airline ``db.json`` (parsed)."""
    rows: Rows = {name: [] for name in TABLES}
    for fpos, f in enumerate(db["flights"].values()):
        rows["flights"].append(
            {
                "flight_number": f["flight_number"],
                "pos": fpos,
                "origin": f["origin"],
                "destination": f["destination"],
                "scheduled_departure_time_est": f["scheduled_departure_time_est"],
                "scheduled_arrival_time_est": f["scheduled_arrival_time_est"],
            }
        )
        for dpos, (date, st) in enumerate(f["dates"].items()):
            rows["flight_dates"].append(_date_row(f, fpos, dpos, date, st))
    for pos, user in enumerate(db["users"].values()):
        _flatten_user(rows, pos, user)
    for pos, res in enumerate(db["reservations"].values()):
        _flatten_reservation(rows, pos, res)
    return rows


def _flatten_user(rows: Rows, pos: int, user: Mapping[str, Any]) -> None:
    uid = user["user_id"]
    rows["users"].append(
        {
            "user_id": uid,
            "pos": pos,
            "first_name": user["name"]["first_name"],
            "last_name": user["name"]["last_name"],
            **{a: user["address"].get(a) for a in _ADDRESS},
            "email": user["email"],
            "dob": user["dob"],
            "membership": user["membership"],
        }
    )
    for ppos, pm in enumerate(user["payment_methods"].values()):
        amount = pm.get("amount")
        rows["payment_methods"].append(
            {
                "user_id": uid,
                "pos": ppos,
                "id": pm["id"],
                "source": pm["source"],
                "brand": pm.get("brand"),
                "last_four": pm.get("last_four"),
                "amount": None if amount is None else float(amount),
                "retired": 0,
            }
        )
    for spos, p in enumerate(user["saved_passengers"]):
        rows["saved_passengers"].append({"user_id": uid, "pos": spos, **_person(p)})
    for rpos, rid in enumerate(user["reservations"]):
        rows["user_reservations"].append({"user_id": uid, "pos": rpos, "reservation_id": rid})


def _flatten_reservation(rows: Rows, pos: int, res: Mapping[str, Any]) -> None:
    rid = res["reservation_id"]
    keys = ("user_id", "origin", "destination", "flight_type", "cabin", "created_at")
    rows["reservations"].append(
        {
            "reservation_id": rid,
            "pos": pos,
            **{k: res[k] for k in keys},
            "total_baggages": int(res["total_baggages"]),
            "nonfree_baggages": int(res["nonfree_baggages"]),
            "insurance": res["insurance"],
            "status": res.get("status"),
        }
    )
    for fpos, f in enumerate(res["flights"]):
        rows["reservation_flights"].append(
            {
                "reservation_id": rid,
                "pos": fpos,
                "flight_number": f["flight_number"],
                "origin": f["origin"],
                "destination": f["destination"],
                "date": f["date"],
                "price": int(f["price"]),
                "retired": 0,
            }
        )
    for ppos, p in enumerate(res["passengers"]):
        rows["passengers"].append({"reservation_id": rid, "pos": ppos, **_person(p)})
    for ppos, p in enumerate(res["payment_history"]):
        rows["payments"].append(
            {
                "reservation_id": rid,
                "pos": ppos,
                "payment_id": p["payment_id"],
                "amount": int(p["amount"]),
            }
        )


def _by(rows: Iterable[dict[str, Any]], key: str) -> dict[Any, list[dict[str, Any]]]:
    out: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: r["pos"]):
        if not row.get("retired"):
            out[row[key]].append(row)
    return out


def flight_status(d: Mapping[str, Any]) -> dict[str, Any]:
    """One flight date's status object in τ²-bench's shape (the fields of its variant)."""
    out: dict[str, Any] = {"status": d["status"]}
    if d["status"] == "available":
        order = str(d["cabin_order"] or ",".join(CABINS)).split(",")
        out["available_seats"] = {c: d[f"seats_{c}"] for c in order}
        out["prices"] = {c: d[f"price_{c}"] for c in order}
    out.update({t: d[t] for t in _TIMES if d[t] is not None})
    return out


def payment_method(pm: Mapping[str, Any]) -> dict[str, Any]:
    """One payment method in τ²-bench's shape (the fields of its ``source``)."""
    out: dict[str, Any] = {"source": pm["source"], "id": pm["id"]}
    if pm["source"] == "credit_card":
        out.update(brand=pm["brand"], last_four=pm["last_four"])
    else:
        out["amount"] = pm["amount"]
    return out


def export_airline(rows: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The τ²-bench ``FlightDB.model_dump()`` of a state given as rows per table."""
    dates, pms = _by(rows["flight_dates"], "flight_number"), _by(rows["payment_methods"], "user_id")
    saved, ures = (
        _by(rows["saved_passengers"], "user_id"),
        _by(rows["user_reservations"], "user_id"),
    )
    rfs, pax = (
        _by(rows["reservation_flights"], "reservation_id"),
        _by(rows["passengers"], "reservation_id"),
    )
    pays = _by(rows["payments"], "reservation_id")
    flights = {
        f["flight_number"]: {
            "flight_number": f["flight_number"],
            "origin": f["origin"],
            "destination": f["destination"],
            "scheduled_departure_time_est": f["scheduled_departure_time_est"],
            "scheduled_arrival_time_est": f["scheduled_arrival_time_est"],
            "dates": {d["date"]: flight_status(d) for d in dates[f["flight_number"]]},
        }
        for f in sorted(rows["flights"], key=lambda r: r["pos"])
    }
    users = {
        u["user_id"]: {
            "user_id": u["user_id"],
            "name": {"first_name": u["first_name"], "last_name": u["last_name"]},
            "address": {a: u[a] for a in _ADDRESS},
            "email": u["email"],
            "dob": u["dob"],
            "payment_methods": {pm["id"]: payment_method(pm) for pm in pms[u["user_id"]]},
            "saved_passengers": [_person(p) for p in saved[u["user_id"]]],
            "membership": u["membership"],
            "reservations": [r["reservation_id"] for r in ures[u["user_id"]]],
        }
        for u in sorted(rows["users"], key=lambda r: r["pos"])
    }
    reservations = {
        r["reservation_id"]: reservation(
            r, rfs[r["reservation_id"]], pax[r["reservation_id"]], pays[r["reservation_id"]]
        )
        for r in sorted(rows["reservations"], key=lambda r: r["pos"])
    }
    return {"flights": flights, "users": users, "reservations": reservations}


def reservation(
    r: Mapping[str, Any],
    flights: list[dict[str, Any]],
    passengers: list[dict[str, Any]],
    payments: list[dict[str, Any]],
) -> dict[str, Any]:
    """One reservation in τ²-bench's shape from its row and its (live) child rows."""
    return {
        "reservation_id": r["reservation_id"],
        "user_id": r["user_id"],
        "origin": r["origin"],
        "destination": r["destination"],
        "flight_type": r["flight_type"],
        "cabin": r["cabin"],
        "flights": [
            {
                "flight_number": f["flight_number"],
                "origin": f["origin"],
                "destination": f["destination"],
                "date": f["date"],
                "price": f["price"],
            }
            for f in flights
        ],
        "passengers": [_person(p) for p in passengers],
        "payment_history": [
            {"payment_id": p["payment_id"], "amount": p["amount"]} for p in payments
        ],
        "created_at": r["created_at"],
        "total_baggages": r["total_baggages"],
        "nonfree_baggages": r["nonfree_baggages"],
        "insurance": r["insurance"],
        "status": r["status"],
    }
