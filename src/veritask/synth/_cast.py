"""The cast: each task slot's user archetype, chosen before exploration, built and checked after.

LOGIGEN's Set Designer assembles a cast of Mismatch, Entangled, Rookie and Edge users. Here a
slot's archetype comes from a seeded, balanced schedule (``slot_archetype``; a plan may ask for a
mix or one archetype). The Explorer then looks for a task for that user, and ``CastBuilder``
builds the archetype on the origin state and the profile, or reports that the episode cannot
carry it (the slot is then re-tried or re-picked):

* Mismatch: the user believes a value one of the records the request names does not hold (the
  belief goes into the profile's false beliefs; the record is what the agent must trust);
* Entangled: the request writes under a parent record another of the user's records already
  hangs from (two bookings on one trip, two claims on one customer's limit);
* Rookie: the request leaves out a detail the write needs, which the agent must look up or work
  out (a record's id, an amount the policy computes);
* Edge: a write of the witness sits one change from a rule, on a boundary of any kind the rule's
  parsed condition has (``_boundaries``).

Every construction names the origin rows it stands on, so ``construction_problem`` can check it
from the origin state alone (plus the witness prefix, for an Edge call).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Collection, Mapping
from typing import Any

from veritask._util import derive_seed
from veritask.env import CompiledDomain, Environment
from veritask.synth._analysis import DomainModel, column_words, row_key
from veritask.synth._boundaries import OMISSION, STATED, Adjacency, Boundaries
from veritask.synth._refs import ref_text
from veritask.task import (
    ARCHETYPES,
    Archetype,
    Ask,
    BuiltRow,
    Construction,
    RowRef,
    TaskDescription,
    TaskPackage,
    WitnessCall,
)

PREFERENCE: dict[Archetype, int] = {a: i for i, a in enumerate(ARCHETYPES)}


def check_mix(mix: Mapping[str, float]) -> dict[str, float]:
    """A mix as a plain dict, refusing unknown archetypes and a mix with no positive weight."""
    unknown = sorted(set(mix) - set(ARCHETYPES))
    if unknown:
        raise ValueError(f"unknown archetype(s) {unknown}; known: {list(ARCHETYPES)}")
    out: dict[str, float] = {a: float(mix[a]) for a in ARCHETYPES if a in mix}
    if not any(w > 0 for w in out.values()):
        raise ValueError(f"an archetype mix needs a positive weight on one of {ARCHETYPES}")
    return out


def schedule(mix: Mapping[str, float] | None, size: int = 20) -> list[Archetype]:
    """One block of slots in the proportions of ``mix`` (largest remainder; None: all equal)."""
    weights = {a: float((mix or {}).get(a, 0.0 if mix else 1.0)) for a in ARCHETYPES}
    total = sum(w for w in weights.values() if w > 0)
    if total <= 0:
        raise ValueError(f"an archetype mix needs a positive weight on one of {ARCHETYPES}")
    if not mix:
        size = len(ARCHETYPES)
    exact = {a: size * max(w, 0.0) / total for a, w in weights.items()}
    counts = {a: int(v) for a, v in exact.items()}
    rest = sorted(ARCHETYPES, key=lambda a: (-(exact[a] - counts[a]), PREFERENCE[a]))
    for a in rest[: size - sum(counts.values())]:
        counts[a] += 1
    return [a for a in ARCHETYPES for _ in range(counts[a])]


def slot_archetype(index: int, seed: int, mix: Mapping[str, float] | None = None) -> Archetype:
    """The archetype of task slot ``index``: each block of slots holds the mix exactly, in an
    order seeded by (``seed``, block), so any run prefix stays near the mix."""
    block = schedule(mix)
    order = list(block)
    random.Random(derive_seed(seed, "cast", index // len(block))).shuffle(order)
    return order[index % len(block)]


PREEMPT = 1
"""Packages an archetype must be short of in a unit before it goes ahead of a slot's own."""


