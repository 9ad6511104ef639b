"""Airline requests for the procedural generator (imported τ²-bench airline).

Each builder reads one user's records through the domain's read tools and assembles one call of
a write tool: a booking (flights found by ``search_direct_flight``, passengers from the user and
their saved passengers, a payment split between a certificate or gift card the user holds and a
credit card), a flight or cabin change, a cancellation, added bags, a corrected passenger, or a
compensation certificate for a cancelled flight. The request states, in the customer's words,
every value the call writes that the lookups do not show (route, date, flight number, cabin,
bags, insurance, the amounts of a split payment); ids of payment methods come from the lookups.

Flights and dates are picked with read-only SQL on the engine's connection (the candidate
choice, which is not part of the witness); everything the witness shows comes from the tools.
"""

from __future__ import annotations

import random
from typing import Any

from veritask.synth._procedural_base import Draft, Json, Reader, methods_of

CABINS = ("basic_economy", "economy", "business")
FREE_BAGS = {"regular": 0, "silver": 1, "gold": 2}
"""Free checked bags per passenger by membership, added to the cabin's (policy text)."""
CABIN_BAGS = {"basic_economy": 0, "economy": 1, "business": 2}
INSURANCE_FEE = 30
BAG_FEE = 50
CANCELLED_COMPENSATION = 100
"""Dollars per passenger for a flight the airline cancelled (policy text)."""


def _method_words(method: Json) -> str:
    source = method.get("source")
    if source == "credit_card":
        brand = str(method.get("brand", "credit")).capitalize()
        return f"{brand} card ending in {method.get('last_four')}"
    if source == "gift_card":
        return f"gift card with a balance of {_money(method.get('amount'))}"
    if source == "certificate":
        return f"travel certificate worth {_money(method.get('amount'))}"
    return str(source)


