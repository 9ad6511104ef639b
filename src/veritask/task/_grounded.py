"""The second certificate: a task is *grounded* when its own text determines its target.

The replay certificate (:func:`veritask.task.certify`) proves that the witness reaches s_target.
Grounding proves that an agent who only hears the user, reads the policy and sees tool results
can reach it too. Every accepted write of the witness must answer one request of the task (a
sub-goal's :class:`~veritask.task.Ask`, or the revised request of one of its fallbacks), and each
of its arguments must be one of:

- **stated**: a value of the ask, or the key of the record the ask names (``target``, ``refs``);
  a named record must be unique (its match picks out exactly one row) and, unless the match
  contains the key itself, must have been seen in an earlier tool result;
- **the user's own id**, for the required foreign key of an insert to the actor table (a second
  reference to that table, an approver say, names someone and must be stated);
- **a column default**;
- **unchanged**: an update that sets a column to the value it already has (a no-op);
- **determined by the policy**: every other value the column could take (the other enum values,
  one more and one less for numbers, every other key of the table a foreign key references and
  NULL when it may be NULL) is rejected by a rule. This is decided by execution, on
  the state the call meets, so a rule whose ``when`` guard does not apply determines nothing.

Every value an ask states must also appear in the task text, so the structure cannot say more
than the user does. And a refusal the user gives up after must be *final*: when the agent could
make the refused call pass by changing only values the user did not state (the value a
calculation rule's formula gives, another choice of an enum the rule tests), an agent that does
so is right and the target, which keeps the refusal, is wrong. Finality is also decided by
execution, on the state the refused call met. A refusal the user reacts to with a revised
request must be final in the same way (else the agent gets the first request through).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from veritask.env import (
    Environment,
    Snapshot,
    ToolResult,
    data_calls,
)
from veritask.policy import Column, ToolSpec, actor_table, quote_ident
from veritask.task._certify import Certificate, end_certificate, outcome_mismatch
from veritask.task._ground_repairs import (
    MAX_REPAIR_CALLS,
    MAX_REPAIR_DEPTH,
    RepairSearch,
    give_ups,
    reactions,
)
from veritask.task._ground_values import (
    SCALARS,
    Seen,
    alternatives,
    columns_of,
    in_text,
    leaves,
    matches,
    query_key,
    same,
    scalars,
)
from veritask.task._package import Ask, RowRef, TaskDescription, TaskPackage, WitnessCall
from veritask.task._prefer import best_in, preference_args
from veritask.task._spoiler import decided_columns

_in_text = in_text  # the name tests know


@dataclass(frozen=True)
class Ungrounded:
    """One write (or one of its arguments) the task's text does not determine.

    Attributes:
        call: Index of the call in the witness (-1 for a stated value missing from the text).
        tool: The write tool.
        arg: The argument that is not grounded; None when the write itself was not asked for.
        reason: Why.
    """

    call: int
    tool: str
    arg: str | None
    reason: str

    def describe(self) -> str:
        """A one-line account of the problem."""
        where = f"call {self.call} {self.tool}" if self.call >= 0 else self.tool
        return f"{where}: {self.arg + ': ' if self.arg else ''}{self.reason}"


def task_asks(task: TaskDescription) -> list[Ask]:
    """Every request the user may make: each sub-goal's ask and its fallbacks' asks, in order."""
    out: list[Ask] = []
    for sub in task.sub_goals:
        if sub.ask is not None:
            out.append(sub.ask)
        for fb in sub.fallbacks:
            out += fb.first
            if fb.then is not None:
                out.append(fb.then)
    return out


def package_asks(pkg: TaskPackage) -> list[Ask]:
    """Every request the user of a package may make (see :func:`task_asks`)."""
    return task_asks(pkg.task)


def unstated_in(task: TaskDescription, text: str | None = None) -> list[Ungrounded]:
    """Values the task's asks state that its text (``text``, else the rendered task) does not
    say. A model that writes the text is held to this before its package is built."""
    return _unstated(task_asks(task), task.render() if text is None else text)


def unstated(pkg: TaskPackage) -> list[Ungrounded]:
    """Values an ask states that the task text does not say."""
    return unstated_in(pkg.task, pkg.task_description)


def _unstated(asks: list[Ask], shown: str) -> list[Ungrounded]:
    """Values ``asks`` state that ``shown`` does not say (see :func:`unstated_in`)."""
    found: list[Ungrounded] = []
    said: dict[str, bool] = {}  # str(value) -> whether the text says it
    for ask in asks:
        if ask.transaction.startswith(PROCEDURE_ASK):
            continue  # grounded at the write, on the text and the results shown before it
        stated = list(ask.values.items())
        for ref in (ask.target, *ask.refs.values()):
            if ref is not None:
                leaves(ref, stated)
        for col, value in stated:
            if value is None:
                continue
            key = str(value)
            there = said.get(key)
            if there is None:
                there = said[key] = in_text(key, shown)
            if not there:
                found.append(Ungrounded(-1, ask.tool, col, f"{value!r} is not in the task text"))
    return found


PROCEDURE_ASK = "procedure:"
"""Prefix of the ``transaction`` of an ask that a procedure call answers."""


MAX_KEY_PROBES = 64
"""The most records a foreign key's probes try (the other keys of the table it references)."""

