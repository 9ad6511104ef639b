"""Sampling tool arguments from the current state, the spec and a seeded RNG."""

from __future__ import annotations

import random
import re
import string
from typing import Any

from faker import Faker

from veritask.env import Environment
from veritask.policy import Column, Rule, Table, Transaction
from veritask.synth._analysis import DomainModel, implicated_columns, row_key, target_key
from veritask.synth._values import free_text, is_time, keep_time_order, kind_variant
from veritask.task import Ask, clock_column, intent_columns

_WORD = re.compile(r"[A-Za-z0-9_\-]+")
"""A word of free text as an id would stand in it."""

_TEXT_TRIES = 8
UNVARIED_SHARE = 1.0
"""How often a spec example whose every value its rule reads is used as it stands (the other
times it yields an empty request, which no rule collides with). 1.0: a lower share (0.2 cut
the ferry desk's replays of one example from 12 to 2 requests in 300) also lost a refusal built
from an example (mock, seed 3)."""


def _name_words(value: Any) -> set[str]:
    """The capitalised words of a name, of four letters or more."""
    if not isinstance(value, str):
        return set()
    return {w for w in re.findall(r"[A-Z][a-z]{3,}", value)}


def _prose(col: Column) -> bool:
    """Text that is no name, code, key or category: a candidate for a sentence."""
    return (
        col.type == "TEXT"
        and col.enum is None
        and not col.references
        and not col.primary_key
        and not col.unique
    )


def mimic(value: str, rng: random.Random) -> str:
    """A new string shaped like ``value``: letters stay letters, digits stay digits."""
    out = []
    for ch in value:
        if ch.isdigit():
            out.append(rng.choice(string.digits))
        elif ch.isupper():
            out.append(rng.choice(string.ascii_uppercase))
        elif ch.islower():
            out.append(rng.choice(string.ascii_lowercase))
        else:
            out.append(ch)
    return "".join(out)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class StateView:
    """Rows of the environment's current state, cached until the next write."""

    def __init__(self, model: DomainModel, env: Environment) -> None:
        self.model = model
        self.env = env
        self._rows: dict[str, list[dict[str, Any]]] = {}
        self._by_key: dict[str, dict[Any, dict[str, Any]]] = {}

    generation = 0
    now: int | float | None = None
    """The latest request time (``clock_column``) the task being made has stated: later
    requests are made no earlier (one clock per task). None at the start of a task."""

    def stated(self, ask: Ask) -> Ask:
        """Note the request times ``ask`` states (see ``now``); ``ask`` itself."""
        table = self.model.spec.table(self.model.tool(ask.tool).table)
        for name, value in ask.values.items():
            if (
                _is_number(value)
                and name in table.column_names
                and clock_column(table.column(name))
                and (self.now is None or value > self.now)
            ):
                self.now = value
        return ask

    def invalidate(self) -> None:
        """Forget cached rows (call after a write or a restore)."""
        self._rows.clear()
        self._by_key.clear()
        self.generation += 1

    def rows(self, table: str) -> list[dict[str, Any]]:
        """All rows of a table."""
        if table not in self._rows:
            self._rows[table] = self.env.rows(table)
        return self._rows[table]

    def get(self, table: str, key: Any) -> dict[str, Any] | None:
        """The row of ``table`` with primary key ``key``."""
        if table not in self._by_key:
            t = self.model.spec.table(table)
            self._by_key[table] = {row_key(t, r): r for r in self.rows(table)}
        return self._by_key[table].get(key)

    def owner(self, table: str, row: dict[str, Any]) -> Any:
        """The actor a row belongs to, following the ownership path; None when unowned."""
        if table == self.model.actor:
            return row_key(self.model.spec.table(table), row)
        current: dict[str, Any] | None = row
        for col, parent in self.model.owner_path.get(table, []):
            if current is None:
                return None
            value = current[col]
            if parent == self.model.actor:
                return value
            current = self.get(parent, value)
        return None

    def owned_rows(self, table: str, actor: Any) -> list[dict[str, Any]]:
        """Rows of ``table`` that belong to ``actor``."""
        return [r for r in self.rows(table) if self.owner(table, r) == actor]