def wanted(
    slot: Archetype,
    retry: int,
    built: Mapping[str, int],
    mix: Mapping[str, float] | None,
    repick_after: int,
) -> list[Archetype]:
    """The archetypes a slot may take, in order of preference: when the unit already has its
    share of the slot's own archetype, those it is short of by ``PREEMPT`` packages or more
    against the mix (the shortest first); then the slot's own; then
    those short of less (after ``repick_after`` tries, any), the unit's rarest first. An
    archetype few episodes can carry (an Entangled user needs interlocking records) is then
    taken whenever an episode carries it, not only in its own slots, so the mix holds.
    A plan that asks for one archetype gets only that one."""
    weights = schedule(mix)
    if len(set(weights)) == 1:
        return [slot]
    made = sum(built.values()) + 1
    deficit = {a: made * weights.count(a) / len(weights) - built.get(a, 0) for a in ARCHETYPES}
    first = sorted(
        (a for a in ARCHETYPES if a != slot and deficit[a] >= PREEMPT and deficit[slot] <= 0),
        key=lambda a: -deficit[a],
    )
    short = [
        a for a in ARCHETYPES
        if a != slot and a not in first and (retry >= repick_after or deficit[a] > 0)
    ]  # fmt: skip
    return [*first, slot, *sorted(short, key=lambda a: built.get(a, 0))]


FAIR_SLACK = 1
"""Tasks a user may have in a unit above its least-used user and still be moved to the front."""


def fair_first(
    actors: list[Any], uses: Mapping[Any, int], preferred: Collection[Any], after: int = 0
) -> list[Any]:
    """``actors`` (already in draw order) with the ``preferred`` ones moved to position
    ``after``, except those with more than ``FAIR_SLACK`` tasks above the unit's least-used
    user: they keep their place in the draw order. A user the spec's examples name, or one
    whose records suit the slot, is then drawn first only while the unit's cast stays even,
    so no user takes the tasks every other one could also carry."""
    least = min((uses.get(a, 0) for a in actors), default=0)
    front = [a for a in actors if a in preferred and uses.get(a, 0) <= least + FAIR_SLACK]
    rest = [a for a in actors if a not in front]
    return rest[:after] + front + rest[after:]


def _match(view_rows: list[dict[str, Any]], ref: RowRef) -> dict[str, Any] | None:
    """The one row of ``view_rows`` a ref's plain values pick out (None: none or several)."""
    plain = {c: v for c, v in ref.match.items() if not isinstance(v, RowRef)}
    found = [r for r in view_rows if all(r.get(c) == v for c, v in plain.items())]
    return found[0] if len(found) == 1 else None


def _believed(value: Any, enum: list[Any] | None, rng: random.Random) -> Any:
    """A value the record does not hold, of the same kind."""
    if enum:
        others = [v for v in enum if v != value]
        return rng.choice(others) if others else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    step = max(1, round(abs(value) * rng.uniform(0.1, 0.3)))
    out = value + step if value <= 0 or rng.random() < 0.5 else value - step
    return int(out) if isinstance(value, int) else round(float(out), 2)