_Resolved = tuple[dict[str, Any], dict[str, Any] | None, str | None]
"""A ref's match (parents replaced by their keys), its one row, and why it has none."""


class _Grounder(RepairSearch):
    """Replays a witness and grounds each accepted write against the package's asks."""

    def __init__(self, pkg: TaskPackage, env: Environment) -> None:
        self.pkg = pkg
        self.env = env
        self.asks = package_asks(pkg)
        self.used: set[int] = set()
        self.seen = Seen()
        self._tools = env.tools
        self._columns: dict[str, dict[str, Column]] = {}
        """Per table, its columns by name (the first of a name, as ``Table.column``)."""
        self._queries: dict[tuple[Any, ...], Any] = {}
        """Query payloads on the current state (cleared whenever a witness write is accepted;
        a witness query adds its own)."""
        self._resolved: dict[tuple[int, str], tuple[RowRef, _Resolved]] = {}
        """``_resolve``'s answers on the current state (cleared whenever a witness call runs)."""
        self._decided: tuple[WitnessCall | None, dict[str, bool]] = (None, {})
        """``_determined``'s answers for the arguments of one witness call, on the state it
        meets."""
        self._results: list[Any] = []
        """Every accepted witness call's result so far (procedure writes are grounded on their
        JSON text, written out only when one is grounded: ``shown``)."""
        self._shown: list[str] = []

    @property
    def shown(self) -> list[str]:
        """The JSON text of every accepted witness call's result so far."""
        done = len(self._shown)
        if done < len(self._results):
            self._shown += [json.dumps(r, ensure_ascii=False) for r in self._results[done:]]
        return self._shown

    @functools.cached_property
    def actor_table(self) -> str:
        return actor_table(self.env.spec)

    @functools.cached_property
    def give_ups(self) -> dict[tuple[str, str], set[str]]:
        return give_ups(self.pkg)

    @functools.cached_property
    def _by_tool(self) -> dict[str, list[int]]:
        """Per write tool, the indexes of the asks for it, in order."""
        out: dict[str, list[int]] = {}
        for i, ask in enumerate(self.asks):
            out.setdefault(ask.tool, []).append(i)
        return out

    def _cols(self, table: str) -> dict[str, Column]:
        """The columns of ``table`` by name (KeyError, as ``DomainSpec.table``, when unknown)."""
        found = self._columns.get(table)
        if found is None:
            found = self._columns[table] = columns_of(self.env.spec.table(table))
        return found

    def run(self, origin: bytes) -> list[Ungrounded]:
        self.env.restore(origin)
        found = _unstated(self.asks, self.pkg.task_description)
        for i, call in enumerate(self.pkg.witness):
            found += self.before(i, call)
            self.after(call, self.env.call(call.tool, call.args))
        return found

    def before(self, index: int, call: WitnessCall) -> list[Ungrounded]:
        """Ground witness call ``index`` on the state it meets, before it runs (the state is
        left as it was)."""
        tool = self._tools.get(call.tool)
        if tool is None or not tool.writes:
            return []
        if tool.kind == "procedure":
            return self._procedure(index, tool, call)
        if call.ok:
            return self._write(index, tool, call)
        return (
            self._final(index, tool, call)
            or self._reacted(index, tool, call)
            or self._handoff_due(index, tool, call)
        )

    def _handoff_due(self, index: int, tool: ToolSpec, call: WitnessCall) -> list[Ungrounded]:
        """A refused hand-off is a declined one only when no reason of the policy lets it
        through: the agent picks the reason from the policy, so a hand-off refused for one
        reason while another one holds is a mistake no careful agent makes."""
        esc = self.env.spec.escalation
        if esc is None or tool.name != esc.tool:
            return []
        for reason in esc.reasons:
            if same(call.args.get(esc.reason), reason.id):
                continue
            if self._outcome(tool.name, {**call.args, esc.reason: reason.id})[0]:
                why = f"the hand-off is refused, but reason {reason.id!r} holds here"
                return [Ungrounded(index, tool.name, esc.reason, why)]
        return []

    def _reacted(self, index: int, tool: ToolSpec, call: WitnessCall) -> list[Ungrounded]:
        """A refusal the user reacts to must be one the agent meets and explains: the call
        without the values the agent decides that nobody stated (``agents_version``) is refused
        by the same rule, and no repair of unstated values (``passing_repair``, as for a
        give-up) makes it pass. Otherwise the revised request answers a mistake the agent never
        makes, or a refusal it works around itself (another handler, a recomputed charge)."""
        rule_id = (call.error or {}).get("violated_rule")
        if rule_id is None or (tool.name, str(rule_id)) not in self.reactions:
            return []
        stated = {c for a in self._by_tool_asks(tool.name) for c in (*a.values, *a.refs)}
        decided = decided_columns(self.env.spec, tool.name, self._tools)
        mine = self.agents_version(tool, call.args, stated, decided)
        if len(mine) < len(call.args) and not self.refused_alike(call.tool, mine, str(rule_id)):
            dropped = ", ".join(f"{c} = {call.args[c]!r}" for c in call.args if c not in mine)
            why = (
                f"the user reacts to {rule_id}, which only {dropped} (a value nobody stated) causes"
            )
            return [Ungrounded(index, tool.name, next(c for c in call.args if c not in mine), why)]
        # the agent meets the refusal; it is explained only when no repair gets the call through
        return self._unrepaired(index, tool, mine, str(rule_id), stated, "reacts to")

    def _by_tool_asks(self, tool: str) -> list[Ask]:
        return [self.asks[i] for i in self._by_tool.get(tool, ())]

    @functools.cached_property
    def reactions(self) -> set[tuple[str, str]]:
        return reactions(self.pkg)

    def _procedure(self, index: int, tool: ToolSpec, call: WitnessCall) -> list[Ungrounded]:
        """A procedure write answers the first unanswered ask for it whose values are exactly
        its arguments; every scalar in them is said in the task text or was shown by an
        earlier call's result (a looked-up id). A refused procedure call is not judged."""
        if not call.ok:
            return []
        for i in self._by_tool.get(tool.name, ()):
            if i in self.used or not same(self.asks[i].values, call.args):
                continue
            self.used.add(i)
            values: list[Any] = []
            scalars(call.args, values)
            return [
                Ungrounded(index, tool.name, None, f"{v!r} is neither said nor looked up")
                for v in values
                if v is not None
                and not in_text(str(v), self.pkg.task_description)
                and not any(in_text(str(v), shown) for shown in self.shown)
            ]
        return [Ungrounded(index, tool.name, None, "no request of the task asks for this")]

    def after(self, call: WitnessCall, result: ToolResult) -> None:
        """Take note of what a witness call showed the agent once it has run.

        Only an accepted write changes the state (a refused call is rolled back byte for byte,
        which the probes rely on too), so only then, or after a call of an unknown tool, are the
        lookups on it forgotten. A witness lookup is itself the answer to the same lookup on the
        state it leaves, since a query does not change the state."""
        if self._resolved:
            self._resolved.clear()
        if self._decided[0] is not None:
            self._decided = (None, {})
        tool = self._tools.get(call.tool)
        if tool is None or (tool.writes and result.ok):
            if self._queries:
                self._queries.clear()
        elif result.ok and call.tool == f"query_{tool.table}":
            self._remember(tool.table, call.args, result.result)
        if result.ok:
            self._results.append(result.result)
        if result.ok and tool is not None:
            self.seen.add(tool.table, result.result)

    def _remember(self, table: str, match: dict[str, Any], payload: Any) -> None:
        """Keep ``payload`` as the answer of ``query_<table>`` with ``match`` on this state."""
        key = query_key(table, match)
        try:
            hash(key)
        except TypeError:  # an unhashable argument: not cached
            return
        self._queries[key] = payload

    def _query(self, table: str, match: dict[str, Any]) -> Any:
        """The payload of ``query_<table>`` with ``match`` on the current state (None when the
        query fails); asked once per state for the same arguments."""
        key = query_key(table, match)
        try:
            return self._queries[key]
        except KeyError:
            pass
        except TypeError:  # an unhashable argument: not cached
            return self._run_query(table, match)
        payload = self._queries[key] = self._run_query(table, match)
        return payload

    def _run_query(self, table: str, match: dict[str, Any]) -> Any:
        result = self.env.call(f"query_{table}", match)
        return result.result if result.ok else None

    def _write(self, index: int, tool: ToolSpec, call: WitnessCall) -> list[Ungrounded]:
        """Ground one accepted write on the state it meets (before it runs): it answers the
        first request for its tool not yet answered that grounds every argument."""
        options = self._by_tool.get(tool.name, ())
        unused = [i for i in options if i not in self.used]
        if not unused:
            why = (
                "no request of the task asks for this"
                if not options
                else ("every request for this tool is already answered by an earlier call")
            )
            return [Ungrounded(index, tool.name, None, why)]
        # The first request (in order) that grounds every argument is the least by (problems,
        # order): each is tried only up to its first problem, the later ones not at all, and
        # all problems are counted only when none grounds the write. Grounding leaves the
        # state as it was, so trying twice answers the same.
        for i in unused:
            if _plainly_unanswered(tool, call, self.asks[i]):
                continue  # a problem ``_problems`` would find too, found without any lookup
            if next(self._problems(index, tool, call, self.asks[i]), None) is None:
                self.used.add(i)
                return []
        tried = [(list(self._problems(index, tool, call, self.asks[i])), i) for i in unused]
        return min(tried, key=lambda t: (len(t[0]), t[1]))[0]

    def _problems(
        self, index: int, tool: ToolSpec, call: WitnessCall, ask: Ask
    ) -> Iterator[Ungrounded]:
        """Why the write does not answer ``ask``, argument by argument (nothing when it does)."""
        columns = self._cols(tool.table)
        for arg, value in call.args.items():
            column = columns.get(arg)
            reason = self._reason(tool, call, ask, arg, value, column)
            if reason is not None:
                yield Ungrounded(index, tool.name, arg, reason)
        for arg, value in ask.values.items():
            # a value the user states that the write leaves out: an agent that writes it (as
            # asked) does not reach the target, unless the record already has that value
            if arg in call.args or (
                tool.kind == "update" and self._unchanged(tool, call, arg, value)
            ):
                continue
            yield Ungrounded(
                index, tool.name, arg, "stated by the user, but the write leaves it out"
            )

    def _reason(
        self,
        tool: ToolSpec,
        call: WitnessCall,
        ask: Ask,
        arg: str,
        value: Any,
        column: Column | None,
    ) -> str | None:
        """Why an argument is not grounded, or None when it is."""
        if arg == tool.key:
            return self._ref_problem(ask.target, tool.table, arg, value, "the record to change")
        if arg in ask.values:
            return None if same(ask.values[arg], value) else "differs from the stated value"
        if arg in ask.refs and column is not None and column.references:
            ref_table, ref_col = column.references.split(".")
            return self._ref_problem(ask.refs[arg], ref_table, ref_col, value, "the named record")
        if column is not None and self._given(tool, column, value):
            return None
        if tool.kind == "update" and self._unchanged(tool, call, arg, value):
            return None
        if column is not None and self._determined(call, arg, value, column):
            return None
        return (
            "neither stated by the user, nor the user's id, nor a default, nor fixed by the policy"
        )

    def _given(self, tool: ToolSpec, column: Column, value: Any) -> bool:
        """The column's default, or the user's own id in an insert's required link to them."""
        if column.default is not None and same(column.default, value):
            return True
        own = (
            tool.kind == "insert"
            and column.required_on_insert
            and column.references is not None
            and column.references.split(".")[0] == self.actor_table
        )
        return own and same(value, self.pkg.user_profile.user_id)

    def _unchanged(self, tool: ToolSpec, call: WitnessCall, arg: str, value: Any) -> bool:
        """True when the update leaves ``arg`` as it is (asking for it changes nothing)."""
        key = tool.key
        if key is None or key not in call.args:
            return False
        payload = self._query(tool.table, {key: call.args[key]})
        rows = payload.get("rows") if isinstance(payload, dict) else None
        if not rows:
            return False
        row: dict[str, Any] = rows[0]
        return arg in row and same(row[arg], value)

    def _ref_problem(
        self, ref: RowRef | None, table: str, column: str, value: Any, what: str
    ) -> str | None:
        """Whether a named record is the one the call uses, unique, and known to the agent."""
        if ref is None or ref.table != table:
            return f"{what} is not named by the request"
        match, row, problem = self._resolve(ref, what)
        if problem is not None:
            return problem
        if column in match:
            return None if same(match[column], value) else f"{what} is another record"
        if row is None or not same(row.get(column), value):
            return f"{what} is another record"
        if not any(matches(r, match) for r in self.seen.find(table, column, value)):
            return f"{what} was never shown to the agent before this call"
        return None

    def _resolve(self, ref: RowRef, what: str) -> _Resolved:
        """The ref's match with parent refs replaced by their keys, the one row it picks out,
        and why it does not pick out exactly one row (parents too, each shown to the agent
        before); the row is None exactly when there is a problem.

        The answer depends on the state and the rows seen, which change only when a witness
        call runs, so it is kept until then (by the ref object itself: the entry holds the ref,
        and is used only for that very object)."""
        found = self._resolved.get((id(ref), what))
        if found is not None and found[0] is ref:
            return found[1]
        answer = self._resolve_now(ref, what)
        self._resolved[(id(ref), what)] = (ref, answer)
        return answer

    def _resolve_now(self, ref: RowRef, what: str) -> _Resolved:
        columns = self._cols(ref.table)
        match: dict[str, Any] = {}
        for col, want in ref.match.items():
            if not isinstance(want, RowRef):
                match[col] = want
                continue
            column = columns.get(col)
            fk = column.references if column is not None else None
            if fk is None:
                return match, None, f"{what}: {ref.table}.{col} is not a foreign key"
            parent_table, parent_col = fk.split(".")
            # the parent's own resolution is the one row it picks out (``_one`` on its match)
            parent_match, row, problem = self._resolve(want, what)
            if row is None:
                return match, None, problem
            seen = self.seen.find(parent_table, parent_col, row[parent_col])
            if not any(matches(r, parent_match) for r in seen):
                return (
                    match,
                    None,
                    f"{what}: its {parent_table} record was never shown to the agent",
                )
            match[col] = row[parent_col]
        if ref.prefer is not None:  # the best record among those the match picks out
            row = best_in(self._query(ref.table, preference_args(match, ref.prefer)), ref.prefer)
            return match, row, None if row else f"{what}: no unique best {ref.prefer} in {match}"
        row, problem = self._one(ref.table, match, what)
        return match, row, problem

    def _one(
        self, table: str, match: dict[str, Any], what: str
    ) -> tuple[dict[str, Any] | None, str | None]:
        """The one row of ``table`` that ``match`` (plain values) picks out, or why it picks
        out none or several."""
        payload = self._query(table, match)
        rows = payload.get("rows") if isinstance(payload, dict) else None
        total = payload.get("total") if isinstance(payload, dict) else None
        if total != 1 or not rows:
            return None, f"{what} is ambiguous or unknown ({total} records match {match})"
        return dict(rows[0]), None

    def _determined(self, call: WitnessCall, arg: str, value: Any, column: Column) -> bool:
        """Every other value the column could take is rejected by a rule, on this state.

        Asked once per argument of a witness call: the state does not change while the call
        is grounded (the probes put it back), and the value and column are the argument's."""
        if self._decided[0] is not call:
            self._decided = (call, {})
        found = self._decided[1].get(arg)
        if found is None:
            found = self._decided[1][arg] = self._probe(call, arg, value, column)
        return found

    def _probe(self, call: WitnessCall, arg: str, value: Any, column: Column) -> bool:
        others = (
            self._other_keys(column, value)
            if column.references and column.enum is None
            else alternatives(column, value)
        )
        if not others:
            return False
        before = self.env.image()
        for other in others:
            result = self.env.call(call.tool, {**call.args, arg: other})
            if result.ok:
                self.env.restore(before)
                return False
            if result.error is None or result.error.violated_rule is None:
                return False
        return True

    def _other_keys(self, column: Column, value: Any) -> list[Any]:
        """Every other value a foreign key could take on this state: the other keys of the
        referenced table, and NULL when the column allows it. Empty (nothing is proved) when
        the table has more than ``MAX_KEY_PROBES`` rows."""
        parent, key = (column.references or ".").split(".")
        rows = self.env.select(
            f"SELECT {quote_ident(key)} FROM {quote_ident(parent)} ORDER BY 1 LIMIT ?",
            (MAX_KEY_PROBES + 1,),
        )
        if len(rows) > MAX_KEY_PROBES:
            return []
        others: list[Any] = [] if column.not_null or value is None else [None]
        return others + [r[0] for r in rows if not same(r[0], value)]

    def _final(self, index: int, tool: ToolSpec, call: WitnessCall) -> list[Ungrounded]:
        """A refused write the user gives up after must stay refused whatever the agent
        decides: no combination of the repairs the policy suggests (``passing_repair``) makes
        it pass and change the state, within the search's bounds."""
        rule_id = (call.error or {}).get("violated_rule")
        stated = self.give_ups.get((tool.name, str(rule_id)))
        if rule_id is None or stated is None or self._retried(index, tool, call, stated):
            return []
        return self._unrepaired(index, tool, call.args, str(rule_id), stated, "gives up after")

    def _unrepaired(
        self,
        index: int,
        tool: ToolSpec,
        args: dict[str, Any],
        rule_id: str,
        stated: set[str],
        reaction: str,
    ) -> list[Ungrounded]:
        """Nothing when no combination of repairs of unstated values (``passing_repair``)
        makes the call refused by ``rule_id`` pass, within the search's bounds; else why the
        user's ``reaction`` to that refusal (giving up, a revised request) is not grounded."""
        found = self.passing_repair(tool, args, self.env.spec.rule(rule_id), stated)
        if found.exhausted:
            why = f"the user {reaction} {rule_id}, but its finality is not proved within {MAX_REPAIR_CALLS} candidate repairs of depth {MAX_REPAIR_DEPTH}"
            return [Ungrounded(index, tool.name, None, why)]
        if found.changes:
            said = ", ".join(f"{c} = {v!r}" for c, v in found.changes.items())
            why = f"the user {reaction} {rule_id}, but the agent can make the call pass with {said}"
            return [Ungrounded(index, tool.name, next(iter(found.changes)), why)]
        return []

    def _retried(self, index: int, tool: ToolSpec, call: WitnessCall, stated: set[str]) -> bool:
        """Whether a later accepted call makes the same request (the same stated values and
        record): then this refusal was worked around, and is not one the user gave up on."""
        keep = stated | ({tool.key} if tool.key else set())
        wanted = {k: v for k, v in call.args.items() if k in keep}
        return any(
            later.tool == call.tool
            and later.ok
            and all(k in later.args and same(later.args[k], v) for k, v in wanted.items())
            for later in self.pkg.witness[index + 1 :]
        )