class Sampler:
    """Draws plausible arguments for a transaction on behalf of an actor."""

    def __init__(
        self, model: DomainModel, view: StateView, rng: random.Random, faker: Faker
    ) -> None:
        self.model = model
        self.view = view
        self.rng = rng
        self.faker = faker
        self._pools: dict[tuple[str, str, int], list[int | float]] = {}

    def target_rows(self, tx: Transaction, actor: Any) -> list[dict[str, Any]]:
        """Rows an update transaction could apply to for this actor."""
        table = self.model.tool(tx.tool).table
        return (
            self.view.owned_rows(table, actor) if self.model.owned(table) else self.view.rows(table)
        )

    def fk_candidates(self, col: Column, actor: Any, on_path: bool) -> list[Any]:
        """Keys a foreign-key argument may take."""
        assert col.references is not None
        parent, key = col.references.split(".")
        if parent == self.model.actor and on_path:
            return [actor]
        if not self.model.owned(parent) or parent == self.model.actor:
            return [r[key] for r in self.view.rows(parent)]
        if self.other_role(col):
            # an approver decides the claims assigned to them, never their own
            others = [r for r in self.view.rows(parent) if self.view.owner(parent, r) != actor]
            role = self._role_column(col)
            mine = [r for r in others if role is not None and r.get(role) == actor]
            return [r[key] for r in (mine if role is not None else others)]
        return [r[key] for r in self.view.owned_rows(parent, actor)]

    def _role_column(self, col: Column) -> str | None:
        """The column of ``col``'s record that names the actor in the role the writing row
        acts in (a claim's ``approver_id`` for a decision's ``approver_id``), if it has one."""
        assert col.references is not None
        parent = self.model.spec.table(col.references.split(".")[0])
        table = next(t for t in self.model.spec.tables if any(c is col for c in t.columns))
        own = self.model.owner_path[table.name][0][0]
        ref = parent.column(own).references if own in parent.column_names else None
        return own if ref is not None and ref.split(".")[0] == self.model.actor else None

    def other_role(self, col: Column) -> bool:
        """True when the row a write makes acts on ``col``'s record in another role than the
        one that owns it: both tables belong to the actor directly, through columns of
        different names (a decision's ``approver_id``, the claim's ``claimant_id``). Separation
        of duties follows: the records offered are other people's."""
        assert col.references is not None
        parent = col.references.split(".")[0]
        table = next(
            (t.name for t in self.model.spec.tables if any(c is col for c in t.columns)), None
        )
        mine = self.model.owner_path.get(table or "", [])
        theirs = self.model.owner_path.get(parent, [])
        return (
            len(mine) == 1
            and len(theirs) == 1
            and mine[0][1] == theirs[0][1] == self.model.actor
            and mine[0][0] != theirs[0][0]
        )

    _pool_gen = -1

    def number_pool(
        self, table: Table, col: Column, target: dict[str, Any] | None
    ) -> list[int | float]:
        """Candidate numbers: values seen in the column, boundary numbers from rules and
        thresholds (N-1, N, N+1), and, for updates, values near the target row's numbers.
        Cached until the state changes."""
        if self._pool_gen != self.view.generation:
            self._pools.clear()
            self._pool_gen = self.view.generation
        key = (table.name, col.name, id(target) if target is not None else 0)
        cached = self._pools.get(key)
        if cached is None:
            cached = self._pools[key] = self._number_pool(table, col, target)
        now = self.view.now
        if now is not None and clock_column(col):
            # one clock per task: no request is made before one the task already made
            later = [v for v in cached if v >= now]
            allowed = self.model.value_rules.allowed(table.name, col.name, now)
            return later or ([now] if allowed else cached)
        return cached

    def _number_pool(
        self, table: Table, col: Column, target: dict[str, Any] | None
    ) -> list[int | float]:
        pool: set[int | float] = {
            r[col.name] for r in self.view.rows(table.name) if r[col.name] is not None
        }
        pool |= self.model.numbers.get((table.name, col.name), set())
        for src_table, src_col in sorted(self.model.sources.get((table.name, col.name), set())):
            if is_time(self.model.spec.table(src_table).column(src_col)) != is_time(col):
                continue  # a step is probed against steps, an amount against amounts
            for r in self.view.rows(src_table):
                if _is_number(r[src_col]):
                    pool |= {r[src_col] - 1, r[src_col], r[src_col] + 1}
        for rule in self.model.spec.rules:
            th = rule.threshold
            if th and th.column and th.quantity == f"{table.name}.{col.name}":
                ref_table, ref_col = th.column.split(".")
                for r in self.view.rows(ref_table):
                    if isinstance(r[ref_col], int | float):
                        pool |= {r[ref_col] - 1, r[ref_col], r[ref_col] + 1}
        if target is not None:
            kind = col.name.rsplit("_", 1)[-1]
            base = [v for k, v in target.items() if _is_number(v) and k.rsplit("_", 1)[-1] == kind]
            pool |= {v + d for v in base for d in (0, 1, 2, 3, 4)}
        rules = self.model.value_rules
        kept = sorted(
            v for v in pool if _is_number(v) and v >= 0 and rules.allowed(table.name, col.name, v)
        )
        return kept or self._fallback_numbers(table, col)

    def _fallback_numbers(self, table: Table, col: Column) -> list[int | float]:
        """Small numbers the column's constraints allow, for a column no rule or row informs."""
        rules = self.model.value_rules
        low, _ = rules.bounds.get((table.name, col.name), (None, None))
        start = low if low is not None and low > 0 else 0
        candidates = [start + d for d in (1, 2, 5, 10)] if start else [1, 2, 5, 10]
        kept = [v for v in candidates if rules.allowed(table.name, col.name, v)]
        return kept or ([start] if rules.allowed(table.name, col.name, start) else [])

    def text_value(self, table: Table, col: Column) -> str:
        """A new text value, natural for the column and inside its constraints: the spec's pool
        or Faker provider, a provider its meaning calls for, a sentence in the style of the
        column's free text, a code shaped like the existing ones, or an existing value."""
        rules = self.model.value_rules
        value = ""
        for _ in range(_TEXT_TRIES):
            value = self._text_candidate(table, col)
            if rules.allowed(table.name, col.name, value):
                return value
        existing = [r[col.name] for r in self.view.rows(table.name) if isinstance(r[col.name], str)]
        return self.rng.choice(existing) if existing else value

    def _text_candidate(self, table: Table, col: Column) -> str:
        rules = self.model.value_rules
        drawn = rules.drawn(table, col, self.rng, self.faker)
        if drawn is not None:
            return str(drawn)
        existing: list[str] = sorted(
            {r[col.name] for r in self.view.rows(table.name) if isinstance(r[col.name], str)}
        )
        if free_text(col) or not existing:
            return rules.free_text(existing, self.rng, self.faker)
        sample = self.rng.choice(existing)
        if re.search(r"\d", sample):
            return mimic(sample, self.rng)
        if col.name == self.model.label.get(table.name) or col.unique:
            return kind_variant(sample, self.rng, self.faker)
        return sample

    def value(
        self, tx: Transaction, col: Column, actor: Any, target: dict[str, Any] | None, naive: bool
    ) -> Any:
        """One argument value (``naive``: the default an agent would try without reasoning)."""
        table = self.model.spec.table(self.model.tool(tx.tool).table)
        on_path = any(c == col.name for c, _ in self.model.owner_path.get(table.name, []))
        if col.references:
            options = self.fk_candidates(col, actor, on_path)
            return self.rng.choice(options) if options else None
        if col.enum is not None:
            return self._enum_value(table, col, target, naive)
        if col.type in ("INTEGER", "REAL"):
            if naive and target is not None:
                nums = [
                    v for k, v in target.items() if _is_number(v) and k != table.primary_key[0].name
                ]
                naive_pick = self.rng.choice([0, max(nums)]) if nums else 0
                if self.model.value_rules.allowed(table.name, col.name, naive_pick):
                    return naive_pick
            pool = self.number_pool(table, col, target)
            return self.rng.choice(pool) if pool else None
        return self.text_value(table, col)

    def _enum_value(
        self, table: Table, col: Column, target: dict[str, Any] | None, naive: bool
    ) -> Any:
        assert col.enum is not None
        if naive and col.default in col.enum:
            return col.default
        life = table.lifecycle
        if (
            target is not None
            and life is not None
            and life.column == col.name
            and self.rng.random() < 0.8
        ):
            return self.rng.choice(life.inactive_values)
        allowed = [v for v in col.enum if self.model.value_rules.allowed(table.name, col.name, v)]
        options = [v for v in allowed if target is None or v != target.get(col.name)] or allowed
        return self.rng.choice(options) if options else None

    def sample(
        self, tx: Transaction, actor: Any, target: dict[str, Any] | None = None
    ) -> dict[str, Any] | None:
        """Arguments for one call of ``tx`` (None when a required choice has no candidate)."""
        tool = self.model.tool(tx.tool)
        kind = tool.kind
        table = self.model.spec.table(tool.table)
        decided = self.model.agent_decides(tx)
        args: dict[str, Any] = {}
        key = target_key(tool)
        if key is not None:
            if target is None:
                return None
            args[key] = target[key]
        params = tx.parameters or [c.name for c in table.columns]
        for name in params:
            if name in args:
                continue
            col = table.column(name)
            writable = col.writable_on_insert if kind == "insert" else col.writable_on_update
            if not writable:
                continue
            value = self.value(tx, col, actor, target, naive=name in decided)
            if value is None:
                if col.required_on_insert and kind == "insert":
                    return None
                continue
            args[name] = value
        if tool.kind != "insert":
            keep_time_order(self.model.value_rules.order.get(table.name, []), args, target, decided)
        return self.cohere(tx, args)

    def vary(
        self, tx: Transaction, rule: Rule, example: dict[str, Any], actor: Any
    ) -> dict[str, Any]:
        """A spec example for ``rule`` (an explicit null: "left out") with the values the rule
        does not read drawn anew: the example seeds the request, the dataset does not replay
        it. Kept: what the rule reads, the record acted on, who acts, what the agent decides
        and enum choices (often what the procedure is for). An example with nothing left to
        vary is used in ``UNVARIED_SHARE`` of the draws, else it is ``{}``."""
        tool = self.model.tool(tx.tool)
        table = self.model.spec.table(tool.table)
        key = target_key(tool)
        target = self.view.get(table.name, example.get(key)) if key is not None else None
        keep = set(implicated_columns(rule)) | self.model.agent_decides(tx)
        keep |= {c for c, _ in self.model.owner_path.get(table.name, [])} | {key or ""}
        out = {k: v for k, v in example.items() if v is not None}
        given = dict(out)
        for name in [n for n in out if n not in keep and n in table.column_names]:
            col = table.column(name)
            if col.enum is None and not col.primary_key:
                value = self.value(tx, col, actor, target, naive=False)
                out[name] = out[name] if value is None else value
        out = self.cohere(tx, out)
        if self._violated(tx, out) != self._violated(tx, given):
            # a new number broke another rule (11 units returned of a 1-unit order, a return
            # before the order): the example's numbers stay, only its words vary
            out = {k: given[k] if _is_number(given.get(k)) else v for k, v in out.items()}
        if out == given and self.rng.random() >= UNVARIED_SHARE:
            return {}  # nothing to vary: no request (no rule collides with it), mostly
        return out

    def _violated(self, tx: Transaction, args: dict[str, Any]) -> set[str]:
        """The rules on ``tx``'s table and write kind that ``args`` would break here (each
        evaluated alone; a rule the state cannot evaluate counts as unknown, not broken)."""
        tool = self.model.tool(tx.tool)
        env = self.view.env
        out: set[str] = set()
        for rule in self.model.spec.rules:
            if rule.table != tool.table or tool.kind not in rule.on:
                continue
            if "{threshold}" in rule.condition:
                continue  # a quota reads a counter, not the request's values
            if rule.when is not None and not env.evaluate(rule.when, tx.tool, args):
                continue
            if env.evaluate(rule.condition, tx.tool, args):
                out.add(rule.id)
        return out

    def cohere(self, tx: Transaction, args: dict[str, Any]) -> dict[str, Any]:
        """``args`` (changed in place) with its free text agreeing with the rest of an
        inserted row (see ``_cohere``)."""
        tool = self.model.tool(tx.tool)
        if tool.kind == "insert":
            table = self.model.spec.table(tool.table)
            # a walk toward a rule may have moved one time of the row past another: an
            # expense is incurred before its claim is filed, whatever the walk aims at
            order = self.model.value_rules.order.get(table.name, [])
            keep_time_order(order, args, None, self.model.agent_decides(tx))
            self._cohere(tx, table, args)
        return args

    def _cohere(self, tx: Transaction, table: Table, args: dict[str, Any]) -> None:
        """Free text that agrees with the rest of the row: a sentence drawn from the rows that
        share the request's references (a claim's purpose from claims of its category, an
        order's job from orders of parts of its family), and an optional sentence no rule
        needs left out (a comment on an approval)."""
        for name in [n for n in args if n in table.column_names]:
            col = table.column(name)
            if not _prose(col) or name in tx.agent_decides:
                continue
            if free_text(col) and not col.not_null and not self._needed(tx, table, name, args):
                args.pop(name)
                continue
            if self.model.value_rules.provider(table, col) is not None:
                continue
            texts = [t for t in self._kin_texts(table, name, args) if " " in t]
            if texts:
                args[name] = self.rng.choice(texts)

    def _needed(self, tx: Transaction, table: Table, name: str, args: dict[str, Any]) -> bool:
        """True when a rule on the table that reads ``NEW.<name>`` would refuse the request
        without it (a rejection's reason), or when that cannot be told."""
        kind = self.model.tool(tx.tool).kind
        env = self.view.env
        without = {k: v for k, v in args.items() if k != name}
        for rule in self.model.spec.rules:
            if rule.table != table.name or kind not in rule.on:
                continue
            text = f"{rule.when or ''} {rule.condition}"
            if not re.search(rf"\bNEW\.{name}\b", text):
                continue
            if "{threshold}" in text:
                return True
            guard = rule.when is None or env.evaluate(rule.when, tx.tool, without) != 0
            if guard and env.evaluate(rule.condition, tx.tool, without) != 0:
                return True
        return False

    def _kin_texts(self, table: Table, name: str, args: dict[str, Any]) -> list[str]:
        """The texts of ``name`` on the rows that share most of the request's references
        (the same row, or one of the same kind), none when no row shares one. References to
        the actor and to records it owns (a customer's car) say nothing about the text."""
        refs = [
            c
            for c in table.columns
            if c.references
            and c.name in args
            and c.references.split(".")[0] != self.model.actor
            and not self.model.owned(c.references.split(".")[0])  # whose car says nothing
            and not any(c.name == o for o, _ in self.model.owner_path.get(table.name, []))
        ]
        if not refs:
            return []
        authored = self._authored(table)
        mine = [c for c, _ in self.model.owner_path.get(table.name, [])[:1]]
        for rows in (authored, self.view.rows(table.name)):
            # other users' texts first (not the same trip again), unless only the user's own
            # records are of the same kind (their oil change, not someone's brake service)
            score, texts = self._best_texts(rows, name, refs, args, mine)
            own, anyone = self._best_texts(rows, name, refs, args, [])
            if texts and score >= own:
                return texts
            if anyone:
                return anyone
        return []

    def _authored(self, table: Table) -> list[dict[str, Any]]:
        """The rows of ``table`` the spec's author wrote: its seed rows and the rows its
        examples write. Rows made since (history a repair moved to another category) may
        pair a text with the wrong record."""
        rows = list(self.model.spec.seed.get(table.name, []))
        for rule in self.model.spec.rules:
            for example in rule.examples:
                for call in example.calls:
                    tool = self.model.tools.get(call.tool)
                    if tool is not None and tool.kind == "insert" and tool.table == table.name:
                        rows.append(call.args)
        return rows

    def _best_texts(
        self,
        rows: list[dict[str, Any]],
        name: str,
        refs: list[Column],
        args: dict[str, Any],
        mine: list[str],
    ) -> tuple[float, list[str]]:
        """The texts of ``name`` among ``rows`` sharing most of the request's references, with
        their score; other users' rows only (``mine``: the columns that say whose a row is)."""
        best: float = 0.0
        texts: list[str] = []
        for row in rows:
            text = self._agreeing(row.get(name), refs, args)
            if text is None or self._names_an_id(text):
                continue
            if any(args.get(c) is not None and row.get(c) == args.get(c) for c in mine):
                continue  # the user's own record: a new one is not the same trip again
            score = sum(self._kin(c, row.get(c.name), args[c.name]) for c in refs)
            if score > best:
                best, texts = score, [text]
            elif score == best and score > 0:
                texts.append(text)
        return best, sorted(set(texts))

    def _names_an_id(self, text: str) -> bool:
        """True when ``text`` names an internal id (a TEXT key of a record, such as a course
        code): copied into a request it would tell the user an id the task must not show."""
        words = set(_WORD.findall(text))
        if not words:
            return False
        for table in self.model.spec.tables:
            key = table.primary_key
            ids = (
                {str(r[key[0].name]) for r in self.view.rows(table.name)}
                if len(key) == 1 and key[0].type == "TEXT"
                else set()
            )
            if words & ids:
                return True
        return False

    def _agreeing(self, text: Any, refs: list[Column], args: dict[str, Any]) -> str | None:
        """``text`` made true of the records ``args`` references: a word that names another
        value of one of their enum attributes ('Front brakes' for a part whose position is
        REAR) becomes the record's own value when its name says that value ('Rear brake
        pads'), else the text is unusable (None)."""
        if not isinstance(text, str) or not text.strip():
            return None
        out: str = text
        for col in refs:
            assert col.references is not None
            parent = col.references.split(".")[0]
            row = self.view.get(parent, args[col.name])
            if row is None:
                continue
            label = str(row.get(self.model.label.get(parent) or "", "")).lower()
            ptable = self.model.spec.table(parent)
            for attr in [ptable.column(c) for c in intent_columns(ptable)]:
                own = row.get(attr.name)
                others = [v for v in attr.enum or [] if isinstance(v, str) and v != own]
                for other in [o for o in others if len(o) >= 3]:
                    hit = re.search(rf"\b{re.escape(other)}\b", out, re.I)
                    if hit is None:
                        continue
                    if not isinstance(own, str) or own.lower() not in label.split():
                        return None
                    word = own.lower()
                    word = word.capitalize() if hit.group(0)[:1].isupper() else word
                    out = out[: hit.start()] + word + out[hit.end() :]
        return out

    def _kin(self, col: Column, have: Any, want: Any) -> float:
        """How far the record ``have`` is of the kind of ``want``: 1 for the same record;
        else its agreement on the referenced table's intent columns, the first weighing most
        (a part of the same family before one for the same car); for a table whose rows say
        what a thing is, a shared word in their names ('Classic Meals' and 'Meals')."""
        if have == want:
            return 1.0
        assert col.references is not None
        parent = col.references.split(".")[0]
        a, b = self.view.get(parent, have), self.view.get(parent, want)
        if a is None or b is None:
            return 0.0
        keep = intent_columns(self.model.spec.table(parent))
        if keep:
            return sum(0.5 ** (i + 1) for i, k in enumerate(keep) if a[k] == b[k])
        label = self.model.label.get(parent)
        shared = label is not None and _name_words(a.get(label)) & _name_words(b.get(label))
        return 0.5 if shared else 0.0
