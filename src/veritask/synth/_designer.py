"""The Set Designer: builds s_origin from a spec and a seed (LOGIGEN section 3.4).

Phase 1, resource injection (``_inject.py``): perturbed clones, substitutes, deliberate
trade-offs (a cheaper option a rule rejects next to the compliant one) and high-cardinality
noise (near-identical records in a volume the spec or the plan sets).
Phase 2, cast assembly and boundary-adjacent seeding: history is written through the domain's own
write tools, so counters and effects stay consistent. Cast assembly gives each standing user (the
spec's own actors) a record in every table a procedure changes that they own none of
(``_assemble``), so every user is eligible for the procedures on it and the cast can be drawn
evenly; then every quota a rule guards is driven to N-1 for some of the cast. The state is then
rebased: it is the root the tasks are diffed against.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from typing import Any

from faker import Faker

from veritask.env import CompiledDomain, Environment, build_image
from veritask.policy import Rule, Transaction
from veritask.synth._analysis import DomainModel, row_key
from veritask.synth._explorer import SymbolicExplorer
from veritask.synth._inject import ResourceInjector
from veritask.synth._sampler import Sampler, StateView

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


class SymbolicSetDesigner:
    """Builds origin states without an LLM."""

    noise: int | None = None
    """The plan's volume of near-identical records per catalogue table (None: the spec's)."""

    def __init__(self, domain: CompiledDomain, model: DomainModel) -> None:
        self.domain = domain
        self.model = model
        self.injector = ResourceInjector(domain, model)

    def design(self, index: int, seed: int, fill: bool = True) -> Scene:
        """The origin of scene ``index`` (deterministic in ``seed``). With ``fill=False`` the
        seed's own records keep the state the spec's examples were written against (the seed
        already holds boundary cases); only new resources are injected."""
        rng = random.Random(seed)
        faker = faker_for(seed)
        rows = copy.deepcopy({k: [dict(r) for r in v] for k, v in self.model.spec.seed.items()})
        self.injector.inject(rows, seed, rng, faker, self.noise)  # phase 1: _inject.py
        env = Environment(self.domain, self._image(rows))
        view = StateView(self.model, env)
        sampler = Sampler(self.model, view, rng, faker)
        actors = [
            row_key(self.model.spec.table(self.model.actor), r) for r in view.rows(self.model.actor)
        ]
        if fill:
            self._assemble(env, view, sampler, rng)
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

    # -- phase 2 ---------------------------------------------------------------------------

    def _assembled_tables(self) -> list[tuple[str, Transaction]]:
        """(table, insert procedure) of every owned table some update procedure changes, and
        of the tables on their way to the user, nearest the user first."""
        model = self.model
        updated = {
            model.tool(tx.tool).table
            for tx in model.write_transactions
            if model.tool(tx.tool).kind == "update"
        }
        tables = {t for t in updated if t != model.actor and model.owned(t)}
        tables |= {p for t in tables for _, p in model.owner_path[t] if p != model.actor}
        out = []
        for table in sorted(tables, key=lambda t: (len(model.owner_path[t]), t)):
            tx = next(
                (
                    tx
                    for tx in model.write_transactions
                    if model.tool(tx.tool).kind == "insert" and model.tool(tx.tool).table == table
                ),
                None,
            )
            if tx is not None:
                out.append((table, tx))
        return out

    def _assemble(
        self, env: Environment, view: StateView, sampler: Sampler, rng: random.Random
    ) -> None:
        """Cast assembly: each of the spec's own users who owns no record of a table a
        procedure changes gets one, made through the domain's insert procedure (a user the
        policy refuses one, such as an inactive account, keeps none). A record whose making
        changes a row nobody owns (a book lent out, a seat taken) is undone: the resources the
        tasks compete for stay as the seed and the injection left them."""
        actor_table = self.model.spec.table(self.model.actor)
        standing = [row_key(actor_table, r) for r in self.model.spec.seed.get(self.model.actor, [])]
        tables = self._assembled_tables()
        if not tables or not standing:
            return
        explorer = SymbolicExplorer(self.model, env, view, sampler, rng)
        explorer.grounding = False
        shared = [t.name for t in self.model.spec.tables if not self.model.owned(t.name)]
        for table, tx in tables:
            for actor in standing:
                if any(view.owner(table, r) == actor for r in view.rows(table)):
                    continue
                before = env.snapshot()
                common = [env.rows(t) for t in shared]
                explorer.witness = []
                explorer.achieve(tx, actor, aim=None)
                if [env.rows(t) for t in shared] != common:
                    env.restore(before)  # it used up a shared resource (a book lent out)
                view.invalidate()

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