def _plainly_unanswered(tool: ToolSpec, call: WitnessCall, ask: Ask) -> bool:
    """True when an argument of the write has a problem that ``_reason`` reports without
    looking at the state: the record to change is not the ask's target table, or a plain value
    differs from the one the ask states. (False says nothing: the full check decides.)"""
    values = ask.values
    for arg, value in call.args.items():
        if arg == tool.key:
            target = ask.target
            if target is None or target.table != tool.table:
                return True
        elif arg in values:
            stated = values[arg]
            # plain values only: ``_same`` on anything else may raise, and must raise where
            # the full check would
            if type(stated) in SCALARS and type(value) in SCALARS and stated != value:
                return True
    return False


def grounding(pkg: TaskPackage, env: Environment, origin: bytes) -> list[Ungrounded]:
    """Every write of a package's witness that its text does not determine.

    Args:
        pkg: The package (its asks, text, profile and witness are read).
        env: An environment of the package's domain; it is restored to ``origin`` and left in
            the replayed state.
        origin: The s_origin image.

    Returns:
        An empty list when the package is grounded; otherwise one entry per ungrounded write or
        argument (and per stated value missing from the text).

    Raises:
        CallInterrupted: A replayed or probing call was interrupted even after its retries.
    """
    with data_calls():
        return _Grounder(pkg, env).run(origin)


