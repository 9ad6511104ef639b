"""Phase 1 of the Set Designer, resource injection (LOGIGEN section 3.4), in four strategies.

- **Perturbed clones**: 2-5 look-alikes of each catalogue or actor table's rows, with new names
  (Faker, the spec's pools) and perturbed attributes inside the schema's constraints.
- **Substitutes**: one or two records of the same kind as an existing one (its intent columns
  kept, numbers within a few percent) under another name: an equivalent alternative.
- **Deliberate trade-offs**: for a rule whose condition tests a catalogue record named by one
  foreign key of a write (``NOT EXISTS (SELECT 1 FROM slots WHERE id = NEW.slot_id AND booked =
  0)``), a copy of a compliant record that is better on a visible number (cheaper, earlier) with
  one attribute the condition reads changed, kept only when the rule now rejects it and still
  accepts the original: the cheaper option breaks the rule, the compliant one costs more. The
  condition is evaluated by the database on a trial image, so no rule is parsed per domain.
- **High-cardinality noise**: ``Table.noise`` (the spec) or the generation plan's ``noise``
  near-identical records of one source row per catalogue table: same kind and attributes, new
  names, numbers within a few percent. Hundreds of them make a plain listing page, so the
  agent has to filter or sort (the query tools' ``order_by``, ``limit`` and ``offset``).

Every injected row is checked against the schema before use; the Set Designer falls back to the
seed rows when the injected ones do not load. The first strategy draws from the scene's RNG and
Faker exactly as before it had company; the others draw from an RNG of their own (derived from
the scene seed) after it, so adding them left the clones of existing datasets unchanged.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from typing import Any

from faker import Faker

from veritask.env import CompiledDomain, Environment, build_image
from veritask.policy import Column, Rule, Table
from veritask.synth._analysis import DomainModel, row_key
from veritask.synth._sampler import mimic
from veritask.synth._values import is_time, person_table, renamed, variant
from veritask.task import intent_columns, kind_table

Rows = dict[str, list[dict[str, Any]]]
NOISE_CAP = 1000
"""Most noise records one table takes (a spec or plan asking for more gets this many)."""
KIND_WORDS = frozenset({"category", "type", "family", "kind", "class"})
"""Words of a referencing column's name that say the referenced row classifies the record."""
TRADE_OFF_TRIES = 8
"""Records of a table tried as the compliant side of a trade-off."""
_NEW = re.compile(r"\bNEW\.([A-Za-z_][A-Za-z0-9_]*)")


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


def names_a_kind(model: DomainModel, table: Table) -> bool:
    """True for a reference table whose rows' names *are* what they classify (an expense
    category 'Meals', a fare type 'Saver', a port): no intent columns (``kind_table``), no
    people, no entity that holds one of them (a member's plan is an offer they switch
    between, and its look-alikes are the alternatives), a column that references it named for
    what it does (``category``, ``fare_type``, ``family``: ``KIND_WORDS``), and no number in
    any seeded name to redraw. A look-alike of such a row has no
    coherent name ('Everyday Training' is no category) and is never made: a clone, substitute
    or plan-wide noise row of it would only be another name for the same kind."""
    if table.tier != "reference" or not kind_table(table):
        return False
    if person_table(table, model.actor):
        return False
    classifies = False
    for other in model.spec.tables:
        refs = [c for c in other.columns if c.references]
        mine = [c for c in refs if c.references and c.references.split(".")[0] == table.name]
        if other.tier == "entity" and mine:
            return False  # a kind users hold and switch between (a member's plan) is an offer
        classifies |= any(set(c.name.split("_")) & KIND_WORDS for c in mine)
    if not classifies:
        return False  # a catalogue row a request picks (a book, a class) keeps its look-alikes
    label = model.label.get(table.name)
    names = [r.get(label) for r in model.spec.seed.get(table.name, [])] if label else []
    return not any(isinstance(n, str) and re.search(r"\d", n) for n in names)


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
    top = 999 if len(taken) < 300 else 99999  # hundreds of noise rows need longer codes
    for _ in range(1000):
        key = f"{prefix}_{rng.randint(100, top)}"
        if key not in taken:
            taken.add(key)
            return key
    raise RuntimeError("could not find a free key")