class CastBuilder:
    """Builds (and checks) the archetype constructions of one domain's packages."""

    def __init__(self, domain: CompiledDomain, model: DomainModel) -> None:
        self.domain = domain
        self.model = model
        self.boundaries = Boundaries(model.spec)
        self.env = Environment(domain)
        self.kinds: Counter[str] = Counter()
        """Edge constructions per boundary kind so far (the rarest kind is placed first)."""
        self.categories: Counter[str] = Counter()
        """Boundary-seeded constructions per rule category so far (the rarest goes first)."""
        self._owners: dict[int, set[str]] = {}

    def reset(self) -> None:
        """Forget the boundary kinds placed so far (at the start of each unit, so a unit's
        packages depend on the unit alone and a resumed run gives the same bytes)."""
        self.kinds = Counter()
        self.categories = Counter()

    def close(self) -> None:
        """Release the scratch database."""
        self.env.close()

    # -- state helpers ----------------------------------------------------------------------

    def _rows(self, table: str) -> list[dict[str, Any]]:
        return self.env.rows(table)

    def _get(self, table: str, key: Any) -> dict[str, Any] | None:
        t = self.model.spec.table(table)
        return next((r for r in self._rows(table) if row_key(t, r) == key), None)

    def _owner(self, table: str, row: dict[str, Any]) -> Any:
        if table == self.model.actor:
            return row_key(self.model.spec.table(table), row)
        current: dict[str, Any] | None = row
        for col, parent in self.model.owner_path.get(table, []):
            if current is None:
                return None
            if parent == self.model.actor:
                return current[col]
            current = self._get(parent, current[col])
        return None

    # -- building ---------------------------------------------------------------------------

    def build(
        self,
        archetype: Archetype,
        pkg: TaskPackage,
        origin: bytes,
        edge_rows: Mapping[str, list[Any]] | None = None,
    ) -> Construction | None:
        """The construction of ``archetype`` for a package on ``origin``, or None when the
        episode does not carry it."""
        self.env.restore(origin)
        if archetype == "mismatch":
            return self._mismatch(pkg)
        if archetype == "entangled":
            return self._entangled(pkg)
        if archetype == "rookie":
            return self._rookie(pkg, origin)
        return self._edge(pkg, origin, edge_rows or {})

    def _mismatch(self, pkg: TaskPackage) -> Construction | None:
        rng = random.Random(derive_seed(pkg.seed, "mismatch"))
        written = {c for call in pkg.witness if call.ok for c in call.args}
        for ask in _asks(pkg.task):
            for ref in ([ask.target] if ask.target else []) + list(ask.refs.values()):
                found = self._belief(ref, written, rng)
                if found is not None:
                    row, col, believed = found
                    t = self.model.spec.table(ref.table)
                    words = f"{ref_text(self.model, ref, pkg.user_profile.user_id)}"
                    what = f"You believe {words} has {column_words(col)} {believed}."
                    built = BuiltRow(
                        table=ref.table, key=row_key(t, row), column=col, value=row[col]
                    )
                    return Construction(
                        archetype="mismatch", what=what, rows=[built], belief=believed
                    )
        return None

    def _belief(
        self, ref: RowRef, written: set[str], rng: random.Random
    ) -> tuple[dict[str, Any], str, Any] | None:
        """A row a ref names, one of its columns and a value it does not hold."""
        table = self.model.spec.table(ref.table)
        row = _match(self._rows(ref.table), ref)
        if row is None:
            return None
        label = self.model.label.get(ref.table)
        for col in table.columns:
            if (
                col.primary_key
                or col.references
                or col.computed
                or col.technical
                or col.name in ref.match
                or col.name in written
                or col.name == label
                or row.get(col.name) is None
            ):
                continue
            believed = _believed(row[col.name], col.enum, rng)
            if believed is not None and believed != row[col.name]:
                return row, col.name, believed
        return None

    def _children(self, parent: str, key: Any) -> list[tuple[str, dict[str, Any]]]:
        """Rows of any table pointing at ``parent`` row ``key``."""
        pk = self.model.spec.table(parent).primary_key[0].name
        out = []
        for table in self.model.spec.tables:
            for col in table.columns:
                if col.references == f"{parent}.{pk}":
                    out += [
                        (table.name, r) for r in self._rows(table.name) if r.get(col.name) == key
                    ]
        return out

    def _parents(self, call: WitnessCall) -> list[tuple[str, Any, Any, str]]:
        """(parent table, parent key, the written row's key or None, the shared limit) of a
        write call: records it points at that are not the user, and the user's own record
        when a quota on the written table counts on it (the limit its records share)."""
        tool = self.model.tool(call.tool)
        table = self.model.spec.table(tool.table)
        values = dict(call.args)
        written = None
        if tool.kind == "update" and tool.key is not None:
            written = call.args.get(tool.key)
            values = {**(self._get(table.name, written) or {}), **values}
        limits = {
            r.threshold.quantity.split(".")[0]: r.id
            for r in self.model.spec.rules
            if r.table == table.name and r.threshold is not None and "." in r.threshold.quantity
        }
        out = []
        for col in table.columns:
            if not col.references or values.get(col.name) is None:
                continue
            parent = col.references.split(".")[0]
            if parent == self.model.actor and parent in limits:
                out.append((parent, values[col.name], written, limits[parent]))
            elif parent != self.model.actor and self.model.owned(parent):
                out.append((parent, values[col.name], written, limits.get(parent, "")))
        return out

    def entangled_owners(self, origin: bytes) -> set[str]:
        """Users with a record another one can interlock with (hanging from one record, or
        sharing one of the user's limits): a new record under it, or a write on another of
        its siblings, makes the pair. The Entangled users of a scene, whom an Entangled slot
        tries first (while the unit's cast stays even, ``fair_first``)."""
        key = hash(origin)
        if key not in self._owners:
            self.env.restore(origin)
            counts: Counter[tuple[str, Any]] = Counter()
            for table in self.model.spec.tables:
                for col in table.columns:
                    parent = col.references.split(".")[0] if col.references else None
                    if parent is None or not self._may_share(table.name, parent):
                        continue
                    for r in self._rows(table.name):
                        if r.get(col.name) is not None:
                            counts[(parent, r[col.name])] += 1
            owners = set()
            for parent, pkey in counts:  # one record is enough: the request's write is the other
                row = self._get(parent, pkey)
                if row is not None:
                    owners.add(str(self._owner(parent, row)))
            self._owners = {key: owners}
        return self._owners[key]

    def _may_share(self, table: str, parent: str) -> bool:
        """Whether records of ``table`` hanging from one ``parent`` row interlock: the parent
        is another owned record, or the user themselves with a quota counting those records."""
        if parent != self.model.actor:
            return self.model.owned(parent)
        return any(
            r.table == table and r.threshold is not None
            and r.threshold.quantity.split(".")[0] == parent
            for r in self.model.spec.rules
        )  # fmt: skip

    def _entangled(self, pkg: TaskPackage) -> Construction | None:
        actor = pkg.user_profile.user_id
        for i, call in enumerate(pkg.witness):
            if not call.ok or not self.model.writes(call.tool):
                continue
            table = self.model.tool(call.tool).table
            for parent, key, written, limit in self._parents(call):
                if self._get(parent, key) is None:
                    continue  # made by the episode itself
                others = [
                    (t, r)
                    for t, r in self._children(parent, key)
                    if str(self._owner(t, r)) == actor
                    and not (t == table and row_key(self.model.spec.table(t), r) == written)
                    and (parent != self.model.actor or t == table)
                ]
                others.sort(key=lambda tr: tr[0] == table)  # another table first
                if others:
                    t, r = others[0]
                    rows = [
                        BuiltRow(table=parent, key=key),
                        BuiltRow(table=t, key=row_key(self.model.spec.table(t), r)),
                    ]
                    if written is not None:
                        rows.append(BuiltRow(table=table, key=written))
                    what = f"the request writes under {parent} {key}, which {t} record {rows[1].key} also hangs from"
                    if limit:
                        what += f" (both count toward {limit})"
                    return Construction(
                        archetype="entangled", what=what, rows=rows, call=i, rule=limit or None
                    )
        return self._entangled_through(pkg)

    def _entangled_through(self, pkg: TaskPackage) -> Construction | None:
        """Entangled one level up: the record a write points at hangs, with another of the
        user's records, from one record (an exchange of one item of an order that has other
        items)."""
        actor = pkg.user_profile.user_id
        for i, call in enumerate(pkg.witness):
            if not call.ok or not self.model.writes(call.tool):
                continue
            for parent, key, _, _ in self._parents(call):
                row = self._get(parent, key) if parent != self.model.actor else None
                for col in self.model.spec.table(parent).columns if row else []:
                    up = col.references.split(".")[0] if col.references else None
                    if up is None or up == self.model.actor or not self.model.owned(up):
                        continue
                    assert row is not None
                    sibling = next(
                        (r for t, r in self._children(up, row[col.name])
                         if t == parent and r is not row and row_key(self.model.spec.table(t), r) != key
                         and str(self._owner(t, r)) == actor),
                        None,
                    )  # fmt: skip
                    if sibling is not None:
                        other = row_key(self.model.spec.table(parent), sibling)
                        rows = [
                            BuiltRow(table=up, key=row[col.name]),
                            BuiltRow(table=parent, key=other),
                            BuiltRow(table=parent, key=key),
                        ]
                        what = f"the request touches {parent} {key}, which hangs from {up} {row[col.name]} with {parent} {other}"
                        return Construction(archetype="entangled", what=what, rows=rows, call=i)
        return None

    def _rookie(self, pkg: TaskPackage, origin: bytes) -> Construction | None:
        asks = _asks(pkg.task)
        found: list[tuple[int, list[str], str | None]] = []
        self.env.restore(origin)
        for i, call in enumerate(pkg.witness):
            same = [a for a in asks if a.tool == call.tool]
            if call.ok and self.model.writes(call.tool) and same:
                stated = {c for a in same for c in (*a.values, *a.refs)}
                key = self.model.tool(call.tool).key
                omitted = [
                    c for c in call.args
                    if c not in stated and c != key and not self._actor_link(call.tool, c)
                ]  # fmt: skip
                if omitted:
                    found.append((i, omitted, self._omission_rule(call.tool, call.args, omitted)))
            self.env.call(call.tool, call.args)
        if not found:
            self.env.restore(origin)
            return self._rookie_lookup(pkg, asks)
        i, omitted, rule = min(found, key=lambda f: f[2] is None)  # at a boundary first
        what = f"the request leaves out {', '.join(omitted)}, which the agent must work out"
        if rule is None:
            return Construction(archetype="rookie", what=what, omitted=omitted, call=i)
        self.categories[self.model.spec.rule(rule).category] += 1
        return Construction(
            archetype="rookie", what=what, omitted=omitted, call=i, rule=rule,
            boundary=OMISSION, detail=f"leaving out {', '.join(omitted)} breaks {rule}",
        )  # fmt: skip

    def _omission_rule(self, tool: str, args: dict[str, Any], omitted: list[str]) -> str | None:
        """The rule a write (on the state the scratch database holds) sits one omission
        from, the least-seeded rule category first; None when there is none."""
        rules = [r for r, _ in self.boundaries.omission(self.env, tool, args, omitted)]
        if not rules:
            return None
        return min(rules, key=lambda r: self.categories[self.model.spec.rule(r).category])

    def _rookie_lookup(self, pkg: TaskPackage, asks: list[Ask]) -> Construction | None:
        """A Rookie who names a record by its label, never by its id: the agent looks the id
        up (a query of that table precedes the write)."""
        for i, call in enumerate(pkg.witness):
            if not call.ok or not self.model.writes(call.tool):
                continue
            same = [a for a in asks if a.tool == call.tool]
            for col in call.args:
                if same and all(_named_not_keyed(self.model, a, col) for a in same):
                    parent = same[0].refs[col].table
                    if _queried(self.model, pkg.witness[:i], parent):
                        what = f"the request names the {column_words(col)} without its id, which the agent must look up"
                        return Construction(
                            archetype="rookie", what=what, omitted=[col], call=i, detail="looked up"
                        )
        return None

    def _actor_link(self, tool: str, column: str) -> bool:
        """Whether a column of a tool's table points at the acting user (always known)."""
        table = self.model.spec.table(self.model.tool(tool).table)
        if column not in table.column_names:
            return False
        ref = table.column(column).references or ""
        return ref.split(".")[0] == self.model.actor

    def _edge(
        self, pkg: TaskPackage, origin: bytes, edge_rows: Mapping[str, list[Any]]
    ) -> Construction | None:
        found = self.edge_call(pkg.witness, origin, set(pkg.rules_exercised), _asks(pkg.task))
        if found is None:
            return None
        i, adj = found
        rows = []
        quota = self.model.spec.rule(adj.rule).threshold if adj.kind == "quota" else None
        if quota is not None and "." in quota.quantity and edge_rows.get(adj.rule):
            table, counter = quota.quantity.split(".")[:2]
            self.env.restore(origin)
            for key in edge_rows[adj.rule]:
                row = self._get(table, key)
                if row is not None:
                    rows.append(BuiltRow(table=table, key=key, column=counter, value=row[counter]))
        what = f"call {i} sits one change ({adj.describe()}) from {adj.rule}"
        return Construction(
            archetype="edge", what=what, rows=rows, rule=adj.rule, boundary=adj.kind,
            call=i, detail=adj.describe(), omitted=[adj.stated] if adj.stated else [],
        )  # fmt: skip

    def edge_call(
        self,
        witness: list[WitnessCall],
        origin: bytes,
        hit: set[str],
        asks: list[Ask] | None = None,
    ) -> tuple[int, Adjacency] | None:
        """A write of ``witness`` one change from a rule, replaying the witness from
        ``origin``: of the boundary kind placed least so far (``kinds``), a rule the episode
        also hit first, then the earliest call. A write one stated value from a rule
        (``stated``: the request states what the rule requires) is a candidate only while
        the rule's category has no boundary in the unit."""
        self.env.restore(origin)
        found: list[tuple[int, Adjacency]] = []
        for i, call in enumerate(witness):
            if call.ok and self.model.writes(call.tool):
                found += [(i, a) for a in self.boundaries.adjacent(self.env, call.tool, call.args)]
                found += [(i, a) for a in self._stated(call, asks or [])]
            self.env.call(call.tool, call.args)
        if not found:
            return None

        def placed(f: tuple[int, Adjacency]) -> int:
            return self.kinds[f[1].kind] + self.categories[self.model.spec.rule(f[1].rule).category]

        best = min(found, key=lambda f: (placed(f), f[1].rule not in hit, f[0]))
        self.kinds[best[1].kind] += 1
        self.categories[self.model.spec.rule(best[1].rule).category] += 1
        return best

    def _stated(self, call: WitnessCall, asks: list[Ask]) -> list[Adjacency]:
        """The ``stated`` boundaries of a write (on the state the scratch database holds): rules
        of a category not yet placed in the unit that the write passes and that a request
        leaving out (or changing) one of the values the user states would break."""
        stated = sorted({c for a in asks if a.tool == call.tool for c in a.values})
        pairs = self.boundaries.omission(self.env, call.tool, call.args, stated) if stated else []
        return [
            Adjacency(rule, STATED, (), stated=col)
            for rule, col in pairs
            if not self.categories[self.model.spec.rule(rule).category]
        ]


