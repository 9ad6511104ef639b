"""Generation on domains whose write tools are procedures (imported τ²-bench domains).

The symbolic explorer drives the atomic ``insert_<t>`` / ``update_<t>`` tools; a procedural
domain has none. Here each task is one procedure call built from one user's own records, read
through the domain's own read tools (exactly what an agent would see): the user's orders and
payment methods, the variants of a product, the user's reservations. The call is executed in the
engine; an accepted call (or, with policy guards, a refused one) becomes a package whose witness
is the lookups and the call, certified by replay like any other. The request names what the user
wants in their own words (items by name and options, the card by its brand and last digits), and
every scalar the call writes is in that text or in an earlier lookup's result: that is how a
procedure's write is grounded (design note 0044, "Generation").

Actions are tried in a seeded rotation per task; a unit of ``SCENE_SIZE`` tasks starts from the
domain's seed state, so every unit is a pure function of (domain, seed, unit index).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from veritask import __version__
from veritask._util import derive_seed
from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment, Snapshot, data_calls
from veritask.pipeline import Unit
from veritask.policy import DomainSpec, render_wiki
from veritask.synth._procedural_air import AIR_BUILDERS, AIR_REFUSERS
from veritask.synth._procedural_base import (
    Builder,
    Draft,
    Json,
    Reader,
    card_words,
    methods_of,
    name_of,
    options_words,
)
from veritask.synth._unit import SceneParams, UnitResult, scene_units
from veritask.task import (
    Ask,
    DatasetDir,
    Fallback,
    SubGoal,
    TaskDescription,
    TaskPackage,
    UserProfile,
    WitnessCall,
    certify,
    grounding,
    sha256,
)

GENERATOR = f"veritask-procedural/{__version__}"
PROCEDURE_TX = "procedure:"
"""Prefix of the ``transaction`` of an ask answered by a procedure call (see ``_grounded``)."""
ATTEMPTS_PER_TASK = 8
REFUSAL_EVERY = 3
"""At most one refusal task (a request a policy guard refuses) in every third unit."""

# -- retail ------------------------------------------------------------------------------------


def _orders(r: Reader, user: Json, status: str) -> list[Json]:
    found = []
    for order_id in user.get("orders") or []:
        order = r.get("get_order_details", {"order_id": order_id})
        if isinstance(order, dict) and order.get("status") == status:
            found.append(order)
    return found


def _lookups(user: Json, order: Json) -> list[tuple[str, Json]]:
    return [
        ("get_user_details", {"user_id": user["user_id"]}),
        ("get_order_details", {"order_id": order["order_id"]}),
    ]


def _retail_cancel(r: Reader, user: Json, rng: random.Random) -> Draft | None:
    orders = _orders(r, user, "pending")
    if not orders:
        return None
    order = rng.choice(orders)
    reason = rng.choice(["no longer needed", "ordered by mistake"])
    oid = order["order_id"]
    words = "I no longer need it" if reason == "no longer needed" else "I ordered it by mistake"
    return Draft(
        _lookups(user, order),
        "cancel_pending_order",
        {"order_id": oid, "reason": reason},
        f"Cancel your pending order {oid}.",
        f"Please cancel my order {oid}; the reason is: {reason} ({words}).",
        [oid],
    )


def _item_words(items: list[Json]) -> str:
    return " and ".join(f"the {i['name']} ({options_words(i.get('options'))})" for i in items)


def _pick_items(order: Json, rng: random.Random) -> list[Json]:
    items = [i for i in order.get("items") or [] if isinstance(i, dict)]
    if not items:
        return []
    return rng.sample(items, rng.randint(1, min(2, len(items))))


def _original(order: Json) -> str | None:
    for pay in order.get("payment_history") or []:
        if pay.get("transaction_type") == "payment":
            return str(pay.get("payment_method_id"))
    return None


def _retail_return(r: Reader, user: Json, rng: random.Random) -> Draft | None:
    orders = _orders(r, user, "delivered")
    if not orders:
        return None
    order = rng.choice(orders)
    items = _pick_items(order, rng)
    pay = _original(order)
    methods = dict(methods_of(user))
    if not items or pay not in methods:
        return None
    oid = order["order_id"]
    return Draft(
        _lookups(user, order),
        "return_delivered_order_items",
        {"order_id": oid, "item_ids": [i["item_id"] for i in items], "payment_method_id": pay},
        f"Return {_item_words(items)} from your delivered order {oid}.",
        f"I want to return {_item_words(items)} from my order {oid}, refunded to the "
        f"{card_words(methods[pay])} I paid with.",
        [oid],
    )


def _variant_for(r: Reader, item: Json, rng: random.Random) -> tuple[Json, str] | None:
    product = r.get("get_product_details", {"product_id": item["product_id"]})
    if not isinstance(product, dict):
        return None
    variants = [
        v
        for k, v in sorted((product.get("variants") or {}).items())
        if k != item["item_id"] and v.get("available") and v.get("options") != item.get("options")
    ]
    if not variants:
        return None
    return rng.choice(variants), str(product.get("name"))


def _swap(
    r: Reader, user: Json, rng: random.Random, status: str, tool: str, verb: str
) -> Draft | None:
    orders = _orders(r, user, status)
    if not orders:
        return None
    order = rng.choice(orders)
    items = [i for i in order.get("items") or [] if isinstance(i, dict)]
    if not items:
        return None
    item = rng.choice(items)
    found = _variant_for(r, item, rng)
    methods = dict(methods_of(user))
    pay = _original(order)
    if found is None or pay not in methods:
        return None
    new, name = found
    oid = order["order_id"]
    product = ("get_product_details", {"product_id": item["product_id"]})
    lookups = [*_lookups(user, order), product]
    return Draft(
        lookups,
        tool,
        {
            "order_id": oid,
            "item_ids": [item["item_id"]],
            "new_item_ids": [new["item_id"]],
            "payment_method_id": pay,
        },
        f"{verb.capitalize()} the {name} in order {oid} for another option of it.",
        f"In my order {oid}, I'd like to {verb} the {name} ({options_words(item.get('options'))}) "
        f"for the {name} with {options_words(new.get('options'))}; settle any price difference "
        f"with the {card_words(methods[pay])} I paid with.",
        [oid],
    )


def _retail_exchange(r: Reader, user: Json, rng: random.Random) -> Draft | None:
    return _swap(r, user, rng, "delivered", "exchange_delivered_order_items", "exchange")


def _replacement(r: Reader, user: Json, rng: random.Random) -> Draft | None:
    """An item exchanged for the very same one (it arrived damaged): the policy allows an
    exchange only for another option of the product, so with guards this is a refusal."""
    orders = _orders(r, user, "delivered")
    if not orders:
        return None
    order = rng.choice(orders)
    items = [i for i in order.get("items") or [] if isinstance(i, dict)]
    methods = dict(methods_of(user))
    pay = _original(order)
    if not items or pay not in methods:
        return None
    item = rng.choice(items)
    oid, name, words = order["order_id"], item["name"], options_words(item.get("options"))
    return Draft(
        _lookups(user, order),
        "exchange_delivered_order_items",
        {
            "order_id": oid,
            "item_ids": [item["item_id"]],
            "new_item_ids": [item["item_id"]],
            "payment_method_id": pay,
        },
        f"Get a replacement for the damaged {name} of order {oid}.",
        f"The {name} ({words}) in my order {oid} arrived damaged. I'd like to exchange it for "
        f"a new one exactly like it ({words}); any difference goes to the "
        f"{card_words(methods[pay])} I paid with.",
        [oid],
    )


def _retail_modify_items(r: Reader, user: Json, rng: random.Random) -> Draft | None:
    return _swap(r, user, rng, "pending", "modify_pending_order_items", "change")


def _retail_payment(r: Reader, user: Json, rng: random.Random) -> Draft | None:
    orders = _orders(r, user, "pending")
    if not orders:
        return None
    order = rng.choice(orders)
    pay = _original(order)
    others = [(k, m) for k, m in methods_of(user) if k != pay and m.get("source") != "gift_card"]
    if not others:
        return None
    key, method = rng.choice(others)
    oid = order["order_id"]
    return Draft(
        _lookups(user, order),
        "modify_pending_order_payment",
        {"order_id": oid, "payment_method_id": key},
        f"Pay for your pending order {oid} with another card.",
        f"Please switch the payment of my order {oid} to my {card_words(method)}.",
        [oid],
    )


_STREETS = ["12 Oak Ave", "480 Pine Rd", "7 Birch Ln", "95 Cedar Ct", "310 Maple Dr"]
_CITIES = [
    ("Austin", "TX", "73301"),
    ("Denver", "CO", "80202"),
    ("Portland", "OR", "97201"),
    ("Columbus", "OH", "43004"),
]


def _address(rng: random.Random) -> Json:
    city, state, zipcode = rng.choice(_CITIES)
    unit = rng.choice(["", f"Suite {rng.randint(100, 999)}"])
    return {
        "address1": rng.choice(_STREETS),
        "address2": unit,
        "city": city,
        "state": state,
        "country": "USA",
        "zip": zipcode,
    }


def _address_words(a: Json) -> str:
    street = f"{a['address1']}, {a['address2']}" if a["address2"] else a["address1"]
    return f"{street}, {a['city']}, {a['state']} {a['zip']}, {a['country']}"


def _retail_order_address(r: Reader, user: Json, rng: random.Random) -> Draft | None:
    orders = _orders(r, user, "pending")
    if not orders:
        return None
    order = rng.choice(orders)
    new = _address(rng)
    oid = order["order_id"]
    return Draft(
        _lookups(user, order),
        "modify_pending_order_address",
        {"order_id": oid, **new},
        f"Ship your pending order {oid} to a new address.",
        f"Please ship my order {oid} to {_address_words(new)} instead.",
        [oid],
    )


def _retail_user_address(r: Reader, user: Json, rng: random.Random) -> Draft | None:
    del r
    new = _address(rng)
    return Draft(
        [("get_user_details", {"user_id": user["user_id"]})],
        "modify_user_address",
        {"user_id": user["user_id"], **new},
        "Update the default address on your account.",
        f"I moved: please set my account's address to {_address_words(new)}.",
    )


BUILDERS: dict[str, list[Builder]] = {
    "cancel_pending_order": [_retail_cancel],
    "return_delivered_order_items": [_retail_return],
    "exchange_delivered_order_items": [_retail_exchange],
    "modify_pending_order_items": [_retail_modify_items],
    "modify_pending_order_payment": [_retail_payment],
    "modify_pending_order_address": [_retail_order_address],
    "modify_user_address": [_retail_user_address],
    **AIR_BUILDERS,
}
"""Per procedure name, how to build a call for it from one user's records."""
REFUSERS: dict[str, list[Builder]] = {
    "exchange_delivered_order_items": [_replacement],
    **AIR_REFUSERS,
}
"""Per procedure, builders of requests a policy guard often refuses (tried in a share of the
attempts while a unit may still have its refusal task)."""
REFUSAL_TRY = 0.3
LEAD_TRIES = 4


