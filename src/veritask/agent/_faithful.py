"""The faithful agent: solves a task from what the user says, the policy and tool results.

It never sees the witness. The scripted user reveals each request in structured form (the
:class:`~veritask.task.Ask` its text was rendered from) under the message key ``veritask``; the
agent finds the records the user names with read tools, fills the user's own id, computes what
the policy fixes (a calculation rule's formula over the rows it has seen; the one enum value a
rule accepts), makes the write, and when the policy refuses the request itself, explains the
refusal and waits for the user's reaction. On a grounded task it must reach s_target: that is
the end-to-end proof that tasks are solvable from their text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from veritask.agent._base import PAYLOAD, Turn, text_message, tool_call_message
from veritask.agent._dual import ask_user_to_call, user_results
from veritask.env import evaluate_on_rows
from veritask.policy import DomainSpec, Rule, ToolSpec, actor_table, build_tools, user_tool_names
from veritask.task import Ask, RowRef, best_row, preference_args

MAX_TRIES = 12
"""Writes one request may take before the agent gives up on it."""
CATALOGUE_ROWS = 100
"""Rows one catalogue read asks for."""
_TABLES = re.compile(r"\b(?:FROM|JOIN)\s+([a-z][a-z0-9_]*)", re.I)
LINK_DEPTH = 3
"""How far the agent follows links from the row it writes to read the records formulas use."""


@dataclass
class _Job:
    """One request being worked on."""

    ask: Ask
    keys: dict[str, Any] = field(default_factory=dict)
    """Resolved record keys: ``"target"`` and each foreign-key column of ``ask.refs``."""
    decided: dict[str, Any] = field(default_factory=dict)
    """Values the agent worked out from the policy."""
    tried: dict[str, list[Any]] = field(default_factory=dict)
    writes: int = 0
    lookups: set[str] = field(default_factory=set)
    """Read calls already made for this job (by a canonical text of the call)."""
    choose: list[tuple[str, str]] = field(default_factory=list)
    """(column, rule id): a record to pick for an unstated foreign key the rule refused, once
    the records it may name are read (``_other_key``)."""


def _matches(row: dict[str, Any], match: dict[str, Any]) -> bool:
    return all(k in row and row[k] == v for k, v in match.items())


class FaithfulAgent:
    """A symbolic assistant that acts only on what the user reveals, the policy and tool results."""

    name = "faithful"

    def __init__(self, spec: DomainSpec) -> None:
        self.spec = spec
        self.tools: dict[str, ToolSpec] = build_tools(spec)
        self.user_side = user_tool_names(spec)
        """The user's own tools: the agent asks the user to run them."""
        self.actor = actor_table(spec)
        self.user_id: Any = None
        self.queue: list[Ask] = []
        self.job: _Job | None = None
        self.seen: dict[str, list[dict[str, Any]]] = {}
        self.pending: tuple[str, dict[str, Any]] | None = None
        self.read = 0
        self.count = 0
        self.say: dict[str, Any] | None = None
        self.catalogues: set[str] = set()
        self.authenticated = False
        self.more: tuple[str, dict[str, Any]] | None = None
        """The next page of a list result shown in part (``next_offset``)."""

    # -- listening -------------------------------------------------------------------------

    async def respond(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        """Absorb the new messages, then make the next call or say the next thing."""
        del tools  # the agent knows the domain's tools from the policy
        for message in messages[self.read :]:
            self._absorb(message)
        self.read = len(messages)
        turn = self._act()
        self.read += 1
        return turn

    def _absorb(self, message: dict[str, Any]) -> None:
        if message.get("role") == "tool" and self.pending is not None:
            self._result(*self.pending, message.get("content") or "null")
            self.pending = None
        elif message.get("role") == "user":
            for tool, args, content in user_results(message):  # the user's own calls
                if self.pending is not None and self.pending[0] == tool:
                    self._result(tool, args, content)
                    self.pending = None
            self._heard(message.get(PAYLOAD) or {})

    def _heard(self, payload: dict[str, Any]) -> None:
        if payload.get("user_id") is not None:
            self.user_id = payload["user_id"]
        if payload.get("give_up"):
            self.job = None
        if payload.get("ask") is not None:
            if self.job is not None and self.job.writes:
                self.job = None  # a revised request replaces the refused one
            self.queue += [Ask.model_validate(a) for a in payload.get("first", [])]
            self.queue.append(Ask.model_validate(payload["ask"]))
            if self.job is not None and not self.job.writes:
                self.job = None

    def _result(self, tool: str, args: dict[str, Any], content: str) -> None:
        try:
            payload = json.loads(content)
        except (ValueError, TypeError):
            payload = None
        spec = self.tools.get(tool)
        if spec is None:
            return
        if not isinstance(payload, dict):
            payload = {} if spec.writes and payload is not None else None  # a procedure's text
            if payload is None:
                return
        if set(payload) == {"error"} and isinstance(payload["error"], dict):
            self._rejected(spec, args, payload["error"])
        elif "rows" in payload:
            self.seen.setdefault(spec.table, []).extend(payload["rows"])
            following = payload.get("next_offset")
            if isinstance(following, int) and not isinstance(following, bool):
                self.more = (tool, {**args, "offset": following})
        elif spec.writes:
            if payload:
                self.seen.setdefault(spec.table, []).append(payload)
            self.job = None
            if not self.queue:  # more of the same request to do: carry on before reporting
                self.say = {"text": "Done: that change is made."}

    # -- acting ----------------------------------------------------------------------------

    def _act(self) -> Turn:
        if self.more is not None:  # the rest of a list shown in part
            page, self.more = self.more, None
            return self._call(*page)
        if self.say is not None:
            said, self.say = self.say, None
            return Turn(self._text(said))
        if self.user_id is not None and not self.authenticated:
            # look the user up first, as the policy's authentication protocol asks
            self.authenticated = True
            key = self.spec.table(self.actor).primary_key
            if key and f"query_{self.actor}" in self.tools:
                return self._call(f"query_{self.actor}", {key[0].name: self.user_id})
        if self.job is None and self.queue:
            self.job = _Job(self.queue.pop(0))
        if self.job is None:
            return Turn(text_message("All done on my side."))
        call = self._next_call(self.job)
        if call is None:
            self.job = None
            return Turn(text_message("I could not identify the record you mean."))
        return self._call(*call)

    def _call(self, tool: str, args: dict[str, Any]) -> Turn:
        self.pending = (tool, args)
        self.count += 1
        if tool in self.user_side:  # dual control: the user runs it and reports back
            return Turn(ask_user_to_call(f"call_{self.count}", tool, args))
        return Turn(tool_call_message(f"call_{self.count}", tool, json.dumps(args, sort_keys=True)))

    def _text(self, said: dict[str, Any]) -> dict[str, Any]:
        message = text_message(said["text"])
        if "refused" in said:
            message[PAYLOAD] = {"refused": said["refused"]}
        return message

    def _next_call(self, job: _Job) -> tuple[str, dict[str, Any]] | None:
        """A read that resolves a named record, or the write itself."""
        tool = self.tools[job.ask.tool]
        if tool.kind == "procedure":  # the request states the call's arguments as a whole
            job.writes += 1
            return None if job.writes > MAX_TRIES else (tool.name, dict(job.ask.values))
        named = [("target", job.ask.target)] if job.ask.target is not None else []
        named += list(job.ask.refs.items())
        for slot, ref in named:
            if ref is None or slot in job.keys:
                continue
            step = self._resolve(job, slot, ref, tool)
            if step is not None:
                return step
            if slot not in job.keys:
                return None
        read = self._key_read(job, tool)
        if read is not None:
            return read
        args = self._args(job, tool)
        read = self._linked_read(job, tool.table, self._new_row(job, tool, args), LINK_DEPTH)
        if read is None:
            read = self._catalogue_read(tool)
        if read is not None:
            return read
        job.writes += 1
        if job.writes > MAX_TRIES:
            return None
        return tool.name, self._required(job, tool, args)

    def _new_row(self, job: _Job, tool: ToolSpec, args: dict[str, Any]) -> dict[str, Any]:
        """The row the write would make: the record as last seen (updates) overlaid by args."""
        old = self._old_row(job, tool)
        return {**(old or {}), **args}

    def _old_row(self, job: _Job, tool: ToolSpec) -> dict[str, Any] | None:
        if tool.kind != "update" or "target" not in job.keys:
            return None
        key = tool.key or "id"
        rows = [r for r in self.seen.get(tool.table, []) if r.get(key) == job.keys["target"]]
        return rows[-1] if rows else None

    def _linked_read(
        self, job: _Job, table: str, row: dict[str, Any], depth: int
    ) -> tuple[str, dict[str, Any]] | None:
        """A read of a record the row links to (and the records those link to), once per
        request, so the policy's formulas can be worked out on current rows."""
        for col in self.spec.table(table).columns:
            value = row.get(col.name)
            if col.references is None or value is None:
                continue
            parent, parent_col = col.references.split(".")
            text = json.dumps(["link", parent, parent_col, value], sort_keys=True, default=str)
            if text not in job.lookups:
                job.lookups.add(text)
                return f"query_{parent}", {parent_col: value}
            seen = [r for r in self.seen.get(parent, []) if r.get(parent_col) == value]
            if seen and depth > 1:
                found = self._linked_read(job, parent, seen[-1], depth - 1)
                if found is not None:
                    return found
        return None

    def _catalogue_read(self, tool: ToolSpec) -> tuple[str, dict[str, Any]] | None:
        """A read of a catalogue (a reference table) the policy's formulas for this write look
        up, once per conversation: formulas join them on more than the row's own links."""
        for rule in self._formulas(tool, None):
            text = rule.repair.value if rule.repair is not None else ""
            for table in _TABLES.findall(f"{text} {rule.condition}"):
                tier = next((t.tier for t in self.spec.tables if t.name == table), None)
                if tier == "reference" and table not in self.catalogues:
                    self.catalogues.add(table)
                    return f"query_{table}", {"limit": CATALOGUE_ROWS}
        return None

    def _required(self, job: _Job, tool: ToolSpec, args: dict[str, Any]) -> dict[str, Any]:
        """Fill a required column nobody stated (an insert cannot leave it out): from the
        policy's formula for it when a calculation rule gives one, else with a first enum
        value, which a rule refusing it makes the agent revise (:meth:`_other_choice`)."""
        if tool.kind != "insert":
            return args
        stated = self._stated(job, tool)
        for col in self.spec.table(tool.table).columns:
            if col.name in args or col.name in stated or not col.required_on_insert:
                continue
            value = self._required_value(job, tool, args, col.name)
            if value is None and col.enum:
                value = col.default if col.default in col.enum else col.enum[0]
            if value is not None:
                args[col.name] = job.decided[col.name] = value
        return args

    def _required_value(self, job: _Job, tool: ToolSpec, args: dict[str, Any], column: str) -> Any:
        """The value a calculation rule whose guard holds gives ``column`` (None: no rule)."""
        for rule in self._formulas(tool, None):
            if rule.repair is None or rule.repair.column != column:
                continue
            if rule.when and not self._formula(tool, args, job, rule.when):
                continue
            value = self._formula(tool, args, job, rule.repair.value)
            if value is not None:
                return value
        return None

    def _key_column(self, slot: str, tool: ToolSpec) -> tuple[str, str]:
        """(table, column) whose value a named record supplies."""
        if slot == "target":
            return tool.table, tool.key or "id"
        fk = self.spec.table(tool.table).column(slot).references or ""
        table, column = fk.split(".")
        return table, column

    def _resolve(
        self, job: _Job, slot: str, ref: RowRef, tool: ToolSpec
    ) -> tuple[str, dict[str, Any]] | None:
        """Look the record up (a read call), or record its key once the read is back."""
        table, column = self._key_column(slot, tool)
        match = self._scalar_match(ref)
        if match is None:
            return self._parent_lookup(job, ref)
        if column in match:
            job.keys[slot] = match[column]
            return None
        read = match if ref.prefer is None else preference_args(match, ref.prefer)
        text = json.dumps([ref.table, read], sort_keys=True, default=str)
        if text not in job.lookups:
            job.lookups.add(text)
            return f"query_{ref.table}", read
        rows = [r for r in self._current(table) if _matches(r, match)]
        if ref.prefer is not None:  # the best record among those the match picks out
            rows = [r for r in [best_row(rows, ref.prefer)] if r is not None]
        keys = {json.dumps(r.get(column), default=str) for r in rows}
        if len(keys) == 1:
            job.keys[slot] = rows[-1][column]
        return None

    def _scalar_match(self, ref: RowRef) -> dict[str, Any] | None:
        """The ref's match with parents replaced by their keys (None while a parent is unknown)."""
        out: dict[str, Any] = {}
        for col, want in ref.match.items():
            if not isinstance(want, RowRef):
                out[col] = want
                continue
            found = self._known_key(ref.table, col, want)
            if found is None:
                return None
            out[col] = found
        return out

    def _current(self, table: str) -> list[dict[str, Any]]:
        """The rows of ``table`` seen so far, each record in the last version seen."""
        keys = [c.name for c in self.spec.table(table).primary_key]
        latest: dict[str, dict[str, Any]] = {}
        for row in self.seen.get(table, []):
            ident = [row.get(k) for k in keys] if keys else row
            latest[json.dumps(ident, sort_keys=True, default=str)] = row
        return list(latest.values())

    def _known_key(self, table: str, col: str, parent: RowRef) -> Any:
        fk = self.spec.table(table).column(col).references or ""
        parent_table, parent_col = fk.split(".")
        match = self._scalar_match(parent)  # the parent's own parents resolved first
        if match is None:
            return None
        rows = [r for r in self._current(parent_table) if _matches(r, match)]
        keys = {json.dumps(r.get(parent_col), default=str) for r in rows}
        return rows[-1][parent_col] if len(keys) == 1 else None

    def _parent_lookup(self, job: _Job, ref: RowRef) -> tuple[str, dict[str, Any]] | None:
        """Read the first parent record the ref names that the agent has not looked up yet."""
        for col, want in ref.match.items():
            if not isinstance(want, RowRef) or self._known_key(ref.table, col, want) is not None:
                continue
            match = self._scalar_match(want)
            if match is None:
                return self._parent_lookup(job, want)
            text = json.dumps([want.table, match], sort_keys=True, default=str)
            if text in job.lookups:
                return None
            job.lookups.add(text)
            return f"query_{want.table}", match
        return None

    def _args(self, job: _Job, tool: ToolSpec) -> dict[str, Any]:
        """The write's arguments: stated, named, the user's own id, and what was worked out."""
        args: dict[str, Any] = {}
        if tool.key is not None and "target" in job.keys:
            args[tool.key] = job.keys["target"]
        args.update(job.ask.values)
        args.update({col: job.keys[col] for col in job.ask.refs if col in job.keys})
        table = self.spec.table(tool.table)
        for col in table.columns:
            own = col.references is not None and col.references.split(".")[0] == self.actor
            if own and tool.kind == "insert" and col.required_on_insert and col.name not in args:
                args[col.name] = self.user_id
        args.update(job.decided)
        return args

    # -- when the policy says no ---------------------------------------------------------------

    def _rejected(self, tool: ToolSpec, args: dict[str, Any], error: dict[str, Any]) -> None:
        job = self.job
        rule_id = error.get("violated_rule")
        rule = self._rule(rule_id)
        # a procedure's refusal is of the request as stated: nothing to work out
        if (
            job is not None
            and rule is not None
            and tool.kind != "procedure"
            and self._work_out(job, tool, args, rule)
        ):
            return
        text = f"I'm sorry, I can't do that: {error.get('message', '')} {error.get('hint') or ''}"
        self.say = {"text": text.strip(), **({"refused": rule_id} if rule_id else {})}

    def _rule(self, rule_id: Any) -> Rule | None:
        try:
            return self.spec.rule(str(rule_id)) if rule_id else None
        except KeyError:
            return None

    def _stated(self, job: _Job, tool: ToolSpec) -> set[str]:
        stated = set(job.ask.values) | set(job.ask.refs)
        return stated | ({tool.key} if tool.key else set())

    def _work_out(self, job: _Job, tool: ToolSpec, args: dict[str, Any], rule: Rule) -> bool:
        """Adjust a value the user did not state so the rule holds; False when the rule refuses
        what the user asked for. A value a calculation rule's formula gives comes first (for
        the rule itself, or for a column the rule finds missing), then another enum value."""
        stated = self._stated(job, tool)
        looked_at = f"{rule.when or ''} {rule.condition}"
        for formula in self._formulas(tool, rule):
            column = formula.repair.column if formula.repair else ""
            if column in stated or (formula is not rule and f"NEW.{column}" not in looked_at):
                continue
            value = self._formula(tool, args, job, formula.repair.value if formula.repair else "")
            tried = job.tried.setdefault(column, [])
            if value is not None and value not in tried:
                tried.append(value)
                job.decided[column] = value
                return True
        return self._other_choice(job, tool, rule, stated) or self._other_key(
            job, tool, rule, stated
        )

    def _formulas(self, tool: ToolSpec, rule: Rule | None) -> list[Rule]:
        """The rule itself when it has a formula, then the table's other calculation rules."""
        others = [
            r
            for r in self.spec.rules
            if r.repair is not None
            and r.table == tool.table
            and tool.kind in r.on
            and r is not rule
        ]
        return ([rule] if rule is not None and rule.repair is not None else []) + others

    def _formula(self, tool: ToolSpec, args: dict[str, Any], job: _Job, expr: str) -> Any:
        """A policy formula over the rows seen: NEW is the row the write would make."""
        table = self.spec.table(tool.table)
        old = None
        if tool.kind == "update" and "target" in job.keys:
            key = tool.key or "id"
            rows = [r for r in self.seen.get(tool.table, []) if r.get(key) == job.keys["target"]]
            old = rows[-1] if rows else None
        new = {c.name: c.default for c in table.columns} if old is None else dict(old)
        new.update(args)
        return evaluate_on_rows(self.spec, expr, new, old, self.seen)

    def _other_choice(self, job: _Job, tool: ToolSpec, rule: Rule, stated: set[str]) -> bool:
        """Try the next enum value of an unstated column the rule looks at."""
        table = self.spec.table(tool.table)
        for col in table.columns:
            if col.name in stated or col.enum is None or not rule.tests_value(col.name):
                continue
            tried = job.tried.setdefault(col.name, [])
            current = job.decided.get(col.name, col.default)
            if current not in tried:
                tried.append(current)
            left = [
                v
                for v in col.enum
                if v not in tried and not self._still_refused(job, tool, rule, col.name, v)
            ]
            if left:
                job.decided[col.name] = left[0]
                tried.append(left[0])
                return True
        return False

    def _other_key(self, job: _Job, tool: ToolSpec, rule: Rule, stated: set[str]) -> bool:
        """Pick another record for a foreign key the agent decides (a transaction's
        ``agent_decides``) that the rule tests, an approver the routing rule names: the records
        it may name are read first (``_key_read``), then the first one the rule, worked out on
        the rows seen, accepts is tried (``_pick_key``)."""
        decides = {
            c for tx in self.spec.transactions if tx.tool == tool.name for c in tx.agent_decides
        }
        for col in self.spec.table(tool.table).columns:
            if col.name in stated or col.name not in decides:
                continue
            if col.references is None or col.enum is not None:
                continue
            if not rule.tests_value(col.name):
                continue
            if col.references.split(".")[0] not in self.catalogues:
                job.choose.append((col.name, rule.id))
                return True
            if self._pick_key(job, tool, rule, col.name):
                return True
        return False

    def _key_read(self, job: _Job, tool: ToolSpec) -> tuple[str, dict[str, Any]] | None:
        """The read of the records a refused foreign key may name (once per conversation),
        then the choice among them (``_pick_key``), before the next write."""
        while job.choose:
            column, rule_id = job.choose[0]
            parent = (self.spec.table(tool.table).column(column).references or ".").split(".")[0]
            if parent not in self.catalogues:
                self.catalogues.add(parent)
                return f"query_{parent}", {"limit": CATALOGUE_ROWS}
            job.choose.pop(0)
            rule = self._rule(rule_id)
            if rule is not None:
                self._pick_key(job, tool, rule, column)
        return None

    def _pick_key(self, job: _Job, tool: ToolSpec, rule: Rule, column: str) -> bool:
        """Set ``column`` to the first key, in the order the records were read, not tried yet
        that the rule does not refuse on the rows seen."""
        fk = self.spec.table(tool.table).column(column).references or "."
        parent, key = fk.split(".")
        tried = job.tried.setdefault(column, [])
        current = self._args(job, tool).get(column)
        if current not in tried:
            tried.append(current)
        for row in self._current(parent):
            value = row.get(key)
            if value in tried or self._still_refused(job, tool, rule, column, value):
                continue
            job.decided[column] = value
            tried.append(value)
            return True
        return False

    def _still_refused(
        self, job: _Job, tool: ToolSpec, rule: Rule, column: str, value: Any
    ) -> bool:
        """Whether the rule, worked out on the rows seen, refuses the write with ``column`` set
        to ``value`` too (a value it refuses whatever else is chosen is not worth trying)."""
        args = {**self._args(job, tool), column: value}
        guard = self._formula(tool, args, job, rule.when) if rule.when else True
        return bool(guard) and bool(self._formula(tool, args, job, rule.condition))