def _named_not_keyed(model: DomainModel, ask: Ask, column: str) -> bool:
    """Whether an ask names ``column``'s record by its values, not by its primary key."""
    ref = ask.refs.get(column)
    if ref is None or column in ask.values:
        return False
    pk = model.spec.table(ref.table).primary_key
    return bool(pk) and pk[0].name not in ref.match


def _queried(model: DomainModel, calls: list[WitnessCall], table: str) -> bool:
    """Whether one of ``calls`` reads ``table``."""
    return any(
        c.ok and not model.writes(c.tool) and model.tool(c.tool).table == table for c in calls
    )


def _asks(task: TaskDescription) -> list[Ask]:
    out: list[Ask] = []
    for sub in task.sub_goals:
        if sub.ask is not None:
            out.append(sub.ask)
        out += [f.then for f in sub.fallbacks if f.then is not None]
    return out


def construction_problem(builder: CastBuilder, pkg: TaskPackage, origin: bytes) -> str | None:
    """Why a package's archetype construction is not present in its origin (None: it is)."""
    built = pkg.construction
    if built is None:
        return "no construction"
    if built.archetype != pkg.user_profile.archetype:
        return "the profile names another archetype"
    builder.env.restore(origin)
    for row in built.rows:
        found = builder._get(row.table, row.key)
        if found is None:
            return f"{row.table} {row.key} is not in the origin"
        if row.column is not None and found.get(row.column) != row.value:
            return f"{row.table} {row.key}.{row.column} is not {row.value!r} in the origin"
    check = _CHECKS[built.archetype]
    return check(builder, pkg, built, origin)


