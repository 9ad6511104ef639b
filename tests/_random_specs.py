"""Random valid domain specs nobody wrote by hand, for properties over specs.

``random_spec_data(seed)`` builds a booking-shaped domain whose every name, size, limit and rule set
is drawn from the seed: a table of people (the actor), a catalogue, a table of bookings that
point at both, optionally a second table of people (staff) that bookings may name, and rules of
every category (prerequisite, quota, policy, authority, irreversibility, integrity, a time
window and a calculation), each with the executable examples ``validate --examples`` runs (a
violating call and a passing one, from the seed state). Effects keep a per-person counter that
the quota rule guards. In some specs there is a hand-off table (an ``escalation`` block whose
reason the agent works out) and a user-side app table (``user_tools``: a switch only the user
can flip, guarded by a rule); both are drawn from a second stream of the seed, so every other
draw is the same with or without them.

It is a strategy of values, not of shapes the synthesizer was tuned on: identifiers come from
word pools, limits and sizes vary, and each rule is in or out independently.
"""

from __future__ import annotations

import random
from typing import Any

import yaml
from tests._random_sides import APPS, HANDOFFS, _Sides, _singular, id_column, person_column

PEOPLE = ["members", "clients", "patrons", "tenants", "riders", "guests", "owners"]
CATALOGUES = ["rooms", "courts", "tools", "kayaks", "studios", "lockers", "desks"]
BOOKINGS = ["bookings", "reservations", "rentals", "holds", "slots", "visits"]
STAFF = ["staff", "attendants", "clerks", "stewards"]
KINDS = ["basic", "standard", "deluxe", "outdoor", "indoor", "premium", "compact"]
FIRST = ["Ana", "Ben", "Chloe", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jin", "Kai", "Lea"]
LAST = ["Ruiz", "Okafor", "Park", "Singh", "Moreau", "Berg", "Costa", "Ito", "Novak", "Reyes"]
THINGS = ["Harbor", "Cedar", "Summit", "Willow", "Granite", "Maple", "Beacon", "Juniper"]

RULES = ("active", "quota", "qty", "gold", "final", "end_step", "window", "charge", "locked")
STAFF_RULES = ("handler",)
"""Rules only a spec with staff has: the staff member a booking must name (agent-decided)."""


class _Spec(_Sides):
    """One random spec under construction."""

    def __init__(self, seed: int) -> None:
        self.item_of: dict[str, dict[str, Any]] = {}
        self.rng = random.Random(seed)
        rng = self.rng
        self.seed = seed
        self.p, self.r, self.t = rng.choice(PEOPLE), rng.choice(CATALOGUES), rng.choice(BOOKINGS)
        self.staff = rng.choice(STAFF) if rng.random() < 0.4 else None
        self.pid, self.rid = f"{_singular(self.p)}_id", f"{_singular(self.r)}_id"
        self.quota = rng.randint(2, 4)
        self.max_qty = rng.randint(3, 9)
        self.window = rng.randint(1, 5)
        self.kinds = rng.sample(KINDS, rng.randint(2, 4))
        self.rules = [r for r in RULES if rng.random() < 0.7] or [rng.choice(RULES)]
        if self.staff and rng.random() < 0.75:
            self.rules += STAFF_RULES
        self.seed_rows: dict[str, list[dict[str, Any]]] = {}
        # drawn apart so that adding hand-offs leaves every other draw of the seed as it was
        side = random.Random(f"{seed}-handoffs")
        self.handoffs = side.choice(HANDOFFS) if side.random() < 0.4 else None
        self.apps = side.choice(APPS) if side.random() < 0.4 else None

    # -- seed ----------------------------------------------------------------------------

    def people(self) -> list[dict[str, Any]]:
        names = self.rng.sample([f"{f} {last}" for f in FIRST for last in LAST], 6)
        quota = self.quota - 1 if "quota" in self.rules else 1
        rows = [
            {"id": "p_basic", "name": names[0], "active": 1, "level": "BASIC", "open_count": 1},
            {"id": "p_edge", "name": names[1], "active": 1, "level": "BASIC", "open_count": quota},
            {"id": "p_gone", "name": names[2], "active": 0, "level": "BASIC", "open_count": 0},
            {"id": "p_gold", "name": names[3], "active": 1, "level": "GOLD", "open_count": 0},
        ]
        for i, name in enumerate(names[4 : 4 + self.rng.randint(0, 2)]):
            level = self.rng.choice(["BASIC", "GOLD"])
            rows.append(
                {"id": f"p_x{i}", "name": name, "active": 1, "level": level, "open_count": 0}
            )
        return rows

    def catalogue(self) -> list[dict[str, Any]]:
        titles = self.rng.sample(THINGS, len(self.kinds) + 1)
        rows = []
        for i, kind in enumerate([*self.kinds, self.kinds[0]]):
            price = self.rng.randint(2, 30) * 5
            rows.append(
                {
                    "id": f"r_{i}",
                    "title": f"{titles[i]} {kind.title()}",
                    "price": price,
                    "kind": kind,
                }
            )
        return rows

    def bookings(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """p_basic: one OPEN booking; p_edge: its count of OPEN ones; one DONE booking."""
        rows: list[dict[str, Any]] = []
        edge_open = self.quota - 1 if "quota" in self.rules else 1
        owners = ["p_basic"] + ["p_edge"] * edge_open
        for i, owner in enumerate(owners, 1):
            rows.append(self._booking(i, owner, items[(i - 1) % len(items)]["id"], "OPEN", None))
        done = self._booking(len(rows) + 1, "p_gold", items[0]["id"], "DONE", 4)
        done["charge"] = done["qty"] * items[0]["price"]
        rows.append(done)
        return rows

    def _booking(
        self, i: int, owner: str, item: str, status: str, end: int | None
    ) -> dict[str, Any]:
        row = {
            "id": i,
            self.pid: owner,
            self.rid: item,
            "qty": self.rng.randint(1, min(3, self.max_qty)),
            "start_step": self.rng.randint(12, 30),
            "status": status,
            "end_step": end,
            "charge": None,
        }
        if self.staff:
            row["handled_by"] = None
        return row

    def staff_rows(self) -> list[dict[str, Any]]:
        """One staff member per kind of item (its desk), and a trainee with no desk."""
        rows: list[dict[str, Any]] = [
            {"id": f"s_{i}", "name": f"{FIRST[i]} {LAST[-1 - i]}", "desk": kind}
            for i, kind in enumerate(self.kinds)
        ]
        rows.append({"id": "s_t", "name": f"{FIRST[-1]} {LAST[0]}", "desk": None})
        return rows

    def handler(self, item: dict[str, Any]) -> str:
        """The staff member whose desk is the item's kind."""
        return f"s_{self.kinds.index(item['kind'])}"

    # -- tables --------------------------------------------------------------------------

    def tables(self) -> list[dict[str, Any]]:
        t: list[dict[str, Any]] = [
            {
                "name": self.p,
                "tier": "entity",
                "access": "read-only",
                "description": f"People who book {self.r}.",
                "columns": [
                    {"name": "id", "type": "TEXT", "primary_key": True, "description": "Id"},
                    {"name": "name", "type": "TEXT", "not_null": True, "description": "Full name"},
                    {
                        "name": "active",
                        "type": "INTEGER",
                        "not_null": True,
                        "default": 1,
                        "enum": [0, 1],
                        "description": "1 while the account is valid",
                    },
                    {
                        "name": "level",
                        "type": "TEXT",
                        "not_null": True,
                        "default": "BASIC",
                        "enum": ["BASIC", "GOLD"],
                        "description": "Membership level",
                    },
                    {
                        "name": "open_count",
                        "type": "INTEGER",
                        "not_null": True,
                        "default": 0,
                        "computed": True,
                        "description": f"Open {self.t} (system-maintained)",
                    },
                ],
            },
            {
                "name": self.r,
                "tier": "reference",
                "access": "read-only",
                "description": "The catalogue.",
                "columns": [
                    {"name": "id", "type": "TEXT", "primary_key": True, "description": "Id"},
                    {"name": "title", "type": "TEXT", "not_null": True, "description": "Title"},
                    {
                        "name": "price",
                        "type": "INTEGER",
                        "not_null": True,
                        "description": "Price per unit",
                    },
                    {
                        "name": "kind",
                        "type": "TEXT",
                        "not_null": True,
                        "enum": self.kinds,
                        "description": "Kind",
                    },
                ],
            },
        ]
        if self.staff:
            t.append(
                {
                    "name": self.staff,
                    "tier": "entity",
                    "access": "read-only",
                    "description": "Staff who may handle a booking.",
                    "columns": [
                        {"name": "id", "type": "TEXT", "primary_key": True, "description": "Id"},
                        {
                            "name": "name",
                            "type": "TEXT",
                            "not_null": True,
                            "description": "Full name",
                        },
                        {
                            "name": "desk",
                            "type": "TEXT",
                            "enum": self.kinds,
                            "description": "The kind of item this person handles (none: trainee)",
                        },
                    ],
                }
            )
        cols: list[dict[str, Any]] = [
            id_column(),
            person_column(self.pid, self.p, "Who booked", fixed=True),
            {
                "name": self.rid,
                "type": "TEXT",
                "not_null": True,
                "references": f"{self.r}.id",
                "updatable": False,
                "description": "What is booked",
            },
            {
                "name": "qty",
                "type": "INTEGER",
                "not_null": True,
                "check": "qty > 0",
                "updatable": False,
                "description": "Units",
            },
            {
                "name": "start_step",
                "type": "INTEGER",
                "not_null": True,
                "updatable": False,
                "description": "Step the booking starts",
            },
            {
                "name": "status",
                "type": "TEXT",
                "not_null": True,
                "default": "OPEN",
                "enum": ["OPEN", "DONE", "CANCELLED"],
                "insertable": False,
                "description": "Status",
            },
            {
                "name": "end_step",
                "type": "INTEGER",
                "insertable": False,
                "description": "Step it was completed or cancelled",
            },
            {
                "name": "charge",
                "type": "INTEGER",
                "insertable": False,
                "description": "Amount charged on completion",
            },
        ]
        if self.staff:
            cols.append(
                {
                    "name": "handled_by",
                    "type": "TEXT",
                    "references": f"{self.staff}.id",
                    "description": "Staff member who handled it",
                }
            )
        t.append(
            {
                "name": self.t,
                "tier": "transaction",
                "access": "read-write",
                "description": f"One booking of a {_singular(self.r)}.",
                "columns": cols,
            }
        )
        if self.handoffs:
            t.append(self._handoff_table())
        if self.apps:
            t.append(self._app_table())
        return t

    def _ins(self, person: str, item: str, qty: int = 1, start: int = 20) -> dict[str, Any]:
        args: dict[str, Any] = {self.pid: person, self.rid: item, "qty": qty, "start_step": start}
        if "handler" in self.rules:
            args["handled_by"] = self.handler(self.item_of[item])
        return {"tool": f"insert_{self.t}", "args": args}

    def _upd(self, ident: int, **args: Any) -> dict[str, Any]:
        return {"tool": f"update_{self.t}", "args": {"id": ident, **args}}

    def _close(self, booking: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
        """Args that complete ``booking`` correctly."""
        return {"status": "DONE", "end_step": 5, "charge": booking["qty"] * item["price"]}

    def rules_and_effects(
        self, items: list[dict[str, Any]], rows: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        plain = next(i for i in items if i["kind"] != self.kinds[-1] or "gold" not in self.rules)
        gold_item = next(i for i in items if i["kind"] == self.kinds[-1])
        basic_open = rows[0]
        done = rows[-1]
        item_of = self.item_of = {i["id"]: i for i in items}
        cancel_ok = {"status": "CANCELLED", "end_step": basic_open["start_step"] - self.window}
        rules: list[dict[str, Any]] = []
        p, t = self.p, self.t
        if "active" in self.rules:
            rules.append(
                self._rule(
                    "ACTIVE",
                    "insert",
                    "prerequisite",
                    f"NOT EXISTS (SELECT 1 FROM {p} WHERE id = NEW.{self.pid} AND active = 1)",
                    "PREREQ_FAIL",
                    "The account does not exist or is not active.",
                    "Check the person's id; inactive accounts cannot book.",
                    "create",
                    [self._ins("p_gone", plain["id"]), self._ins("p_basic", plain["id"])],
                )
            )
        if "quota" in self.rules:
            rules.append(
                self._rule(
                    "QUOTA",
                    "insert",
                    "quota",
                    f"(SELECT open_count FROM {p} WHERE id = NEW.{self.pid}) >= {{threshold}}",
                    "QUOTA_EXCEEDED",
                    f"At most {self.quota} open {t} per person.",
                    "Complete or cancel an open one first.",
                    "create",
                    [self._ins("p_edge", plain["id"]), self._ins("p_edge", plain["id"])],
                    threshold={"quantity": f"{p}.open_count", "value": self.quota},
                    ordered=True,
                )
            )
        if "qty" in self.rules:
            rules.append(
                self._rule(
                    "QTY_MAX",
                    "insert",
                    "policy",
                    f"NEW.qty > {self.max_qty}",
                    "POLICY_VIOLATION",
                    f"At most {self.max_qty} units per booking.",
                    f"Ask for {self.max_qty} units or fewer.",
                    "create",
                    [
                        self._ins("p_basic", plain["id"], qty=self.max_qty + 1),
                        self._ins("p_basic", plain["id"], qty=self.max_qty),
                    ],
                )
            )
        if "gold" in self.rules:
            rules.append(
                self._rule(
                    "GOLD_ONLY",
                    "insert",
                    "authority",
                    f"(SELECT kind FROM {self.r} WHERE id = NEW.{self.rid}) = '{self.kinds[-1]}' AND (SELECT level FROM {p} WHERE id = NEW.{self.pid}) != 'GOLD'",
                    "PERMISSION_DENIED",
                    f"Only GOLD members may book a {self.kinds[-1]} {_singular(self.r)}.",
                    f"Offer a {_singular(self.r)} of another kind.",
                    "create",
                    [self._ins("p_basic", gold_item["id"]), self._ins("p_gold", gold_item["id"])],
                )
            )
        if "final" in self.rules:
            rules.append(
                self._rule(
                    "FINAL",
                    "update",
                    "irreversibility",
                    "OLD.status != 'OPEN'",
                    "IRREVERSIBLE",
                    f"A completed or cancelled {_singular(t)} cannot be changed.",
                    "Make a new booking instead.",
                    "cancel",
                    [self._upd(done["id"], **cancel_ok), self._upd(basic_open["id"], **cancel_ok)],
                )
            )
        if "end_step" in self.rules:
            rules.append(
                self._rule(
                    "END_STEP_REQUIRED",
                    "update",
                    "integrity",
                    "NEW.end_step IS NULL",
                    "PROVENANCE_REQUIRED",
                    "The step of completion or cancellation is required.",
                    "Ask for the step and give end_step.",
                    "cancel",
                    [
                        self._upd(basic_open["id"], status="CANCELLED"),
                        self._upd(basic_open["id"], **cancel_ok),
                    ],
                    when="NEW.status != 'OPEN' AND OLD.status = 'OPEN'",
                )
            )
        if "window" in self.rules:
            late = {"status": "CANCELLED", "end_step": basic_open["start_step"] - self.window + 1}
            rules.append(
                self._rule(
                    "WINDOW",
                    "update",
                    "policy",
                    f"NEW.end_step > OLD.start_step - {self.window}",
                    "TOO_LATE",
                    f"A booking can be cancelled only up to {self.window} steps before it starts.",
                    "Explain that it is too late to cancel.",
                    "cancel",
                    [self._upd(basic_open["id"], **late), self._upd(basic_open["id"], **cancel_ok)],
                    when="NEW.status = 'CANCELLED' AND OLD.status = 'OPEN'",
                )
            )
        if "charge" in self.rules:
            good = self._close(basic_open, item_of[basic_open[self.rid]])
            bad = {**good, "charge": good["charge"] + 5}
            expr = f"OLD.qty * (SELECT price FROM {self.r} WHERE id = OLD.{self.rid})"
            rules.append(
                self._rule(
                    "CHARGE",
                    "update",
                    "calculation",
                    f"NEW.charge IS NULL OR NEW.charge != {expr}",
                    "CALCULATION_ERROR",
                    "The charge must be qty x the price.",
                    "Recompute the charge from the price.",
                    "complete",
                    [self._upd(basic_open["id"], **bad), self._upd(basic_open["id"], **good)],
                    when="NEW.status = 'DONE' AND OLD.status = 'OPEN'",
                    repair={"column": "charge", "value": expr},
                )
            )
        if "locked" in self.rules:
            good = self._close(basic_open, item_of[basic_open[self.rid]])
            rules.append(
                self._rule(
                    "CHARGE_LOCKED",
                    "update",
                    "system_control",
                    "NEW.charge IS NOT OLD.charge AND NEW.status = 'OPEN'",
                    "SYSTEM_CONTROLLED",
                    "The charge is set only when a booking is completed.",
                    "Complete the booking to charge it.",
                    "complete",
                    [self._upd(basic_open["id"], charge=5), self._upd(basic_open["id"], **good)],
                )
            )
        if "handler" in self.rules:
            wrong = {**self._ins("p_basic", plain["id"])}
            wrong["args"] = {**wrong["args"], "handled_by": "s_t"}
            staff = self.staff
            rules.append(
                self._rule(
                    "HANDLER",
                    "insert",
                    "authority",
                    f"NEW.handled_by IS NOT (SELECT s.id FROM {staff} s WHERE s.desk = "
                    f"(SELECT kind FROM {self.r} WHERE id = NEW.{self.rid}))",
                    "WRONG_HANDLER",
                    f"A booking is handled by the {staff} member whose desk is the item's kind.",
                    f"Name the {staff} member whose desk matches the kind of the item.",
                    "create",
                    [wrong, self._ins("p_basic", plain["id"])],
                )
            )
        effects = [
            {
                "id": "ON_CREATE",
                "table": t,
                "on": "insert",
                "description": "Adds one to the person's open_count.",
                "sql": f"UPDATE {p} SET open_count = open_count + 1 WHERE id = NEW.{self.pid}",
                "transaction": "create",
                "examples": [
                    {
                        "calls": [self._ins("p_gold", plain["id"])],
                        "expect_rows": [
                            {"table": p, "where": {"id": "p_gold"}, "values": {"open_count": 1}}
                        ],
                    }
                ],
            },
            {
                "id": "ON_CLOSE",
                "table": t,
                "on": "update",
                "when": "NEW.status != 'OPEN' AND OLD.status = 'OPEN'",
                "description": "Subtracts one from the person's open_count.",
                "sql": f"UPDATE {p} SET open_count = open_count - 1 WHERE id = NEW.{self.pid}",
                "transaction": "cancel",
                "examples": [
                    {
                        "calls": [self._upd(basic_open["id"], **cancel_ok)],
                        "expect_rows": [
                            {"table": p, "where": {"id": "p_basic"}, "values": {"open_count": 0}}
                        ],
                    }
                ],
            },
        ]
        return rules, effects

    def transactions(self) -> list[dict[str, Any]]:
        thing = _singular(self.t).replace("_", " ").title()
        create = [self.pid, self.rid, "qty", "start_step"]
        if self.staff:
            create.append("handled_by")
        return [
            {
                "id": "create",
                "name": f"Book {thing}",
                "goal": f"Book a {_singular(self.r)}.",
                "tool": f"insert_{self.t}",
                "parameters": create,
                "agent_decides": ["handled_by"] if "handler" in self.rules else [],
            },
            {
                "id": "complete",
                "name": f"Complete {thing}",
                "goal": "Close a booking that took place, charging it.",
                "tool": f"update_{self.t}",
                "parameters": ["id", "status", "end_step", "charge"],
                "agent_decides": ["charge"] if "charge" in self.rules else [],
            },
            {
                "id": "cancel",
                "name": f"Cancel {thing}",
                "goal": "Cancel a booking before it starts.",
                "tool": f"update_{self.t}",
                "parameters": ["id", "status", "end_step"],
            },
            *(
                [
                    {
                        "id": "hand_off",
                        "name": "Hand Off to a Human Agent",
                        "goal": "Hand the person over to a human agent with the policy's reason.",
                        "tool": f"insert_{self.handoffs}",
                        "parameters": [self.pid, "reason"],
                        "agent_decides": ["reason"],
                    }
                ]
                if self.handoffs
                else []
            ),
            *(
                [
                    {
                        "id": "reminders",
                        "name": "Switch Reminders",
                        "goal": "Switch the booking reminders of the person's app on or off.",
                        "tool": f"update_{self.apps}",
                        "parameters": ["id", "reminders"],
                    }
                ]
                if self.apps
                else []
            ),
        ]

    def build(self) -> dict[str, Any]:
        people, items = self.people(), self.catalogue()
        self.item_of = {i["id"]: i for i in items}
        rows = self.bookings(items)
        rules, effects = self.rules_and_effects(items, rows)
        seed: dict[str, Any] = {self.p: people, self.r: items, self.t: rows}
        if self.staff:
            seed[self.staff] = self.staff_rows()
        extra: dict[str, Any] = {}
        if self.handoffs:
            rules += self.handoff_rules()
            extra["escalation"] = self.escalation()
        if self.apps:
            seed[self.apps] = self.app_rows(people)
            rules.append(self.app_rule(seed[self.apps]))
            extra["user_tools"] = {"tables": [self.apps]}
        return {
            "name": f"random_{self.seed}",
            "version": "1",
            "actor": self.p,
            "description": f"A desk that books {self.r} for {self.p}.",
            "wiki": {
                "title": f"{self.r.title()} Booking Desk Policy",
                "context": f"A desk where {self.p} book {self.r}.",
                "persona": "You are a precise booking assistant.",
                "mission": f"Help {self.p} book, complete and cancel bookings within the rules.",
            },
            **extra,
            "tables": self.tables(),
            "rules": rules,
            "effects": effects,
            "transactions": self.transactions(),
            "seed": seed,
        }


def random_spec_data(seed: int) -> dict[str, Any]:
    """The spec of ``seed`` as data."""
    return _Spec(seed).build()


def random_spec_text(seed: int) -> str:
    """The spec of ``seed`` as YAML text (``on`` keys quoted, as a person writes them)."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's: 20x faster, same YAML
    return yaml.dump(
        random_spec_data(seed),
        Dumper=dumper,
        sort_keys=False,
        width=1000,
        default_flow_style=None,
        allow_unicode=False,
    )