def builders_for(spec: DomainSpec, table: dict[str, list[Builder]] | None = None) -> list[Builder]:
    """The builders (of ``table``, default ``BUILDERS``) whose procedure the spec has, in the
    spec's order."""
    out: list[Builder] = []
    for proc in spec.procedures:
        out += (BUILDERS if table is None else table).get(proc.name, [])
    return out


def procedural_generable(spec: DomainSpec) -> bool:
    """True when this generator can make tasks for ``spec``: its writes are procedures, some
    of which it knows how to call, and it has an actor table of users."""
    return not spec.atomic_tools and bool(builders_for(spec)) and spec.actor is not None


# -- units -------------------------------------------------------------------------------------


class ProceduralWorker:
    """Makes the packages of one unit on a procedural domain."""

    def __init__(self, domain: str) -> None:
        self.spec = load_domain(domain)
        self.domain = CompiledDomain.from_spec(self.spec)
        self.policy = render_wiki(self.spec)
        self.builders = builders_for(self.spec)
        self.refusers = builders_for(self.spec, REFUSERS)
        self.checker = Environment(self.domain)
        self.refusals = 0
        """Refusal packages the unit being made has, or may not have (1)."""

    def _users(self, env: Environment) -> list[str]:
        actor = self.spec.table(self.spec.actor or "users")
        key = actor.primary_key[0].name
        table = actor.name
        rows = env._conn.execute(f'SELECT "{key}" FROM "{table}" ORDER BY "{key}"').fetchall()
        return [str(r[0]) for r in rows]

    def run(
        self, name: str, seed: int, where: tuple[int, int], count: int, first: int, out: Path
    ) -> UnitResult:
        """Produce ``count`` certified, grounded packages for unit ``where[0]`` of ``where[1]``.

        The users (shuffled by the seed) are dealt out to the units, so two units never write
        for the same user and never reach the same target (unless there are fewer users than
        units)."""
        unit, units = where
        ds = DatasetDir(out)
        env = Environment(self.domain)
        origin = env.image()
        origin_digest = sha256(origin)
        policy_digest = ds.put_policy(self.policy)
        users = _dealt(self._users(env), derive_seed(name, seed, "users"), unit, units)
        replayer = Environment(self.domain)
        result = UnitResult(unit, 0)
        packages: list[TaskPackage] = []
        seen: set[str] = set()
        self.refusals = 0 if unit % REFUSAL_EVERY == 0 else 1
        attempt = 0
        while len(packages) < count and attempt < ATTEMPTS_PER_TASK * count and users:
            index = first + len(packages)
            rng = random.Random(derive_seed(name, seed, "procedural", index, attempt))
            attempt += 1
            env.restore(origin)
            draft = self._draft(env, users, rng, index + attempt)
            if draft is None:
                _count(result, "no call for this user")
                continue
            drafts = self._with_lead(env, origin, draft, rng)
            if drafts is None:
                _count(result, "no accepted request before the refused one")
                continue
            pkg, reason = self._package(name, seed, index, drafts, env, replayer, origin, seen)
            if pkg is None:
                _count(result, reason or "discarded")
                continue
            ds.put_state(replayer.image())
            self.refusals += int(pkg.refusal)
            seen.add(pkg.target)
            packages.append(pkg)
        for pkg in packages:
            assert pkg.origin == origin_digest and pkg.policy == policy_digest
        if packages:
            ds.put_state(origin)
        ds.write_part(unit, packages)
        env.close()
        replayer.close()
        result.packages = len(packages)
        return result

    def _draft(
        self, env: Environment, users: list[str], rng: random.Random, turn: int
    ) -> Draft | None:
        builders = self.builders
        if self.refusals == 0 and self.spec.rules and rng.random() < REFUSAL_TRY:
            builders = self.refusers or builders  # this unit may still have its refusal
        return self._build(env, rng.choice(users), builders, rng, turn)

    def _build(
        self, env: Environment, user_id: str, builders: list[Builder], rng: random.Random, turn: int
    ) -> Draft | None:
        reader = Reader(env)
        user = reader.get("get_user_details", {"user_id": user_id})
        if not isinstance(user, dict):
            return None
        build = builders[(turn + rng.randrange(len(builders))) % len(builders)]
        return build(reader, user, rng)

    def _with_lead(
        self, env: Environment, origin: bytes, draft: Draft, rng: random.Random
    ) -> list[Draft] | None:
        """``[draft]``, or, when a guard refuses it and the unit may have its refusal, an
        accepted request of the same user first and then ``draft``: the accepted request
        makes the refusal task's target its own (every unit starts from the same database, so
        a target equal to it would repeat across units). None when no lead is found."""
        if self.refusals or not self.spec.rules:
            return [draft]
        env.restore(origin)
        for tool, args in draft.lookups:
            env.call(tool, args)
        refused = env.call(draft.tool, draft.args)
        if refused.ok or refused.error is None or refused.error.violated_rule is None:
            return [draft]
        user_id = str(draft.lookups[0][1]["user_id"])
        for turn in range(LEAD_TRIES):
            env.restore(origin)
            lead = self._build(env, user_id, self.builders, rng, turn)
            if lead is not None and (lead.tool, lead.args) != (draft.tool, draft.args):
                return [lead, draft]
        return None

    def _package(
        self,
        name: str,
        seed: int,
        index: int,
        drafts: list[Draft],
        env: Environment,
        replayer: Environment,
        origin: bytes,
        seen: set[str],
    ) -> tuple[TaskPackage | None, str | None]:
        env.restore(origin)
        witness: list[WitnessCall] = []
        for draft in drafts:
            for tool, args in [*draft.lookups, (draft.tool, draft.args)]:
                res = env.call(tool, args)
                error = res.error.to_json() if res.error is not None else None
                witness.append(
                    WitnessCall(tool=tool, args=args, ok=res.ok, result=res.result, error=error)
                )
            if not witness[-1].ok and draft is not drafts[-1]:
                return None, "write refused"
        rule = (witness[-1].error or {}).get("violated_rule")
        refusal = not witness[-1].ok
        if refusal and (rule is None or self.refusals):
            return None, "write refused"
        target = env.image()
        if env.distance(Snapshot(origin, self.domain.layout)) == 0:
            return None, "target equals origin"
        cert = certify(witness, replayer, origin, target)
        if cert.kind is not None:
            return None, f"certificate: {cert.kind}"
        digest = sha256(replayer.image())
        if digest in seen:
            return None, "duplicate target"
        pkg = self._make(name, seed, index, drafts, witness, sha256(origin), digest)
        if refusal:
            pkg = _as_refusal(pkg, str(rule))
        if grounding(pkg, self.checker, origin):
            return None, "ungrounded"
        return pkg, None

    def _make(
        self,
        name: str,
        seed: int,
        index: int,
        drafts: list[Draft],
        witness: list[WitnessCall],
        origin: str,
        target: str,
    ) -> TaskPackage:
        draft = drafts[0]
        user_id = str(draft.lookups[0][1].get("user_id"))
        user = witness[0].result if isinstance(witness[0].result, dict) else {}
        who = f"You are {name_of(user)}, a customer; your user id is {user_id}."
        task = TaskDescription(
            who_you_are=who,
            cognitive_gaps=["You do not know the internal ids of items or payment methods."],
            total_goal=" Then: ".join(d.goal for d in drafts),
            sub_goals=[
                SubGoal(
                    title=d.tool.replace("_", " "),
                    request=d.request,
                    ask=Ask(transaction=PROCEDURE_TX + d.tool, tool=d.tool, values=dict(d.args)),
                )
                for d in drafts
            ],
        )
        known = [k for d in drafts for k in d.known]
        return TaskPackage(
            id=f"{name}-s{seed}-{index:06d}",
            domain=name,
            spec_hash=self.spec.spec_hash(),
            policy=sha256(self.policy.encode("utf-8")),
            task=task,
            task_description=task.render(),
            user_profile=UserProfile(
                user_id=user_id,
                name=name_of(user),
                archetype="rookie",
                known_ids=list(dict.fromkeys([user_id, *known])),
            ),
            origin=origin,
            target=target,
            witness=witness,
            reward_basis=["state_exact"],
            difficulty="L1" if len(witness) < 4 else ("L2" if len(drafts) == 1 else "L3"),
            tags=["procedural", *dict.fromkeys(d.tool for d in drafts)],
            rules_exercised=[],
            boundary_hits=0,
            refusal=False,
            seed=derive_seed(name, seed, "task", index),
            generator=GENERATOR,
        )