def _money(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _described(user: Json, source: str) -> list[tuple[str, Json]]:
    """The user's methods of ``source`` whose words tell them apart from the others."""
    found = [(k, m) for k, m in methods_of(user) if m.get("source") == source]
    words = [_method_words(m) for _, m in methods_of(user)]
    return [(k, m) for k, m in found if words.count(_method_words(m)) == 1]


def _open_flights(r: Reader, cabin: str, seats: int, route: tuple[str, str] | None) -> list[Any]:
    if cabin not in CABINS:
        raise ValueError(cabin)
    sql = (
        "SELECT flight_number, date, origin, destination FROM flight_dates "
        f"WHERE status = 'available' AND seats_{cabin} >= ?"
    )
    args: list[Any] = [seats]
    if route is not None:
        sql += " AND origin = ? AND destination = ?"
        args += list(route)
    sql += " ORDER BY flight_number, date"
    return r.env._conn.execute(sql, args).fetchall()


def _searched(r: Reader, row: Any) -> tuple[tuple[str, Json], Json] | None:
    """The search that shows flight ``row`` on its date, and the flight as it shows it; None
    unless its departure time tells it apart from the other results (the customer names a
    flight by its time: flight numbers are the airline's ids)."""
    number, date, origin, destination = row
    args = {"origin": origin, "destination": destination, "date": date}
    found = r.get("search_direct_flight", args)
    flights = [f for f in found if isinstance(f, dict)] if isinstance(found, list) else []
    times = [f.get("scheduled_departure_time_est") for f in flights]
    for flight in flights:
        if flight.get("flight_number") == number:
            if times.count(flight.get("scheduled_departure_time_est")) > 1:
                return None
            return ("search_direct_flight", args), flight
    return None


def _leaving(flight: Json, date: str) -> str:
    return f"the flight leaving at {flight.get('scheduled_departure_time_est')} on {date}"


def _traveller(user: Json) -> Json:
    name = user.get("name") or {}
    return {
        "first_name": name.get("first_name"),
        "last_name": name.get("last_name"),
        "dob": user.get("dob"),
    }


def _people(pax: list[Json]) -> str:
    others = [f"{p['first_name']} {p['last_name']}" for p in pax[1:]]
    return "me" if not others else "me and " + " and ".join(others)


def _split(user: Json, total: int, rng: random.Random) -> tuple[list[Json], str] | None:
    """A payment of ``total`` the user can make, and its words: one card, or a certificate or
    gift card first and a card for the rest (at most one certificate, one card)."""
    cards = _described(user, "credit_card")
    kind = rng.choice(["credit_card", "certificate", "gift_card"])
    first = _described(user, kind) if kind != "credit_card" else []
    if first:
        key, method = rng.choice(first)
        amount = min(int(float(method.get("amount") or 0)), total)
        if amount <= 0:
            return None
        pays = [{"payment_id": key, "amount": amount}]
        words = f"put {amount} on my {_method_words(method)}"
        if amount == total:
            return pays, words + " (it covers everything)"
        if not cards:
            return None
        card_key, card = rng.choice(cards)
        rest = total - amount
        pays.append({"payment_id": card_key, "amount": rest})
        return pays, f"{words} and the remaining {rest} on my {_method_words(card)}"
    if not cards:
        return None
    card_key, card = rng.choice(cards)
    return [{"payment_id": card_key, "amount": total}], (
        f"charge all {total} to my {_method_words(card)}"
    )


def _legs(r: Reader, cabin: str, seats: int, rng: random.Random) -> list[Any] | None:
    rows = _open_flights(r, cabin, seats, None)
    if not rows:
        return None
    out = [rng.choice(rows)]
    if rng.random() < 0.35:
        back = [
            x for x in _open_flights(r, cabin, seats, (out[0][3], out[0][2])) if x[1] > out[0][1]
        ]
        if back:
            out.append(rng.choice(back))
    return out


def air_book(r: Reader, user: Json, rng: random.Random) -> Draft | None:
    """A new reservation on direct flights, paid as the user says."""
    saved = [p for p in user.get("saved_passengers") or [] if isinstance(p, dict)]
    pax = [_traveller(user), *rng.sample(saved, rng.randint(0, min(2, len(saved))))]
    cabin = rng.choice(CABINS)
    legs = _legs(r, cabin, len(pax), rng)
    if legs is None:
        return None
    searches, flights = [], []
    for leg in legs:
        found = _searched(r, leg)
        if found is None:
            return None
        searches.append(found[0])
        flights.append(found[1])
    insurance = rng.choice(["yes", "no"])
    free = (FREE_BAGS.get(str(user.get("membership")), 0) + CABIN_BAGS[cabin]) * len(pax)
    bags = rng.randint(0, free + 1)
    paid_bags = max(0, bags - free)
    fare = sum(int(f["prices"][cabin]) for f in flights) * len(pax)
    total = fare + (INSURANCE_FEE * len(pax) if insurance == "yes" else 0) + BAG_FEE * paid_bags
    split = _split(user, total, rng)
    if split is None:
        return None
    pays, pay_words = split
    kind = "round_trip" if len(legs) == 2 else "one_way"
    origin, destination = legs[0][2], legs[0][3]
    trip = " and back on ".join(_leaving(f, x[1]) for f, x in zip(flights, legs, strict=True))
    args = {
        "user_id": user["user_id"],
        "origin": origin,
        "destination": destination,
        "flight_type": kind,
        "cabin": cabin,
        "flights": [{"flight_number": x[0], "date": x[1]} for x in legs],
        "passengers": pax,
        "payment_methods": pays,
        "total_baggages": bags,
        "nonfree_baggages": paid_bags,
        "insurance": insurance,
    }
    request = (
        f"I'd like to book a {kind.replace('_', '-')} trip (flight type {kind}) from {origin} to {destination} on {trip}, in {cabin} "
        f"cabin, for {_people(pax)}. We check {_bags(bags)} in total, {_paid(paid_bags)}; "
        f"and travel insurance: {insurance}. The total should be {total}; {pay_words}."
    )
    return Draft(
        [("get_user_details", {"user_id": user["user_id"]}), *searches],
        "book_reservation",
        args,
        f"Book a {kind.replace('_', '-')} trip from {origin} to {destination}.",
        request,
    )


def _reservations(r: Reader, user: Json) -> list[Json]:
    found = []
    for rid in user.get("reservations") or []:
        res = r.get("get_reservation_details", {"reservation_id": rid})
        if isinstance(res, dict) and res.get("status") != "cancelled":
            found.append(res)
    return found


def _upcoming(r: Reader, user: Json) -> list[Json]:
    """The user's reservations whose every flight is still open (nothing flown)."""
    return [
        x
        for x in _reservations(r, user)
        if x.get("flights") and all(_open(r, f) for f in x["flights"])
    ]


def _open(r: Reader, flight: Json) -> bool:
    sql = "SELECT status FROM flight_dates WHERE flight_number = ? AND date = ?"
    row = r.env._conn.execute(sql, [flight.get("flight_number"), flight.get("date")]).fetchone()
    return row is not None and row[0] == "available"


def _res_lookups(user: Json, res: Json) -> list[tuple[str, Json]]:
    return [
        ("get_user_details", {"user_id": user["user_id"]}),
        ("get_reservation_details", {"reservation_id": res["reservation_id"]}),
    ]


def _trip(res: Json) -> str:
    return f"{res.get('origin')} to {res.get('destination')}"


def _payer(user: Json, rng: random.Random) -> tuple[str, Json] | None:
    found = [*_described(user, "credit_card"), *_described(user, "gift_card")]
    return rng.choice(found) if found else None


def _between(flights: list[Json], i: int, date: str) -> bool:
    """Whether flight ``i`` may move to ``date`` keeping the trip in order."""
    after = all(str(f["date"]) <= date for f in flights[:i])
    return after and all(date <= str(f["date"]) for f in flights[i + 1 :])


def air_change(r: Reader, user: Json, rng: random.Random) -> Draft | None:
    """One flight of an upcoming reservation moved to another flight of the same route."""
    found = _upcoming(r, user)
    payer = _payer(user, rng)
    if not found or payer is None:
        return None
    res = rng.choice(found)
    flights = [{"flight_number": f["flight_number"], "date": f["date"]} for f in res["flights"]]
    i = rng.randrange(len(flights))
    old = res["flights"][i]
    route = (str(old["origin"]), str(old["destination"]))
    options = [
        x
        for x in _open_flights(r, res["cabin"], len(res.get("passengers") or []), route)
        if (x[0], x[1]) != (old["flight_number"], old["date"]) and _between(flights, i, x[1])
    ]
    if not options:
        return None
    new = rng.choice(options)
    search = _searched(r, new)
    if search is None:
        return None
    flights[i] = {"flight_number": new[0], "date": new[1]}
    rid, (key, method) = res["reservation_id"], payer
    keep = " and keep the other flights as they are" if len(flights) > 1 else ""
    return Draft(
        [*_res_lookups(user, res), search[0]],
        "update_reservation_flights",
        {"reservation_id": rid, "cabin": res["cabin"], "flights": flights, "payment_id": key},
        f"Move a flight of reservation {rid} to another flight of the same route.",
        f"On my reservation {rid}, please move my {route[0]} to {route[1]} flight on "
        f"{old['date']} to {_leaving(search[1], new[1])}, in the same cabin{keep}. Settle "
        f"any fare difference with my {_method_words(method)}.",
        [rid],
    )


def air_cabin(r: Reader, user: Json, rng: random.Random) -> Draft | None:
    """Every flight of an upcoming reservation in another cabin."""
    found = _upcoming(r, user)
    payer = _payer(user, rng)
    if not found or payer is None:
        return None
    res = rng.choice(found)
    cabin = rng.choice([c for c in CABINS if c != res.get("cabin")])
    flights = [{"flight_number": f["flight_number"], "date": f["date"]} for f in res["flights"]]
    rid, (key, method) = res["reservation_id"], payer
    return Draft(
        _res_lookups(user, res),
        "update_reservation_flights",
        {"reservation_id": rid, "cabin": cabin, "flights": flights, "payment_id": key},
        f"Change the cabin of reservation {rid}.",
        f"I'd like every flight of my reservation {rid} ({_trip(res)}) in {cabin} cabin "
        f"instead, same flights; settle the difference with my {_method_words(method)}.",
        [rid],
    )


def air_cancel(r: Reader, user: Json, rng: random.Random) -> Draft | None:
    """A reservation cancelled (the policy's guards may refuse it)."""
    found = _reservations(r, user)
    if not found:
        return None
    res = rng.choice(found)
    rid = res["reservation_id"]
    return Draft(
        _res_lookups(user, res),
        "cancel_reservation",
        {"reservation_id": rid},
        f"Cancel your reservation {rid}.",
        f"Please cancel my reservation {rid} from {_trip(res)}; my plans changed.",
        [rid],
    )


def air_bags(r: Reader, user: Json, rng: random.Random) -> Draft | None:
    """Bags added to a reservation; the paid ones are those above the free allowance."""
    found = _upcoming(r, user)
    payer = _payer(user, rng)
    if not found or payer is None:
        return None
    res = rng.choice(found)
    key, method = payer
    people = len(res.get("passengers") or [])
    free = (FREE_BAGS.get(str(user.get("membership")), 0) + CABIN_BAGS[res["cabin"]]) * people
    total = int(res.get("total_baggages") or 0) + rng.randint(1, 2)
    paid = max(0, total - free)
    rid = res["reservation_id"]
    args = {"reservation_id": rid, "total_baggages": total, "nonfree_baggages": paid}
    return Draft(
        _res_lookups(user, res),
        "update_reservation_baggages",
        {**args, "payment_id": key},
        f"Add checked bags to reservation {rid}.",
        f"On my reservation {rid} I want {_bags(total)} in total; {_paid(paid)}. Charge any "
        f"fee to my {_method_words(method)}.",
        [rid],
    )


def _bags(n: int) -> str:
    return f"{n} checked bag" + ("" if n == 1 else "s")


def _paid(n: int) -> str:
    if n == 0:
        return "0 of them paid, they are all within our free allowance"
    return f"{n} of them above our free allowance and paid"


def air_passengers(r: Reader, user: Json, rng: random.Random) -> Draft | None:
    """A passenger's first name corrected; the others kept."""
    found = [x for x in _upcoming(r, user) if x.get("passengers")]
    if not found:
        return None
    res = rng.choice(found)
    passengers = [dict(p) for p in res["passengers"]]
    i = rng.randrange(len(passengers))
    old = passengers[i]
    new_first = rng.choice(["Jordan", "Taylor", "Morgan", "Casey", "Riley"])
    if new_first == old.get("first_name"):
        return None
    passengers[i] = {**old, "first_name": new_first}
    rid = res["reservation_id"]
    return Draft(
        _res_lookups(user, res),
        "update_reservation_passengers",
        {"reservation_id": rid, "passengers": passengers},
        f"Correct a passenger's first name on reservation {rid}.",
        f"On my reservation {rid}, the passenger {old.get('first_name')} "
        f"{old.get('last_name')} (born {old.get('dob')}) should be {new_first} "
        f"{old.get('last_name')}; keep everyone else as they are.",
        [rid],
    )


def _leg(res: Json, flight: Json) -> str:
    for f in res.get("flights") or []:
        if f.get("flight_number") == flight["flight_number"] and f.get("date") == flight["date"]:
            return f"{f.get('origin')} to {f.get('destination')}"
    return _trip(res)


def air_compensate(r: Reader, user: Json, rng: random.Random) -> Draft | None:
    """A certificate for a flight the airline cancelled: 100 per passenger of the reservation
    (the policy's guards refuse users it does not cover)."""
    hit: list[tuple[Json, Json]] = []
    for res in _reservations(r, user):
        for flight in res.get("flights") or []:
            args = {"flight_number": flight["flight_number"], "date": flight["date"]}
            if r.get("get_flight_status", args) == "cancelled":
                hit.append((res, args))
    if not hit:
        return None
    res, flight = rng.choice(hit)
    people = len(res.get("passengers") or [])
    amount = CANCELLED_COMPENSATION * people
    rid = res["reservation_id"]
    return Draft(
        [*_res_lookups(user, res), ("get_flight_status", flight)],
        "send_certificate",
        {"user_id": user["user_id"], "amount": amount},
        f"Get compensation for the cancelled flight of reservation {rid}.",
        f"The airline cancelled my {_leg(res, flight)} flight on {flight['date']} "
        f"(reservation {rid}, {people} passenger{'s' if people > 1 else ''}). I'd like the "
        f"compensation of {CANCELLED_COMPENSATION} per passenger, {amount} in all, as a "
        "certificate.",
        [rid],
    )


AIR_BUILDERS = {
    "book_reservation": [air_book],
    "update_reservation_flights": [air_change, air_cabin],
    "cancel_reservation": [air_cancel],
    "update_reservation_baggages": [air_bags],
    "update_reservation_passengers": [air_passengers],
    "send_certificate": [air_compensate],
}
"""Per airline procedure, how to build a call for it from one user's records."""
AIR_REFUSERS = {
    "cancel_reservation": [air_cancel],
    "send_certificate": [air_compensate],
    "update_reservation_flights": [air_change],
}
"""Requests the policy's guards often refuse (ineligible cancellations and compensation,
basic economy flight changes)."""
