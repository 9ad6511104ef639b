"""The Set Designer: builds s_origin from a spec and a seed (LOGIGEN section 3.4).

Phase 1, resource injection: clones of catalog and actor rows with new names (Faker) and perturbed
attributes give substitutes (same kind, different name), trade-offs (a cheaper option of another
type), distractors (look-alikes that are inactive or of the wrong kind) and noise (volume).
Phase 2, cast assembly and boundary-adjacent seeding: history is written through the domain's own
write tools, so counters and effects stay consistent, and every quota a rule guards is driven to
N-1 for some of the cast. The state is then rebased: it is the root the tasks are diffed against.
"""

from __future__ import annotations

import copy
import random
import re
from dataclasses import dataclass, field
from typing import Any

from faker import Faker

from veritask.env import CompiledDomain, Environment, build_image
from veritask.policy import Column, Rule, Table, Transaction
from veritask.synth._analysis import DomainModel, row_key
from veritask.synth._explorer import SymbolicExplorer
from veritask.synth._sampler import Sampler, StateView, mimic
from veritask.synth._values import is_time, person_table, renamed, variant

_FAKER: dict[str, Faker] = {}


def faker_for(seed: int) -> Faker:
    """A per-process Faker instance, reseeded for each use."""
    fk = _FAKER.get("en")
    if fk is None:
        fk = _FAKER["en"] = Faker("en_US")
    fk.seed_instance(seed)
    return fk


class DesignError(RuntimeError):
    """No origin state can be designed (the spec's own seed does not load)."""


@dataclass
class Scene:
    """An origin state and who is in it."""

    index: int
    seed: int
    origin: bytes
    cast: list[Any]
    edge: dict[str, list[Any]] = field(default_factory=dict)
    """quota rule id -> keys of parent rows placed at N-1."""


def _clonable(model: DomainModel, table: Table) -> bool:
    if (
        table.tier == "transaction"
        or table.name in model.public_keys
        or not model.named(table.name)
    ):
        return False
    if table.primary_key and table.primary_key[0].type != "TEXT":
        return False
    for other in model.spec.tables:
        for group in other.unique:
            refs = [other.column(c).references for c in group]
            if any(r and r.split(".")[0] == table.name for r in refs):
                return False
    return True


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _named_in(value: Any, label: str) -> bool:
    """True when a row's name says a value of it ('Gift card 1115' and ``gift_card``)."""
    if not isinstance(value, str) or not label:
        return False
    words = [w for w in re.split(r"[^a-z0-9]+", value.lower()) if len(w) >= 3]
    low = label.lower()
    return bool(words) and all(w in low for w in words)


def _new_key(
    existing: list[str], rng: random.Random, taken: set[str], like: str | None = None
) -> str:
    """A free key shaped like ``like`` (the row the clone copies: its code keeps saying what
    the row is), else like a random existing key."""
    base = rng.choice(existing) if existing else "row"
    base = like if like is not None else base
    prefix = base.rsplit("_", 1)[0] if "_" in base else base
    for _ in range(1000):
        key = f"{prefix}_{rng.randint(100, 999)}"
        if key not in taken:
            taken.add(key)
            return key
    raise RuntimeError("could not find a free key")