def _dealt(users: list[str], seed: int, unit: int, units: int) -> list[str]:
    """The users of unit ``unit`` of ``units``: every ``units``-th of the seeded shuffle."""
    order = list(users)
    random.Random(seed).shuffle(order)
    hands = max(1, min(units, len(order)))
    return order[unit % hands :: hands]


def _as_refusal(pkg: TaskPackage, rule: str) -> TaskPackage:
    """The package of a request a policy guard refuses: the user accepts the refusal."""
    sub = pkg.task.sub_goals[-1]
    trigger = "If the agent explains that the policy does not allow this, accept it and end."
    sub = sub.model_copy(
        update={"reactive_triggers": [trigger], "fallbacks": [Fallback(rule=rule)]}
    )
    task = pkg.task.model_copy(update={"sub_goals": [*pkg.task.sub_goals[:-1], sub]})
    return pkg.model_copy(
        update={
            "task": task,
            "task_description": task.render(),
            "rules_exercised": [rule],
            "boundary_hits": 1,
            "refusal": True,
            "tags": [*pkg.tags, "refusal"],
        }
    )


def _count(result: UnitResult, reason: str) -> None:
    result.discarded[reason] = result.discarded.get(reason, 0) + 1


@dataclass
class ProceduralStage:
    """The generate stage on a procedural domain (the same units as ``SceneStage``)."""

    domain: str
    seed: int
    n: int
    out: Path
    name: str = "generate"
    persona: bool = False
    _worker: ProceduralWorker | None = field(default=None, repr=False)

    def __getstate__(self) -> dict[str, object]:
        return {**self.__dict__, "_worker": None}

    def units(self) -> list[Unit[SceneParams]]:
        """See ``scene_units``."""
        return scene_units(self.n)

    def done(self, unit: Unit[SceneParams]) -> bool:
        """True when the unit's part file exists."""
        return DatasetDir(self.out).has_part(unit.params[0])

    def setup(self) -> None:
        """Build this worker's ``ProceduralWorker``."""
        self._worker = ProceduralWorker(self.domain)

    def run(self, unit: Unit[SceneParams]) -> UnitResult:
        """Produce one unit's packages and write its part atomically."""
        if self._worker is None:
            self.setup()
        assert self._worker is not None
        index, count, first = unit.params
        where = (index, len(self.units()))
        with data_calls():  # an interrupted call fails the unit, never becomes a refusal
            return self._worker.run(
                self._worker.spec.name, self.seed, where, count, first, self.out
            )