class ResourceInjector:
    """Adds injected records to a scene's rows (see the module docstring)."""

    def __init__(self, domain: CompiledDomain, model: DomainModel) -> None:
        self.domain = domain
        self.model = model
        self.counts: Counter[str] = Counter()
        """Records injected so far, per strategy (``clone``, ``substitute``, ``trade_off``,
        ``noise``): what the benchmarks measure."""

    def inject(
        self, rows: Rows, seed: int, rng: random.Random, faker: Faker, noise: int | None = None
    ) -> None:
        """Inject every strategy into ``rows`` (in place). ``noise``: the plan's volume of
        near-identical records per catalogue table (None: each table's ``noise`` field)."""
        tables = [t for t in self.model.spec.tables if _clonable(self.model, t)]
        alike = [t for t in tables if not names_a_kind(self.model, t)]
        for table in alike:
            self._inject(table, rows, rng, faker)
        own = random.Random(f"{seed}:inject")
        for table in alike:
            self._substitutes(table, rows, own, faker)
        self._trade_offs(rows, own, faker)
        for table in tables:
            # the plan's volume goes to look-alike tables; a kind table only takes its own
            volume = noise if noise is not None and table in alike else table.noise
            if volume and not self.model.owned(table.name) and table.name != self.model.actor:
                self._noise(table, rows, own, faker, min(volume, NOISE_CAP))

    # -- perturbed clones ------------------------------------------------------------------

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
                self.counts["clone"] += 1
                if table.name == self.model.actor:
                    self._belongings(source, clone, pk, rows, rng, faker)
        rows[table.name] = existing

    def _belongings(
        self,
        source: dict[str, Any],
        clone: dict[str, Any],
        key: str,
        rows: Rows,
        rng: random.Random,
        faker: Faker,
    ) -> None:
        """A cloned user gets look-alikes of the source user's own entity records (a
        customer's registered car): without them no request of theirs could be made, and the
        cast would stay the seeded few."""
        for table in self.model.spec.tables:
            path = self.model.owner_path.get(table.name, [])
            pk = table.primary_key
            if table.tier != "entity" or len(path) != 1 or path[0][1] != self.model.actor:
                continue
            if len(pk) != 1 or pk[0].type != "TEXT" or pk[0].autoincrement:
                continue
            existing = rows.get(table.name, [])
            taken = {str(r[pk[0].name]) for r in existing}
            label = self.model.label.get(self.model.actor) or ""
            old, new = str(source.get(label, "")), str(clone.get(label, ""))
            for row in [r for r in existing if r.get(path[0][0]) == source[key]]:
                copy = {k: renamed(v, old, new) for k, v in row.items()}  # "Ana's phone"
                copy[path[0][0]] = clone[key]
                copy[pk[0].name] = _new_key([], rng, taken, str(row[pk[0].name]))
                if self._fits(table, copy, row, existing, rng, faker):
                    existing.append(copy)

    def _clone(
        self, table: Table, source: dict[str, Any], rng: random.Random, faker: Faker
    ) -> dict[str, Any]:
        """A look-alike of ``source``: a new name and perturbed attributes."""
        clone = dict(source)
        label = self.model.label.get(table.name)
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
            if rng.random() >= 0.3 or col.name in intent_columns(table):
                return value  # what the row is (a part's position) stays with its name
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
        label = self.model.label.get(table.name)
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
            elif col.name == self.model.label.get(table.name) and isinstance(value, str):
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

    # -- substitutes and noise: near-identical records ----------------------------------------

    def _near(
        self, table: Table, source: dict[str, Any], rng: random.Random, faker: Faker, spread: float
    ) -> dict[str, Any]:
        """A copy of ``source`` under a new name, its numbers within ``spread`` of the
        source's (inside their constraints), everything else kept: the same kind of record."""
        clone = dict(source)
        label = self.model.label.get(table.name)
        rules = self.model.value_rules
        for col in table.columns:
            value: Any = source.get(col.name)
            if col.primary_key or col.references or col.computed:
                continue
            if col.name == label:
                clone[col.name] = self._label(table, col, str(value), rng, faker)
            elif col.enum is None and col.type in ("INTEGER", "REAL") and _is_number(value):
                if is_time(col) or _flag(col, [source]):
                    continue  # a time point or a flag says what the record is
                scaled = rules.clamp(table.name, col, value * rng.uniform(1 - spread, 1 + spread))
                clone[col.name] = scaled if rules.allowed(table.name, col.name, scaled) else value
        if label:
            self._agree(table, label, source, clone)
            self._derive(table, label, source, clone)
        return clone

    def _add_near(
        self,
        table: Table,
        rows: Rows,
        source: dict[str, Any],
        rng: random.Random,
        faker: Faker,
        spread: float,
        changes: dict[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        """Add one near-identical copy of ``source`` (with ``changes``) to ``rows`` (None when
        it does not fit the schema)."""
        existing = rows[table.name]
        pk = table.primary_key[0].name
        taken = {str(r[pk]) for r in existing}
        clone = {**self._near(table, source, rng, faker, spread), **(changes or {})}
        clone[pk] = _new_key([], rng, taken, str(source[pk]))
        if not self._fits(table, clone, source, existing, rng, faker):
            return None
        existing.append(clone)
        return clone

    def _substitutes(self, table: Table, rows: Rows, rng: random.Random, faker: Faker) -> None:
        """One or two records of the same kind as an existing one, under another name."""
        seeded = list(rows.get(table.name, []))
        if not seeded or not self.model.label.get(table.name):
            return
        pk = table.primary_key[0].name
        for _ in range(rng.randint(1, 2)):
            source = rng.choice(seeded)
            added = self._add_near(table, rows, source, rng, faker, 0.05)
            if added is not None:
                self.counts["substitute"] += 1
                if table.name == self.model.actor:
                    self._belongings(source, added, pk, rows, rng, faker)

    def _noise(
        self, table: Table, rows: Rows, rng: random.Random, faker: Faker, volume: int
    ) -> None:
        """``volume`` near-identical records of one source row (fewer when names run out)."""
        if not rows.get(table.name) or not self.model.label.get(table.name):
            return
        source = rng.choice(rows[table.name])
        misses = 0
        for _ in range(volume):
            if self._add_near(table, rows, source, rng, faker, 0.03) is None:
                misses += 1
                if misses > max(20, volume // 5):
                    return  # the name pools are spent
            else:
                self.counts["noise"] += 1

    # -- deliberate trade-offs -----------------------------------------------------------------

    def _tradeable(self) -> list[tuple[Rule, str, str, Table]]:
        """(rule, write tool, foreign key, catalogue table): rules whose guard and condition
        read nothing of the write but one foreign key to a clonable, unowned table."""
        out = []
        for rule in self.model.spec.rules:
            text = f"{rule.when or ''} {rule.condition}"
            new = set(_NEW.findall(text))
            tx = self.model.transaction_for(rule)
            if "OLD." in text or len(new) != 1 or tx is None:
                continue
            tool = self.model.tool(tx.tool)
            (fk,) = new
            table = self.model.spec.table(tool.table)
            column = table.column(fk) if fk in table.column_names else None
            if tool.kind != "insert" or column is None or column.references is None:
                continue
            parent = self.model.spec.table(column.references.split(".")[0])
            if _offerable(self.model, parent):
                out.append((rule, tx.tool, fk, parent))
        return out

    def _trade_offs(self, rows: Rows, rng: random.Random, faker: Faker) -> None:
        """For each tradeable rule, a better-looking record the rule rejects next to the
        compliant one it copies; candidates are judged on a trial image and kept only when
        the rule rejects the copy and accepts the original."""
        candidates: list[tuple[Rule, str, str, Table, dict[str, Any], dict[str, Any]]] = []
        for rule, tool, fk, table in self._tradeable():
            sources = list(rows.get(table.name, []))
            rng.shuffle(sources)
            for source in sources[:TRADE_OFF_TRIES]:
                clone = self._offer(rule, table, source, rows, rng, faker)
                if clone is not None:
                    candidates.append((rule, tool, fk, table, source, clone))
                    break
        if not candidates:
            return
        try:
            env = Environment(self.domain, build_image(self.model.spec, rows))
        except ValueError:
            env = None
        for rule, tool, fk, table, source, clone in candidates:
            keep = env is not None and self._breaks(env, rule, tool, fk, table, source, clone)
            if keep:
                self.counts["trade_off"] += 1
            else:
                rows[table.name].remove(clone)
        if env is not None:
            env.close()

    def _offer(
        self,
        rule: Rule,
        table: Table,
        source: dict[str, Any],
        rows: Rows,
        rng: random.Random,
        faker: Faker,
    ) -> dict[str, Any] | None:
        """A copy of ``source``, better on a number the rule does not read (a fifth less, or
        earlier) and with one attribute the rule reads changed; added to ``rows``."""
        text = f"{rule.when or ''} {rule.condition}"
        read = [c for c in table.columns if re.search(rf"\b{re.escape(c.name)}\b", text)]
        flips = [(c, v) for c in read for v in _other_values(c, source.get(c.name))]
        better = [
            c
            for c in table.columns
            if c not in read
            and not (c.primary_key or c.references or c.computed or c.technical)
            and c.type in ("INTEGER", "REAL")
            and c.enum is None
            and _is_number(source.get(c.name))
            and not _flag(c, rows[table.name])
        ]
        if not flips or not better:
            return None
        col, value = rng.choice(flips)
        num = rng.choice(better)
        rules = self.model.value_rules
        cheaper = rules.clamp(table.name, num, source[num.name] * 0.8)
        if num.type == "INTEGER":
            cheaper = min(int(cheaper), source[num.name] - 1)
        if cheaper >= source[num.name] or not rules.allowed(table.name, num.name, cheaper):
            return None
        return self._add_near(
            table, rows, source, rng, faker, 0.0, {col.name: value, num.name: cheaper}
        )

    def _breaks(
        self,
        env: Environment,
        rule: Rule,
        tool: str,
        fk: str,
        table: Table,
        source: dict[str, Any],
        clone: dict[str, Any],
    ) -> bool:
        """True when the rule rejects a write naming ``clone`` and accepts one naming
        ``source`` (its guard holding for both)."""

        def rejects(row: dict[str, Any]) -> bool | None:
            args = {fk: row_key(table, row)}
            if rule.when and not env.evaluate(rule.when, tool, args):
                return None
            found = env.evaluate(rule.condition, tool, args)
            return None if found is None else bool(found)

        return rejects(clone) is True and rejects(source) is False


def _offerable(model: DomainModel, table: Table) -> bool:
    """True for a table a trade-off may add a record to: a catalogue or entity table (not
    the user's own records) with a one-column text key."""
    pk = table.primary_key
    return (
        table.tier != "transaction"
        and table.name not in model.public_keys
        and not model.owned(table.name)
        and table.name != model.actor
        and len(pk) == 1
        and pk[0].type == "TEXT"
    )


def _flag(col: Column, rows: list[dict[str, Any]]) -> bool:
    """True for an integer column whose values are all 0 or 1."""
    return col.type == "INTEGER" and all(r.get(col.name) in (0, 1) for r in rows)


def _other_values(col: Column, value: Any) -> list[Any]:
    """Values a trade-off may give an attribute a rule reads: another enum value, the other
    flag."""
    if col.enum is not None:
        return [v for v in col.enum if v != value]
    if col.type == "INTEGER" and value in (0, 1) and not isinstance(value, bool):
        return [1 - value]
    return []


__all__ = ["NOISE_CAP", "ResourceInjector"]