def certify_grounded(
    pkg: TaskPackage, env: Environment, origin: bytes, target: bytes | Snapshot
) -> tuple[Certificate, list[Ungrounded] | None]:
    """:func:`~veritask.task.certify` and :func:`grounding` of a package on one replay.

    Each witness call is grounded on the state it meets (the probes put the state back), then
    run and compared with the recording, exactly as the two would do on separate replays; the
    final state is diffed with ``target``.

    Returns:
        The certificate, and the ungrounded writes (empty when grounded); None instead of the
        list when the package is not certified (grounding speaks of a witness that replays).

    Raises:
        CallInterrupted: A replayed or probing call was interrupted even after its retries.
    """
    with data_calls():
        return _certify_grounded(pkg, env, origin, target)


def _certify_grounded(
    pkg: TaskPackage, env: Environment, origin: bytes, target: bytes | Snapshot
) -> tuple[Certificate, list[Ungrounded] | None]:
    grounder = _Grounder(pkg, env)
    env.restore(origin)
    found = _unstated(grounder.asks, pkg.task_description)
    for i, call in enumerate(pkg.witness):
        found += grounder.before(i, call)
        result = env.call(call.tool, call.args)
        problem = outcome_mismatch(call, result)
        if problem is not None:
            return Certificate(False, "replay", f"call {i} {call.tool}: {problem}"), None
        grounder.after(call, result)
    cert = end_certificate(env, target)
    return cert, (found if cert.certified else None)
