"""The parts of a random spec beyond the bookings: a hand-off table with its ``escalation``
block and a user-side app table under ``user_tools`` (``tests/_random_specs.py`` draws them),
and the builder of a rule with its executable example."""

from __future__ import annotations

import random
from typing import Any

HANDOFFS = ["handoffs", "referrals", "escalations"]
APPS = ["apps", "phones", "calendars"]
APP_LABELS = ["Phone", "Tablet", "Laptop", "Watch", "Desktop", "E-reader", "Car screen"]
HANDOFF_REASONS = {
    "ACCOUNT_CLOSED": (
        "The person's account is closed; only a human agent can reopen it.",
        "Help a person with an active account yourself.",
    ),
    "GOLD_SERVICE": (
        "The person is a GOLD member, who may ask for a human agent.",
        "Help a BASIC member yourself.",
    ),
}
"""Hand-off reasons: when the policy gives each, and the hint of the refusal otherwise."""


def id_column() -> dict[str, Any]:
    """The technical integer key every generated table of records has."""
    return {
        "name": "id",
        "type": "INTEGER",
        "primary_key": True,
        "autoincrement": True,
        "technical": True,
        "description": "Id",
    }


def person_column(name: str, people: str, description: str, fixed: bool = False) -> dict[str, Any]:
    """A required reference to the people table (``fixed``: never updated)."""
    column: dict[str, Any] = {
        "name": name,
        "type": "TEXT",
        "not_null": True,
        "references": f"{people}.id",
    }
    if fixed:
        column["updatable"] = False
    column["description"] = description
    return column


def _singular(name: str) -> str:
    return name[:-1] if name.endswith("s") else name


class _Sides:
    """Hand-offs, the user's app and rules, for a spec that sets the names below."""

    rng: random.Random
    p: str
    pid: str
    t: str
    handoffs: str | None
    apps: str | None

    def _app_table(self) -> dict[str, Any]:
        """The person's own app (user-side): only the user can switch its reminders."""
        return {
            "name": self.apps,
            "tier": "entity",
            "access": "read-write",
            "description": "The person's own booking app (on the person's side; only they can "
            "read or change it).",
            "columns": [
                id_column(),
                person_column(self.pid, self.p, "Owner", fixed=True),
                {
                    "name": "label",
                    "type": "TEXT",
                    "not_null": True,
                    "updatable": False,
                    "description": "The name the owner gives the app",
                },
                {
                    "name": "reminders",
                    "type": "INTEGER",
                    "not_null": True,
                    "enum": [0, 1],
                    "description": "1 when booking reminders are switched on",
                },
            ],
        }

    def app_rows(self, people: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One app per person, reminders on or off from the seed."""
        labels = self.rng.sample(APP_LABELS, len(people))  # one person's app is not another's
        return [
            {
                "id": i,
                self.pid: person["id"],
                "label": labels[i - 1],
                "reminders": self.rng.randint(0, 1),
            }
            for i, person in enumerate(people, 1)
        ]

    def app_rule(self, apps: list[dict[str, Any]]) -> dict[str, Any]:
        """Reminders need an active account (a rule on the user's own tool)."""
        gone = next(a["id"] for a in apps if a[self.pid] == "p_gone")
        basic = next(a["id"] for a in apps if a[self.pid] == "p_basic")
        tool = f"update_{self.apps}"
        rule = self._rule(
            "REMINDERS_ACTIVE",
            "update",
            "prerequisite",
            f"NEW.reminders = 1 AND NOT EXISTS (SELECT 1 FROM {self.p} "
            f"WHERE id = NEW.{self.pid} AND active = 1)",
            "PREREQ_FAIL",
            "Reminders work only for an active account.",
            "Reminders cannot be switched on for an inactive account.",
            "reminders",
            [
                {"tool": tool, "args": {"id": gone, "reminders": 1}},
                {"tool": tool, "args": {"id": basic, "reminders": 1}},
            ],
        )
        rule["table"] = self.apps
        return rule

    def _handoff_table(self) -> dict[str, Any]:
        return {
            "name": self.handoffs,
            "tier": "transaction",
            "access": "read-write",
            "insert_only": True,
            "description": "Hand-offs of a person to a human agent, with the reason (a log).",
            "columns": [
                id_column(),
                person_column(self.pid, self.p, "Person handed over"),
                {
                    "name": "reason",
                    "type": "TEXT",
                    "not_null": True,
                    "enum": list(HANDOFF_REASONS),
                    "description": "Why the person is handed over",
                },
            ],
        }

    def escalation(self) -> dict[str, Any]:
        """The ``escalation`` block: the hand-off tool and the policy's reasons."""
        return {
            "tool": f"insert_{self.handoffs}",
            "reason": "reason",
            "reasons": [{"id": k, "when": v[0]} for k, v in HANDOFF_REASONS.items()],
        }

    def handoff_rules(self) -> list[dict[str, Any]]:
        """One rule per reason, refusing the hand-off when its condition does not hold."""
        conditions = {
            "ACCOUNT_CLOSED": f"NOT EXISTS (SELECT 1 FROM {self.p} WHERE id = NEW.{self.pid} "
            "AND active = 0)",
            "GOLD_SERVICE": f"(SELECT level FROM {self.p} WHERE id = NEW.{self.pid}) != 'GOLD'",
        }
        passing = {"ACCOUNT_CLOSED": "p_gone", "GOLD_SERVICE": "p_gold"}
        tool = f"insert_{self.handoffs}"
        rules = []
        for reason, (when, hint) in HANDOFF_REASONS.items():
            refused = {"tool": tool, "args": {self.pid: "p_basic", "reason": reason}}
            ok = {"tool": tool, "args": {self.pid: passing[reason], "reason": reason}}
            rule = self._rule(
                f"HANDOFF_{reason}",
                "insert",
                "policy",
                conditions[reason],
                "NOT_ESCALATABLE",
                f"This hand-off is only for this case: {when[0].lower()}{when[1:]}",
                hint,
                "hand_off",
                [refused, ok],
                when=f"NEW.reason = '{reason}'",
            )
            rule["table"] = self.handoffs
            rules.append(rule)
        return rules

    # -- rules ---------------------------------------------------------------------------

    def _rule(
        self,
        rid: str,
        on: str,
        category: str,
        condition: str,
        code: str,
        message: str,
        hint: str,
        tx: str,
        calls: list[dict[str, Any]],
        *,
        when: str | None = None,
        threshold: dict[str, Any] | None = None,
        repair: dict[str, Any] | None = None,
        ordered: bool = False,
    ) -> dict[str, Any]:
        rule_id = f"{_singular(self.t).upper()}_{rid}"
        first, second = calls
        second = {k: v for k, v in second.items() if k != "expect"}
        if ordered:  # accepted at N-1, then refused at N
            example = [
                {k: v for k, v in first.items() if k != "expect"},
                {**second, "expect": rule_id},
            ]
        else:
            example = [
                {**{k: v for k, v in first.items() if k != "expect"}, "expect": rule_id},
                second,
            ]
        rule: dict[str, Any] = {"id": rule_id, "table": self.t, "on": [on], "category": category}
        if when:
            rule["when"] = when
        rule.update({"condition": condition, "code": code, "message": message, "hint": hint})
        if threshold:
            rule["threshold"] = threshold
        if repair:
            rule["repair"] = repair
        rule["transaction"] = tx
        rule["examples"] = [{"calls": example}]
        return rule
