"""The Explorer: goal-conditioned search over the environment's tools (LOGIGEN section 3.5).

The symbolic Explorer plays both roles. As Client it picks a user goal from the menu the state
offers (an SOP applied to the actor's own records or a catalogue choice) and makes the imperfect
first request a real user or a hurried agent would make. As Consultant it resolves descriptions to
ids through reads, attempts the write, and on a policy violation finds an alternative (a corrected
calculation, another option, another parent record, or a new one) and tries again. Every write is a
real environment call, so the state after the episode is the certified s_target.
"""

from __future__ import annotations

import json
import random
from typing import Any

from veritask.env import Environment, ToolResult
from veritask.policy import Call, Rule, ToolSpec, Transaction
from veritask.synth._analysis import DomainModel, implicated_columns, row_key, target_key
from veritask.synth._episode import Episode, Hit, SubGoalTrace, witness_call
from veritask.synth._escalation import goes_on
from veritask.synth._intent import moves_clock, offer_rank, same_kind
from veritask.synth._preference import prefer, read_args
from veritask.synth._refs import AskMaker, lookups
from veritask.synth._sampler import Sampler, StateView
from veritask.synth._workable import unworkable
from veritask.task import Ask, RowRef, WitnessCall

MAX_ATTEMPTS = 4
AIM_PROBES = 8
AIM_STEPS = 3
REPAIR_PROBES = 16