def _check_mismatch(
    _b: CastBuilder, pkg: TaskPackage, built: Construction, _o: bytes
) -> str | None:
    if not built.rows or built.belief == built.rows[0].value:
        return "the belief is what the record holds"
    return None if built.what in pkg.task.false_beliefs else "the belief is not stated"


def _check_entangled(
    b: CastBuilder, pkg: TaskPackage, built: Construction, _o: bytes
) -> str | None:
    parent, sibling = built.rows[0], built.rows[1]
    row = b._get(sibling.table, sibling.key) or {}
    pk = b.model.spec.table(parent.table).primary_key[0].name
    links = [
        c.name
        for c in b.model.spec.table(sibling.table).columns
        if c.references == f"{parent.table}.{pk}" and row.get(c.name) == parent.key
    ]
    if not links:
        return "the other record does not hang from the parent"
    if str(b._owner(sibling.table, row)) != pkg.user_profile.user_id:
        return "the other record is not the user's"
    if parent.table == b.model.actor:
        rule = b.model.spec.rule(built.rule) if built.rule else None
        quantity = rule.threshold.quantity if rule and rule.threshold else ""
        if quantity.split(".")[0] != parent.table or rule is None or rule.table != sibling.table:
            return "the user's records share no limit"
    return None


def _check_rookie(
    b: CastBuilder, pkg: TaskPackage, built: Construction, origin: bytes
) -> str | None:
    if built.call is None or not built.omitted:
        return "no omitted detail"
    call = pkg.witness[built.call]
    if not set(built.omitted) <= set(call.args):
        return "the write does not set the omitted detail"
    if built.detail == "looked up":
        same = [a for a in _asks(pkg.task) if a.tool == call.tool]
        named = same and all(_named_not_keyed(b.model, a, built.omitted[0]) for a in same)
        return None if named else "the request does not name the record by its label alone"
    for ask in _asks(pkg.task):
        if ask.tool == call.tool and set(built.omitted) & (set(ask.values) | set(ask.refs)):
            return "the request states the omitted detail"
    return None if built.rule is None else _check_omission(b, pkg, built, origin)