class SymbolicSetDesigner:
    """Builds origin states without an LLM."""

    def __init__(self, domain: CompiledDomain, model: DomainModel) -> None:
        self.domain = domain
        self.model = model

    def design(self, index: int, seed: int, fill: bool = True) -> Scene:
        """The origin of scene ``index`` (deterministic in ``seed``). With ``fill=False`` the
        seed's own records keep the state the spec's examples were written against (the seed
        already holds boundary cases); only new resources are injected."""
        rng = random.Random(seed)
        faker = faker_for(seed)
        rows = copy.deepcopy({k: [dict(r) for r in v] for k, v in self.model.spec.seed.items()})
        for table in self.model.spec.tables:
            if _clonable(self.model, table):
                self._inject(table, rows, rng, faker)
        env = Environment(self.domain, self._image(rows))
        view = StateView(self.model, env)
        sampler = Sampler(self.model, view, rng, faker)
        actors = [
            row_key(self.model.spec.table(self.model.actor), r) for r in view.rows(self.model.actor)
        ]
        edge = self._boundary(env, view, sampler, rng) if fill else {}
        env.rebase()
        origin = env.snapshot().data
        env.close()
        rng.shuffle(actors)
        return Scene(index=index, seed=seed, origin=origin, cast=actors, edge=edge)

    def _image(self, rows: dict[str, list[dict[str, Any]]]) -> bytes:
        """The database of ``rows``; the seed alone when the injected rows do not load (a
        constraint the scratch checks cannot see, such as a table-level UNIQUE over foreign
        keys). Raises DesignError when not even the seed loads."""
        try:
            return build_image(self.model.spec, rows)
        except ValueError:
            pass
        try:
            return build_image(self.model.spec)
        except ValueError as exc:
            raise DesignError(f"the seed rows do not load: {exc}") from None

    # -- phase 1 ---------------------------------------------------------------------------

    def _inject(
        self, table: Table, rows: dict[str, list[dict[str, Any]]], rng: random.Random, faker: Faker
    ) -> None:
        """Add 2-5 clones of the table's rows, each checked against the schema before use."""
        existing = rows.get(table.name, [])
        if not existing:
            return
        pk = table.primary_key[0].name
        taken = {str(r[pk]) for r in existing}
        for _ in range(rng.randint(2, 5)):
            source = rng.choice(existing)
            clone = self._clone(table, source, rng, faker)
            clone[pk] = _new_key([str(r[pk]) for r in existing], rng, taken, str(source[pk]))
            if self._fits(table, clone, source, existing, rng, faker):
                existing.append(clone)
        rows[table.name] = existing

    def _clone(
        self, table: Table, source: dict[str, Any], rng: random.Random, faker: Faker
    ) -> dict[str, Any]:
        """A look-alike of ``source``: a new name and perturbed attributes."""
        clone = dict(source)
        label = self.model.label[table.name]
        like = str(source.get(label, "")) if label else ""
        for col in table.columns:
            if col.primary_key or col.references:
                continue
            if col.name == label:
                clone[col.name] = self._label(table, col, str(source[col.name]), rng, faker)
            else:
                value = self._perturb(table, col, source.get(col.name), rng, faker)
                # a kind the name says ('Gift card ...') stays: redrawn, it would contradict it
                if col.enum is None or not _named_in(source.get(col.name), like):
                    clone[col.name] = value
        if label:
            self._agree(table, label, source, clone)
            self._derive(table, label, source, clone)
        return clone

    def _derive(
        self, table: Table, label: str, source: dict[str, Any], clone: dict[str, Any]
    ) -> None:
        """Columns the seed spells from the row's name (an e-mail, a user name, a handle)
        follow the clone's new name: 'Jeremy Sullivan' never keeps ana.ribeiro@example.com."""
        old, new = str(source.get(label, "")), str(clone.get(label, ""))
        if old == new:
            return
        for col in table.columns:
            if col.primary_key or col.references or col.name == label:
                continue
            value = renamed(source.get(col.name), old, new)
            if value != source.get(col.name):
                clone[col.name] = value

    def _agree(
        self, table: Table, label: str, source: dict[str, Any], clone: dict[str, Any]
    ) -> None:
        """Keep a name that encodes an attribute ("9GB Data Boost", 9 GB) true of its clone:
        the attribute takes the number the new name carries where the column allows it, else
        the name takes the clone's attribute."""
        old_nums = re.findall(r"\d+", str(source.get(label, "")))
        new_name = str(clone.get(label, ""))
        new_nums = re.findall(r"\d+", new_name)
        if not old_nums or len(old_nums) != len(new_nums):
            return
        rules = self.model.value_rules
        for col in table.columns:
            value: Any = source.get(col.name)
            if col.type not in ("INTEGER", "REAL") or not _is_number(value) or col.computed:
                continue
            if col.primary_key or col.references or float(value) != int(value):
                continue
            if str(int(value)) not in old_nums:
                continue
            pos = old_nums.index(str(int(value)))
            wanted = int(new_nums[pos])
            if rules.allowed(table.name, col.name, wanted):
                clone[col.name] = wanted
            else:
                now: Any = clone.get(col.name)
                kept = int(now) if _is_number(now) else int(value)
                new_nums[pos] = str(kept)
                parts = re.split(r"\d+", new_name)
                clone[label] = "".join(
                    p + (new_nums[i] if i < len(new_nums) else "") for i, p in enumerate(parts)
                )
                clone[col.name] = kept

    def _label(self, table: Table, col: Column, like: str, rng: random.Random, faker: Faker) -> str:
        """A new name for a clone of the row named ``like``: the spec's pool or provider, a
        person's name for people, else another member of the same catalogue."""
        rules = self.model.value_rules
        if rules.provider(table, col) == "name" or (
            not col.values and person_table(table, self.model.actor)
        ):
            return rules.person_name(like, faker)
        drawn = rules.drawn(table, col, rng, faker)
        return str(drawn) if drawn is not None else variant(like, rng)

    def _perturb(
        self, table: Table, col: Column, value: Any, rng: random.Random, faker: Faker
    ) -> Any:
        """An attribute of a clone: computed columns reset, a few enums redrawn, numbers scaled
        inside the column's CHECK interval, time points kept."""
        rules = self.model.value_rules
        if col.computed:
            return col.default if col.default is not None else value
        if col.values or col.faker:
            drawn = rules.drawn(table, col, rng, faker)
            return drawn if rules.allowed(table.name, col.name, drawn) else value
        if col.enum is not None:
            if rng.random() >= 0.3:
                return value
            options = [v for v in col.enum if rules.allowed(table.name, col.name, v)]
            return rng.choice(options) if options else value
        if col.type in ("INTEGER", "REAL") and _is_number(value) and not is_time(col):
            scaled = rules.clamp(table.name, col, value * rng.uniform(0.6, 1.5))
            return scaled if rules.allowed(table.name, col.name, scaled) else value
        return value

    def _fits(
        self,
        table: Table,
        clone: dict[str, Any],
        source: dict[str, Any],
        existing: list[dict[str, Any]],
        rng: random.Random,
        faker: Faker,
    ) -> bool:
        """Make ``clone`` satisfy the schema (a column that breaks its constraints takes the
        source's value back, a unique one a fresh value); False when it still cannot."""
        rules = self.model.value_rules
        for name in rules.violations(table.name, clone):
            clone[name] = source.get(name)
        if rules.violations(table.name, clone):
            return False
        label = self.model.label[table.name]
        for col in table.columns:
            if col.primary_key or not (col.unique or col.name == label):
                continue
            used = {r.get(col.name) for r in existing}
            if clone.get(col.name) in used and not self._freshen(
                table, col, clone, used, rng, faker
            ):
                return False
        return all(
            tuple(clone.get(c) for c in group)
            not in {tuple(r.get(c) for c in group) for r in existing}
            for group in table.unique
        )

    def _freshen(
        self,
        table: Table,
        col: Column,
        clone: dict[str, Any],
        used: set[Any],
        rng: random.Random,
        faker: Faker,
    ) -> bool:
        """Give ``clone`` a value of ``col`` no other row has (and its constraints allow)."""
        value = clone.get(col.name)
        for _ in range(20):
            if col.type in ("INTEGER", "REAL") and _is_number(value):
                fresh: Any = max(v for v in used if _is_number(v)) + 1
            elif col.name == self.model.label[table.name] and isinstance(value, str):
                fresh = self._label(table, col, value, rng, faker)
            else:
                fresh = (
                    mimic(str(value), rng)
                    if re.search(r"\d", str(value))
                    else f"{value} {rng.randint(2, 99)}"
                )
            if fresh not in used and self.model.value_rules.allowed(table.name, col.name, fresh):
                clone[col.name] = fresh
                return True
        return False

    # -- phase 2 ---------------------------------------------------------------------------

    def _quota_rules(self) -> list[Rule]:
        return [
            r
            for r in self.model.spec.rules
            if r.category == "quota"
            and r.threshold is not None
            and r.threshold.value is not None
            and "." in r.threshold.quantity
        ]

    def _boundary(
        self,
        env: Environment,
        view: StateView,
        sampler: Sampler,
        rng: random.Random,
    ) -> dict[str, list[Any]]:
        """Drive each quota's counter to N-1 (and one to N) on a few parents, through the tools."""
        explorer = SymbolicExplorer(self.model, env, view, sampler, rng)
        explorer.grounding = False
        edge: dict[str, list[Any]] = {}
        for rule in self._quota_rules():
            assert rule.threshold is not None and rule.threshold.value is not None
            parent_table, counter = rule.threshold.quantity.split(".")
            tx = self.model.transaction_for(rule)
            if tx is None or not self.model.spec.has_table(parent_table):
                continue
            limit = int(rule.threshold.value)
            parents = list(view.rows(parent_table))
            rng.shuffle(parents)
            placed: list[Any] = []
            for parent in parents[:5]:
                goal = limit if len(placed) == 2 else limit - 1  # two at N-1, one full
                if self._fill(explorer, view, tx, parent_table, parent, counter, goal):
                    placed.append(row_key(self.model.spec.table(parent_table), parent))
                if len(placed) >= 3:
                    break
            if not placed:
                placed = self._from_examples(env, view, rule, parent_table, counter, limit)
            edge[rule.id] = placed
        return edge

    def _from_examples(
        self,
        env: Environment,
        view: StateView,
        rule: Rule,
        parent_table: str,
        counter: str,
        goal: int,
    ) -> list[Any]:
        """Fallback when no generic fill works: replay the spec's own boundary example up to the
        rejected call, which leaves its record full (at N)."""
        table = self.model.spec.table(parent_table)
        for example in rule.examples:
            idx = next((i for i, c in enumerate(example.calls) if c.expect == rule.id), None)
            if idx is None:
                continue
            setup = [c for c in example.calls[:idx] if c.expect == "ok"]
            snap = env.snapshot()
            if not all(env.call(c.tool, c.args).ok for c in setup):
                env.restore(snap)
                view.invalidate()
                continue
            view.invalidate()
            keys = [row_key(table, r) for r in view.rows(parent_table) if r.get(counter) == goal]
            if keys:
                return keys
        return []

    def _link(self, tx: Transaction, parent_table: str) -> str | None:
        """The column of the transaction's table that points at the parent (or the owner path)."""
        table = self.model.spec.table(self.model.tool(tx.tool).table)
        pk = self.model.spec.table(parent_table).primary_key[0].name
        return next((c.name for c in table.columns if c.references == f"{parent_table}.{pk}"), None)

    def _fill(
        self,
        explorer: SymbolicExplorer,
        view: StateView,
        tx: Transaction,
        parent_table: str,
        parent: dict[str, Any],
        counter: str,
        goal: int,
    ) -> bool:
        key = row_key(self.model.spec.table(parent_table), parent)
        actor = view.owner(parent_table, parent)
        link = self._link(tx, parent_table)
        if actor is None or link is None:
            return False
        for _ in range(3 * goal + 6):
            current = view.get(parent_table, key)
            if current is None or not isinstance(current.get(counter), int):
                return False
            if current[counter] >= goal:
                return bool(current[counter] == goal)
            explorer.witness = []
            explorer.achieve(tx, actor, aim=None, fixed={link: key})
        current = view.get(parent_table, key)
        return current is not None and current.get(counter) == goal