class SymbolicExplorer:
    """Explores one task from an origin state."""

    refused: tuple[Transaction, dict[str, Any], dict[str, Any] | None, Rule] | None = None
    refused_ask: Ask | None = None
    declined: tuple[
        tuple[Transaction, dict[str, Any], dict[str, Any] | None, Rule] | None, Ask | None
    ] = (None, None)
    """The goal the user gave up before the others, with its request."""
    pre_traces: list[SubGoalTrace]
    grounding = True
    """Issue the reads a real consultant would make (off when the Set Designer seeds history)."""

    def __init__(
        self,
        model: DomainModel,
        env: Environment,
        view: StateView,
        sampler: Sampler,
        rng: random.Random,
    ) -> None:
        self.model = model
        self.env = env
        self.view = view
        self.sampler = sampler
        self.rng = rng
        self.witness: list[WitnessCall] = []
        self.pre_traces = []
        self._looked: set[str] = set()
        self._secret: set[Any] = set()  # what the agent decided in this episode (never named)

    # -- calls -----------------------------------------------------------------------------

    def _call(self, tool: str, args: dict[str, Any]) -> ToolResult:
        result = self.env.call(tool, args)
        self.witness.append(witness_call(tool, args, result))
        if result.ok and self.model.writes(tool):
            self.view.invalidate()
            tx = self.model.transaction_of_call(tool, args)
            decided = self.decided(tx, args) if tx is not None and self.grounding else set()
            self._secret.update(args[c] for c in decided if c in args)
        return result

    def _probe(self, tool: str, args: dict[str, Any], snap: bytes) -> ToolResult:
        """Try a call and undo it: probes never enter the witness."""
        result = self.env.call(tool, args)
        if result.ok:
            self.env.restore(snap)
        return result

    def _read(self, table: str, filters: dict[str, Any]) -> None:
        self._call(self.model.query_tool(table).name, filters)

    # -- reads that ground the goal --------------------------------------------------------

    def authenticate(self, actor: Any) -> None:
        """Look the user up, as the wiki's authentication protocol asks."""
        table = self.model.spec.table(self.model.actor)
        self._read(table.name, {table.primary_key[0].name: actor})

    def decided(self, tx: Transaction, args: dict[str, Any]) -> set[str]:
        """What the agent works out for this call: the procedure's ``agent_decides`` and the
        repair column of each calculation rule whose ``when`` guard holds for the call."""
        out = set(tx.agent_decides)
        for rule in self.model.repairs(tx):
            assert rule.repair is not None
            if rule.when is None or self.env.evaluate(rule.when, tx.tool, args):
                out.add(rule.repair.column)
        return out

    def _request(self, tx: Transaction, args: dict[str, Any], actor: Any) -> Ask | None:
        """The request a call answers, built on the state it meets; the reads a consultant
        makes to find the records it names are made first. None when not grounding (the Set
        Designer seeding history)."""
        if not self.grounding:
            return None
        maker = AskMaker(self.model, self.view, actor)
        ask = maker.ask(tx, args, self.decided(tx, args), frozenset(self._secret))
        ask = prefer(maker, tx, args, ask, self.rng)  # "the cheapest ...": _preference.py
        for ref in [r for r in (ask.target, *ask.refs.values()) if r is not None]:
            for part in lookups(ref):
                self._look_up(maker, part)
        return self.view.stated(ask)

    def _look_up(self, maker: AskMaker, ref: RowRef) -> None:
        """Read the rows a ref matches (once per match), unless it holds the record's key."""
        table = self.model.spec.table(ref.table)
        if any(c.name in ref.match for c in table.primary_key):
            return
        match = read_args(maker, ref)  # its match, or the read that finds a preferred record
        text = json.dumps([ref.table, match], sort_keys=True, default=str)
        if text not in self._looked:
            self._looked.add(text)
            self._read(ref.table, match)

    # -- one goal --------------------------------------------------------------------------

    def _aim(
        self, tx: Transaction, actor: Any, rule: Rule, targets: list[dict[str, Any] | None]
    ) -> tuple[dict[str, Any], dict[str, Any] | None, list[Call]] | None:
        """Search for a first request that this rule rejects (a boundary collision).

        A random request is walked toward the rule: while an earlier rule rejects it, that rule is
        repaired; once it would pass, the columns the aimed rule looks at are perturbed."""
        snap = self.env.image()
        found = self._aim_by_example(tx, rule, actor, snap)
        if found is not None:
            return found
        fixed = self._fixed(tx)
        cols = [c for c in implicated_columns(rule) if c in tx.parameters and c not in fixed]
        for _ in range(AIM_PROBES):
            target = self.rng.choice(targets)
            args = self.sampler.sample(tx, actor, target)
            if args is None:
                continue
            args = self._coherent(tx, args, target)
            aimed = self._walk(tx, rule, args, cols, actor, target, snap)
            if aimed is not None:
                return aimed, target, []
        return None

    def _aim_by_example(
        self, tx: Transaction, rule: Rule, actor: Any, snap: bytes
    ) -> tuple[dict[str, Any], dict[str, Any] | None, list[Call]] | None:
        """The first of the spec's own violating examples that still collides with ``rule``
        here, with its lead-up calls (tried and undone)."""
        for prefix, example in self._example_calls(tx, rule, actor):
            if not self._fits(tx, example):
                continue
            if all(self.env.call(c.tool, c.args).ok for c in prefix):
                self.view.invalidate()
                hit = self._target_of(tx, example)
                result = self.env.call(tx.tool, dict(example))
                self.env.restore(snap)
                self.view.invalidate()
                if result.error is not None and result.error.violated_rule == rule.id:
                    return dict(example), hit, prefix
            else:
                self.env.restore(snap)
                self.view.invalidate()
        return None

    def _walk(
        self,
        tx: Transaction,
        rule: Rule,
        args: dict[str, Any],
        cols: list[str],
        actor: Any,
        target: dict[str, Any] | None,
        snap: bytes,
    ) -> dict[str, Any] | None:
        """Walk one request toward ``rule``: perturb the columns it looks at, repair whatever
        earlier rule rejects it; the request once ``rule`` rejects it, else None."""
        for step in range(AIM_STEPS):
            if step == 0 or self.rng.random() < 0.5:
                for c in cols:
                    if self.rng.random() < 0.5:
                        self._mutate(tx, args, c, actor, target)
            err = self._probe(tx.tool, self.sampler.cohere(tx, args), snap).error
            if err is None:
                continue
            if err.violated_rule == rule.id:
                return args
            if not err.violated_rule:
                return None
            fixed = self._repair(tx, self.model.spec.rule(err.violated_rule), args, actor, target)
            if fixed is None:
                return None
            args = fixed
        return None

    def _lead_up(self, prefix: list[Call], actor: Any) -> bool:
        """Run an example's accepted lead-up calls for real, each as a requested goal of its
        own (``pre_traces``). A write no procedure stands for cannot be requested: False."""
        for call in prefix:
            if not self.model.writes(call.tool):
                if not self._call(call.tool, dict(call.args)).ok:
                    return False
                continue
            tx = self.model.transaction_of_call(call.tool, call.args)
            if tx is None:
                return False
            args = self._effective(tx, dict(call.args))
            if args is None:
                return False
            target = self._target_of(tx, args)
            ask = self._request(tx, args, actor)
            result = self._call(call.tool, args)
            if not result.ok:
                return False
            self.pre_traces.append(
                SubGoalTrace(
                    tx=tx,
                    args=args,
                    result=result.result or {},
                    target=target,
                    decided=self.decided(tx, args),
                    ask=ask,
                )
            )
        return True

    def actor_of(self, tool: str, args: dict[str, Any]) -> Any:
        """The user a call acts for: the owner of its target record or of the records it links."""
        spec = self.model.tool(tool)
        name = spec.table
        key = target_key(spec)
        if key is not None:
            row = self.view.get(name, args.get(key))
            return self.view.owner(name, row) if row is not None else None
        for col in self.model.spec.table(name).columns:
            if col.references and col.name in args:
                parent = col.references.split(".")[0]
                if parent == self.model.actor and any(
                    c == col.name for c, _ in self.model.owner_path.get(name, [])
                ):
                    return args[col.name]
                row = self.view.get(parent, args[col.name])
                if row is not None and self.model.owned(parent) and parent != self.model.actor:
                    return self.view.owner(parent, row)
        return None

    def _example_calls(
        self, tx: Transaction, rule: Rule, actor: Any
    ) -> list[tuple[list[Call], dict[str, Any]]]:
        """The spec's own violating examples for this rule that apply to this user, each with the
        accepted calls that lead up to it (the N-1 -> N step of a quota example)."""
        out = []
        for example in rule.examples:
            for i, call in enumerate(example.calls):
                if call.expect != rule.id or call.tool != tx.tool:
                    continue
                if self.actor_of(call.tool, call.args) != actor:
                    continue
                prefix = [c for c in example.calls[:i] if c.expect == "ok"]
                if all(self.actor_of(c.tool, c.args) in (actor, None) for c in prefix):
                    # an explicit null means "left out"; what the rule does not read varies
                    out.append((prefix, self.sampler.vary(tx, rule, call.args, actor)))
        return out

    def _fixed(self, tx: Transaction) -> dict[str, Any]:
        """What the procedure's name fixes (nothing while seeding history: no one asks)."""
        return self.model.fixed_values(tx) if self.grounding else {}

    def _taken(self, tx: Transaction) -> dict[str, set[Any]]:
        """What sibling procedures fix (nothing while seeding history)."""
        return self.model.taken_values(tx) if self.grounding else {}

    def _fits(self, tx: Transaction, args: dict[str, Any]) -> bool:
        """True when a request agrees with what the procedure's name fixes."""
        fixed = self._fixed(tx)
        taken = self._taken(tx)
        return all(args.get(c, v) == v for c, v in fixed.items()) and not any(
            args.get(c) in values for c, values in taken.items()
        )

    def _target_of(self, tx: Transaction, args: dict[str, Any]) -> dict[str, Any] | None:
        tool = self.model.tool(tx.tool)
        key = target_key(tool)
        if key is None:
            return None
        return self.view.get(tool.table, args.get(key))

    def _mutate(
        self,
        tx: Transaction,
        args: dict[str, Any],
        col: str,
        actor: Any,
        target: dict[str, Any] | None,
    ) -> None:
        """An imperfect request: a different choice, a missing detail, or a name not on file."""
        tool = self.model.tool(tx.tool)
        column = self.model.spec.table(tool.table).column(col)
        if col == target_key(tool) or col in self._fixed(tx):
            return
        roll = self.rng.random()
        if not column.not_null and roll < 0.15:
            args.pop(col, None)
        elif column.type == "TEXT" and not column.references and column.enum is None and roll < 0.3:
            args[col] = ""
        elif (
            column.references
            and self.model.named(column.references.split(".")[0])
            and not self.model.owned(column.references.split(".")[0])
            and roll < 0.3
        ):
            args[col] = f"{args.get(col, 'x')}_{self.rng.randint(10, 99)}"
        else:
            value = self.sampler.value(tx, column, actor, target, naive=False)
            if value is not None and value not in self._taken(tx).get(col, ()):
                args[col] = value

    def _candidates(
        self,
        tx: Transaction,
        col: str,
        actor: Any,
        target: dict[str, Any] | None,
        current: Any,
        rule: Rule | None = None,
    ) -> list[Any]:
        """Other values for ``col``. With ``rule`` (an alternative the user is offered after it
        refused), only values that keep the request's intent: not the value the record already
        has, and another record only when it agrees with the one asked for on what defines the
        request (``intent_columns``) apart from what the rule tests."""
        table = self.model.spec.table(self.model.tool(tx.tool).table)
        column = table.column(col)
        if column.references:
            on_path = any(c == col for c, _ in self.model.owner_path.get(table.name, []))
            values = self.sampler.fk_candidates(column, actor, on_path)
            if rule is not None:
                values = same_kind(
                    self.view, self.model.spec, column.references, current, values, rule
                )
        elif column.enum is not None:
            values = list(column.enum)
        elif column.type in ("INTEGER", "REAL"):
            values = list(self.sampler.number_pool(table, column, target))
        else:
            values = [self.sampler.text_value(table, column)]
        taken = self._taken(tx).get(col, set())
        values = [v for v in values if v != current and v not in taken]
        if rule is not None and target is not None and col in target:
            values = [v for v in values if v != target[col]]
        self.rng.shuffle(values)
        if rule is not None and isinstance(current, (int, float)) and column.enum is None:
            # a customer who asked for 5 takes the most allowed, not any smaller number
            values.sort(key=lambda v: abs(v - current) if isinstance(v, (int, float)) else 0)
        return values

    def _repair(
        self,
        tx: Transaction,
        rule: Rule,
        args: dict[str, Any],
        actor: Any,
        target: dict[str, Any] | None,
        offered: bool = False,
    ) -> dict[str, Any] | None:
        """An alternative request after ``rule`` rejected ``args``, found by probing.

        ``offered``: the user is offered it (a reactive trigger), so it keeps the request's
        intent: no restated time, no other record to act on or of another kind, no value the
        record has. Otherwise (a request aimed at a rule) any value the agent could write."""
        snap = self.env.image()
        if rule.repair is not None and rule.repair.column in args:
            formula = self._formula_repair(tx, rule, args, snap)
            if formula is not None:
                return formula
        key = target_key(self.model.tool(tx.tool))
        intent = offered and self.grounding
        cols = self._repair_columns(tx, rule, args, key, intent)
        fallback = None
        budget = REPAIR_PROBES
        for col in cols:
            options = (
                self._candidates(tx, col, actor, target, args.get(col), rule if intent else None)
                if col != key
                else self._other_targets(tx, actor, args[key])
            )
            for value in options[:8]:
                if budget == 0:
                    return fallback
                budget -= 1
                trial = {**args, col: value}
                result = self._probe(tx.tool, trial, snap)
                if result.ok:
                    return trial
                err = result.error
                if (
                    fallback is None
                    and err is not None
                    and err.violated_rule not in (None, "", rule.id)
                ):
                    fallback = trial
        return fallback

    def _repair_columns(
        self, tx: Transaction, rule: Rule, args: dict[str, Any], key: str | None, intent: bool
    ) -> list[str]:
        """The columns a repair of ``rule`` tries, agent-decided ones first; with ``intent``
        never a time the user stated, and never the record itself."""
        table = self.model.spec.table(self.model.tool(tx.tool).table)
        fixed = self._fixed(tx)
        decided = self.decided(tx, args) if self.grounding else set()
        cols = [
            c
            for c in implicated_columns(rule, guard=False)
            if c in tx.parameters
            and c != key
            and c not in fixed
            and not (intent and moves_clock(table, c, args, decided))
        ]
        self.rng.shuffle(cols)
        # what the agent decides comes first: an agent fixes those before it asks the user;
        # an offered alternative then supplies a value the user left out, then another record
        # of the same kind, and only last changes a value the user stated
        cols.sort(key=lambda c: (c not in decided, intent and offer_rank(table, c, args)))
        if key is not None and not cols and not intent:
            cols = [key]  # the rule is about the record itself: pick another record
        return cols

    def _formula_repair(
        self, tx: Transaction, rule: Rule, args: dict[str, Any], snap: bytes
    ) -> dict[str, Any] | None:
        """The request with the value the rule's formula gives. A NULL the column allows (a
        director has no manager to approve) is kept unless this rule still refuses it: another
        rule may refuse next, as after any repair."""
        assert rule.repair is not None
        col = rule.repair.column
        value = self.env.evaluate(rule.repair.value, tx.tool, args)
        if value is not None:
            return {**args, col: value} if value != args[col] else None
        column = self.model.spec.table(self.model.tool(tx.tool).table).column(col)
        if args[col] is None or column.not_null:
            return None
        trial = {**args, col: None}
        err = self._probe(tx.tool, trial, snap).error
        return trial if err is None or err.violated_rule not in (None, rule.id) else None

    def _other_targets(self, tx: Transaction, actor: Any, current: Any) -> list[Any]:
        key = self.model.tool(tx.tool).key
        assert key is not None  # only updates pick another record
        keys = [r[key] for r in self.sampler.target_rows(tx, actor) if r[key] != current]
        self.rng.shuffle(keys)
        return keys

    def _new_parent(
        self, tx: Transaction, rule: Rule, args: dict[str, Any], actor: Any
    ) -> tuple[dict[str, Any], SubGoalTrace] | None:
        """After a quota rejection: open a new parent record and use it instead."""
        table = self.model.spec.table(self.model.tool(tx.tool).table)
        for col in implicated_columns(rule):
            column = table.column(col) if col in table.column_names else None
            if column is None or not column.references or col not in args:
                continue
            parent, key = column.references.split(".")
            parent_tx = next(
                (t for t in self.model.write_transactions if self._inserts(t, parent)), None
            )
            if parent_tx is None:
                continue
            trace = self.achieve(parent_tx, actor, aim=None)
            if trace is not None:
                return {**args, col: trace.result[key]}, trace
        return None

    def _inserts(self, tx: Transaction, table: str) -> bool:
        """True when ``tx`` creates a record of ``table``."""
        tool = self.model.tool(tx.tool)
        return tool.kind == "insert" and tool.table == table

    def achieve(
        self,
        tx: Transaction,
        actor: Any,
        aim: Rule | None,
        fixed: dict[str, Any] | None = None,
    ) -> SubGoalTrace | None:
        """Reach one goal: choose, ground, attempt, repair. Returns None when it cannot be reached;
        a goal the policy forbids outright is then left in ``refused``. ``fixed`` pins arguments
        (e.g. the parent record a seeder fills)."""
        tool = self.model.tool(tx.tool)
        targets = self._targets(tx, tool, actor, fixed)
        if not targets:
            return None
        first = self._first_request(tx, tool, actor, aim, targets, fixed)
        if first is None:
            return None
        args, target = first
        start = len(self.witness)
        trace = SubGoalTrace(tx=tx, args=args, result={}, target=dict(target) if target else None)
        return self._pursue(trace, tool, args, target, actor, start)

    def _targets(
        self, tx: Transaction, tool: ToolSpec, actor: Any, fixed: dict[str, Any] | None
    ) -> list[dict[str, Any] | None]:
        """The records an update may change (those matching ``fixed``); ``[None]`` otherwise."""
        if tool.kind != "update":
            return [None]
        targets: list[dict[str, Any] | None] = list(self.sampler.target_rows(tx, actor))
        if fixed:
            names = self.model.spec.table(tool.table).column_names
            targets = [
                t
                for t in targets
                if t is not None and all(t.get(k) == v for k, v in fixed.items() if k in names)
            ]
        return targets

    def _first_request(
        self,
        tx: Transaction,
        tool: ToolSpec,
        actor: Any,
        aim: Rule | None,
        targets: list[dict[str, Any] | None],
        fixed: dict[str, Any] | None,
    ) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
        """The user's first request and its target record: aimed at ``aim`` when a collision
        was found (its lead-up calls are then made for real), else a plain sample."""
        first = self._aim(tx, actor, aim, targets) if aim is not None else None
        if first is not None:
            args, target, prefix = first
            return (args, target) if self._lead_up(prefix, actor) else None
        if self.model.is_direct(tx):
            return None  # a direct request is only ever made to meet its rule
        target = self.rng.choice(targets)
        sampled = self.sampler.sample(tx, actor, target)
        if sampled is None:
            return None
        if fixed and tool.kind == "insert":
            sampled.update(fixed)
        sampled = self._coherent(tx, sampled, target)
        return None if self._effective(tx, sampled) is None else (sampled, target)

    def _coherent(
        self, tx: Transaction, args: dict[str, Any], target: dict[str, Any] | None
    ) -> dict[str, Any]:
        """The request as the procedure's name means it: the values its name fixes, and none
        that another procedure on the same tool fixes (``post_final_grade`` never asks for
        the status ``drop_course`` sets)."""
        args = {**args, **self._fixed(tx)}
        table = self.model.spec.table(self.model.tool(tx.tool).table)
        for col, taken in self._taken(tx).items():
            if args.get(col) not in taken:
                continue
            current = target.get(col) if target else None
            enum = table.column(col).enum or []
            options = [v for v in enum if v not in taken and v != current]
            if options:
                args[col] = self.rng.choice(options)
            else:
                args.pop(col)
        return args

    def _effective(
        self, tx: Transaction, args: dict[str, Any], revised: frozenset[str] = frozenset()
    ) -> dict[str, Any] | None:
        """The request without the values an update would not change (asking for them says
        nothing); None when nothing is left to change.

        A value in ``revised`` (one the user accepted instead of what they first asked for)
        stays even when the record already has it: dropped, the revised request would say
        nothing about it, and an agent told only the first request would still write the
        refused value."""
        tool = self.model.tool(tx.tool)
        key = target_key(tool)
        if key is None or not self.grounding:
            return args
        row = self.view.get(tool.table, args.get(key))
        if row is None:
            return args
        changes = {k for k, v in args.items() if k != key and (k not in row or row[k] != v)}
        if not changes:
            return None
        keep = changes | revised | set(self._fixed(tx))  # the status a procedure is named for
        return {k: v for k, v in args.items() if k == key or k in keep}

    def _pursue(
        self,
        trace: SubGoalTrace,
        tool: ToolSpec,
        args: dict[str, Any],
        target: dict[str, Any] | None,
        actor: Any,
        start: int,
    ) -> SubGoalTrace | None:
        """Attempt the write, and after each policy rejection an alternative, until one is
        accepted (the trace) or the alternatives run out (None; ``refused`` is set when nothing
        was written since ``start``). Each attempt's request is built on the state it meets."""
        tx = trace.tx
        first_refusal = None
        tried: set[str] = set()
        for _ in range(MAX_ATTEMPTS):
            revised = frozenset(c for hit in trace.hits for c in hit.changed)
            effective = self._effective(tx, args, revised)
            fingerprint = json.dumps(effective, sort_keys=True, default=str)
            if effective is None or fingerprint in tried:
                break  # nothing left to change, or the alternatives went round in a circle
            args = effective
            tried.add(fingerprint)
            if unworkable(self.model, self.env, tx, args, self.decided(tx, args)):
                break  # no agent could work out a value this write needs
            self._note(trace, self._request(tx, args, actor))
            mark = len(self.witness)
            result = self._call(tx.tool, args)
            if result.ok:
                trace.args, trace.result = args, result.result or {}
                trace.decided = self.decided(tx, args)
                return trace
            err = result.error
            if err is None or not err.violated_rule:
                del self.witness[mark:]  # a malformed attempt, not a policy collision: drop it
                return None
            rule = self.model.spec.rule(err.violated_rule)
            if first_refusal is None:
                first_refusal = (tx, dict(args), target, rule)
            if self.model.is_direct(tx):
                break  # the outcome is reserved: nothing else is asked for instead
            step = self._alternative(trace, tool, rule, args, actor, target)
            if step is None:
                break
            args, target = step
        # Out of alternatives: if nothing was written, the user has to give this goal up.
        if first_refusal is not None and not self._wrote_since(start):
            self.refused, self.refused_ask = first_refusal, trace.ask
        return None

    @staticmethod
    def _note(trace: SubGoalTrace, ask: Ask | None) -> None:
        """Keep an attempt's request: the first one is the goal's, later ones revise it."""
        if trace.hits:
            trace.hits[-1].ask = ask
        else:
            trace.ask = ask

    def _alternative(
        self,
        trace: SubGoalTrace,
        tool: ToolSpec,
        rule: Rule,
        args: dict[str, Any],
        actor: Any,
        target: dict[str, Any] | None,
    ) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
        """The next request after ``rule`` rejected ``args`` (a repair, or a new parent record
        after a quota), recorded as a hit; with the target record it now points at."""
        tx = trace.tx
        repaired = self._repair(tx, rule, args, actor, target, offered=True)
        created = None
        if repaired is None and rule.category == "quota":
            made = self._new_parent(tx, rule, args, actor)
            if made is not None:
                repaired, created = made
                trace.created_parent = created
        if repaired is None:
            return None
        changed = {k: (args.get(k), v) for k, v in repaired.items() if args.get(k) != v}
        trace.hits.append(Hit(rule.id, changed, created=created))
        key = target_key(tool)
        if key is not None and repaired[key] != args[key]:
            target = self.view.get(tool.table, repaired[key])
        return repaired, target

    def _wrote_since(self, start: int) -> bool:
        """True when a witness call from ``start`` on was an accepted write."""
        return any(c.ok and self.model.writes(c.tool) for c in self.witness[start:])

    # -- whole episodes --------------------------------------------------------------------

    def follow_up(self, prev: SubGoalTrace) -> Transaction | None:
        """A natural next goal: act on the record just written, or a child of it."""
        written = self.model.tool(prev.tx.tool).table
        options = []
        for tx in self.model.write_transactions:
            tool = self.model.tool(tx.tool)
            t = self.model.spec.table(tool.table)
            child = any(c.references and c.references.split(".")[0] == written for c in t.columns)
            if (tool.kind == "insert" and child) or (tool.kind == "update" and t.name == written):
                options.append(tx)
        return self.rng.choice(options) if options else None

    def explore(
        self,
        actor: Any,
        first: Transaction,
        aim: Rule | None,
        max_goals: int,
        chain: float,
        allow_refusal: bool,
    ) -> Episode | None:
        """One episode for ``actor``: a first goal (aimed at a rule), maybe follow-ups. Every
        accepted write of the witness is a goal of the episode (lead-up writes included), and
        whatever is rolled back leaves the witness too."""
        self.witness, self._looked, self._secret = [], set(), set()
        self.refused, self.refused_ask = None, None
        self.authenticate(actor)
        trace, refused = self._opening(actor, first, aim, allow_refusal)
        if refused is not None:
            return refused
        if trace is None:
            return None
        goals = [*self.pre_traces, trace]
        declined, declined_ask = self.declined
        while len(goals) < max_goals and goes_on(self.model.spec, self.witness, self.rng, chain):
            nxt = self.follow_up(goals[-1]) or self.rng.choice(self.model.write_transactions)
            more = self._attempt(nxt, actor)
            if more is None:
                break
            goals += more
        return Episode(
            actor, list(self.witness), goals, declined=declined, refused_ask=declined_ask
        )

    def _attempt(self, tx: Transaction, actor: Any, aim: bool = True) -> list[SubGoalTrace] | None:
        """One more goal (with its lead-ups), or None with the witness and state as before."""
        mark, snap = len(self.witness), self.env.image()
        self.pre_traces = []
        more = self.achieve(tx, actor, aim=self._aim_for(tx) if aim else None)
        if more is None:
            del self.witness[mark:]
            self.env.restore(snap)
            self.view.invalidate()
            self.pre_traces = []
            return None
        return [*self.pre_traces, more]

    def _opening(
        self, actor: Any, first: Transaction, aim: Rule | None, allow_refusal: bool
    ) -> tuple[SubGoalTrace | None, Episode | None]:
        """The first goal; or the refusal episode when the policy forbids it outright; or,
        when the user gives it up and moves on, the next goal (``declined`` keeps the first)."""
        self.declined = (None, None)
        self.pre_traces = []
        mark, snap = len(self.witness), self.env.image()
        trace = self.achieve(first, actor, aim)
        if trace is not None:
            return trace, None
        lead_up = bool(self.pre_traces)
        if lead_up and self.refused is not None:
            # the goals that led up to it were met; the user accepts the refusal and stops
            return None, self._refused_after(actor)
        self.env.restore(snap)  # a forbidden goal leaves nothing behind
        self.view.invalidate()
        self.pre_traces = []
        if self.refused is None or lead_up:
            del self.witness[mark:]  # nothing to refuse
            return None, None
        if allow_refusal:
            episode = Episode(
                actor, list(self.witness), [], refusal=self.refused, refused_ask=self.refused_ask
            )
            return None, episode
        # the user accepts the refusal and moves on to another request
        self.declined = (self.refused, self.refused_ask)
        nxt = self.rng.choice(
            [t for t in self.model.write_transactions if t is not first] or [first]
        )
        more = self._attempt(nxt, actor)
        if more is None:
            return None, None
        *self.pre_traces, trace = more
        return trace, None

    def _refused_after(self, actor: Any) -> Episode:
        """The episode whose last request is refused on the state its lead-up goals made: the
        rule's precondition arises only from an earlier accepted write of the same user."""
        episode = Episode(
            actor,
            list(self.witness),
            list(self.pre_traces),
            declined=self.refused,
            refused_ask=self.refused_ask,
        )
        episode.declined_at = len(self.pre_traces)
        return episode

    def _aim_for(self, tx: Transaction) -> Rule | None:
        rules = self.model.rules_for(tx.tool)
        return self.rng.choice(rules) if rules and self.rng.random() < 0.6 else None


__all__ = ["Episode", "Hit", "SubGoalTrace", "SymbolicExplorer", "row_key"]