def _check_omission(
    b: CastBuilder, pkg: TaskPackage, built: Construction, origin: bytes
) -> str | None:
    """Whether the write sits one omission from ``built.rule`` on the state it met."""
    assert built.call is not None
    b.env.restore(origin)
    for call in pkg.witness[: built.call]:
        b.env.call(call.tool, call.args)
    call = pkg.witness[built.call]
    rules = {r for r, _ in b.boundaries.omission(b.env, call.tool, call.args, built.omitted)}
    return (
        None if built.rule in rules else f"call {built.call} is not one omission from {built.rule}"
    )


def _check_edge(b: CastBuilder, pkg: TaskPackage, built: Construction, origin: bytes) -> str | None:
    if built.call is None or built.rule is None:
        return "no boundary call"
    b.env.restore(origin)
    for call in pkg.witness[: built.call]:
        b.env.call(call.tool, call.args)
    call = pkg.witness[built.call]
    if built.boundary == STATED:
        return _check_stated(b, pkg, built, call)
    rules = {a.rule for a in b.boundaries.adjacent(b.env, call.tool, call.args)}
    return None if built.rule in rules else f"call {built.call} is not one change from {built.rule}"


def _check_stated(
    b: CastBuilder, pkg: TaskPackage, built: Construction, call: WitnessCall
) -> str | None:
    """Whether the request states the value of ``built.omitted`` and the write (on the state it
    met, already replayed into ``b.env``) breaks ``built.rule`` without it."""
    col = built.omitted[0] if built.omitted else ""
    if not any(a.tool == call.tool and col in a.values for a in _asks(pkg.task)):
        return f"the request does not state {col or 'a value'}"
    rules = {r for r, _ in b.boundaries.omission(b.env, call.tool, call.args, [col])}
    if built.rule not in rules:
        return f"call {built.call} is not one stated value from {built.rule}"
    return None


_CHECKS = {
    "mismatch": _check_mismatch,
    "entangled": _check_entangled,
    "rookie": _check_rookie,
    "edge": _check_edge,
}
