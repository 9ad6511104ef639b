"""The Projector: a spoiler-free task description from the user's point of view (LOGIGEN 3.5.3).

Goal-first, procedure-hidden: the text says what the user wants and what they believe, in the
user's own words (names, labels, amounts they would know), never tool names, table or column
identifiers, or the internal ids of records the user was not told about.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from veritask.policy import Transaction
from veritask.synth._analysis import DomainModel, column_words, humanize, row_key, target_key
from veritask.synth._explorer import Episode, SubGoalTrace
from veritask.synth._sampler import StateView
from veritask.task import SubGoal, TaskDescription, UserProfile

_IDENT = re.compile(r"\b[A-Za-z]+(?:_[A-Za-z0-9]+)+\b")


def plain(text: str) -> str:
    """A rule message in the user's words: identifiers become words, no trailing period."""
    return _IDENT.sub(lambda m: m.group(0).replace("_", " ").lower(), text).rstrip(".")


@dataclass
class Projection:
    """What the Projector produces for one episode."""

    task: TaskDescription
    profile: UserProfile
    tags: list[str]
    difficulty: str


class SymbolicProjector:
    """Renders episodes as user-view task descriptions."""

    def __init__(self, model: DomainModel) -> None:
        self.model = model

    # -- naming things the way the user would --------------------------------------------

    def describe(self, view: StateView, table: str, key: Any, actor: Any) -> str:
        """A record as the user knows it: a public code, a name, or a description via its parent."""
        if table in self.model.public_keys:
            return str(key)
        row = view.get(table, key)
        if row is None:
            return f"a {humanize(table)} that is not on file"
        owned = (
            "your "
            if self.model.owned(table)
            and view.owner(table, row) == actor
            and table != self.model.actor
            else ""
        )
        label = self.model.label.get(table)
        if label and row.get(label) is not None:
            return (
                f"{owned}{humanize(table)} '{row[label]}'"
                if owned or table != self.model.actor
                else f"'{row[label]}'"
            )
        return f"{owned or 'the '}{humanize(table)} ({', '.join(self._traits(view, table, row, actor))})"

    def _traits(self, view: StateView, table: str, row: dict[str, Any], actor: Any) -> list[str]:
        """What tells a label-less record apart: its parents, then its first plain number."""
        t = self.model.spec.table(table)
        parts = []
        for col in t.columns:
            if col.references and not col.primary_key and row.get(col.name) is not None:
                parent = col.references.split(".")[0]
                if parent != self.model.actor:
                    parts.append(self.describe(view, parent, row[col.name], actor))
        number = next(
            (
                c
                for c in t.columns
                if c.type in ("INTEGER", "REAL")
                and not (c.primary_key or c.references or c.computed or c.technical or c.enum)
            ),
            None,
        )
        if number is not None and row.get(number.name) is not None:
            parts.append(f"{column_words(number.name)} {row[number.name]}")
        return parts or [f"{humanize(table)}"]

    def value_text(self, view: StateView, table: str, col: str, value: Any, actor: Any) -> str:
        """One argument in words."""
        column = self.model.spec.table(table).column(col)
        if column.primary_key:
            return self.describe(view, table, value, actor)
        if column.references:
            parent = column.references.split(".")[0]
            described = self.describe(view, parent, value, actor)
            if parent == self.model.actor or parent in self.model.public_keys:
                return f"{column_words(col.removesuffix('_id'))} {described}"
            return described
        return f"{column_words(col)} {value}"

    def _details(
        self, view: StateView, trace: SubGoalTrace, args: dict[str, Any], actor: Any
    ) -> list[str]:
        tool = self.model.tool(trace.tx.tool)
        table = tool.table
        t = self.model.spec.table(table)
        key = target_key(tool)
        out = []
        for col, value in args.items():
            if col == key or col in trace.decided:
                continue
            column = t.column(col)
            if value is None or (
                column.references
                and column.references.split(".")[0] == self.model.actor
                and value == actor
            ):
                continue
            out.append(self.value_text(view, table, col, value, actor))
        return out

    def _initial(self, trace: SubGoalTrace) -> dict[str, Any]:
        args = dict(trace.args)
        for hit in reversed(trace.hits):
            for col, (tried, _) in hit.changed.items():
                if col not in trace.decided:
                    args[col] = tried
        return args

    def _request(
        self, view: StateView, trace: SubGoalTrace, actor: Any, args: dict[str, Any]
    ) -> str:
        tx = trace.tx
        details = self._details(view, trace, args, actor)
        what = tx.name[0].lower() + tx.name[1:]
        tool = self.model.tool(tx.tool)
        key = target_key(tool)
        if key is not None:
            subject = self.describe(view, tool.table, args[key], actor)
            tail = f" ({', '.join(details)})" if details else ""
            return f"Ask the agent to {what} for {subject}{tail}."
        tail = f": {', '.join(details)}" if details else ""
        return f"Ask the agent to {what}{tail}."

    def _triggers(
        self, view: StateView, trace: SubGoalTrace, actor: Any
    ) -> tuple[list[str], list[str]]:
        triggers: list[str] = []
        beliefs: list[str] = []
        table = self.model.tool(trace.tx.tool).table
        for hit in trace.hits:
            rule = self.model.spec.rule(hit.rule)
            visible = {c: v for c, v in hit.changed.items() if c not in trace.decided}
            if not visible:
                continue
            accepted = ", ".join(
                self.value_text(view, table, c, new, actor) for c, (_, new) in visible.items()
            )
            missing = [column_words(c) for c, (old, _) in visible.items() if old is None]
            tried = ", ".join(
                self.value_text(view, table, c, old, actor)
                for c, (old, _) in visible.items()
                if old is not None
            )
            triggers.append(
                f"IF the agent explains that this is not possible ({plain(rule.message)}), THEN accept {accepted} instead."
            )
            if tried:
                beliefs.append(f"You believe {tried} is acceptable for this request.")
            if missing:
                beliefs.append(
                    f"You do not think the {', '.join(missing)} is needed, and leave it out at first."
                )
        if trace.created_parent is not None:
            parent = trace.created_parent
            opened = ", ".join(self._details(view, parent, parent.args, actor))
            triggers.append(
                f"IF the agent says there is no room left, THEN agree to {parent.tx.name.lower()} ({opened}) and use it."
            )
        return triggers, beliefs

    # -- the whole description -----------------------------------------------------------

    def _who(self, view: StateView, actor: Any) -> tuple[str, dict[str, Any]]:
        table = self.model.spec.table(self.model.actor)
        row = view.get(table.name, actor) or {}
        label = self.model.label.get(table.name)
        name = str(row.get(label, actor)) if label else str(actor)
        attrs: dict[str, Any] = {}
        parts = []
        life = table.lifecycle.column if table.lifecycle else None
        for col in table.columns:
            if col.primary_key or col.name in (label, life) or col.computed or col.technical:
                continue
            value = row.get(col.name)
            attrs[col.name] = value
            parts.append(self.value_text(view, table.name, col.name, value, actor))
        text = f'You are {name} (user id: "{actor}")'
        return (text + (f", with {', '.join(parts)}." if parts else "."), {"name": name, **attrs})

    def who(self, view: StateView, actor: Any) -> tuple[str, dict[str, Any]]:
        """The user's self-introduction ("You are ...") and public attributes (``name`` first)."""
        return self._who(view, actor)

    def _refused(self, view: StateView, episode: Episode, item: Any, then: str) -> SubGoal:
        tx, args, target, rule = item
        trace = SubGoalTrace(
            tx=tx, args=args, result={}, target=target, decided=self.model.agent_decides(tx)
        )
        request = self._request(view, trace, episode.actor, args)
        trigger = f"IF the agent explains that this is not possible ({plain(rule.message)}), THEN accept that it cannot be done and {then}."
        return SubGoal(title=tx.name, request=request, reactive_triggers=[trigger])

    def _public(self, text: str, internal: set[str]) -> list[str]:
        """Internal ids the user can know anyway: those inside the labels of records they are
        told about (a course code in their own petition's text) and those the policy's rule
        messages mention (the agent will say them)."""
        quoted = " ".join(re.findall(r"(?<![A-Za-z])'([^']+?)'(?![A-Za-z])", text))
        messages = " ".join(r.message for r in self.model.spec.rules)
        return sorted(k for k in internal if k and (_contains(quoted, k) or _contains(messages, k)))

    def project(
        self, view: StateView, episode: Episode, edge: bool, internal: set[str] | None = None
    ) -> Projection:
        """Describe an episode; ``view`` shows the state after it (so new records have labels)."""
        actor = episode.actor
        who, attrs = self._who(view, actor)
        subgoals: list[SubGoal] = []
        beliefs: list[str] = []
        for trace in episode.subgoals:
            triggers, believed = self._triggers(view, trace, actor)
            beliefs += believed
            request = self._request(view, trace, actor, self._initial(trace))
            subgoals.append(
                SubGoal(title=trace.tx.name, request=request, reactive_triggers=triggers)
            )
        if episode.declined is not None:
            subgoals.insert(
                0, self._refused(view, episode, episode.declined, "move on to your next request")
            )
        if episode.refusal is not None:
            subgoals = [self._refused(view, episode, episode.refusal, "end the conversation")]
        goal = "; then ".join(
            s.request.removeprefix("Ask the agent to ").rstrip(".") for s in subgoals
        )
        gaps = [
            "You do NOT know the system's internal record ids; describe things by name, label and amount.",
            "You do NOT know the current state of your records or the exact policy limits until the agent tells you.",
        ]
        task = TaskDescription(
            who_you_are=who,
            cognitive_gaps=gaps,
            false_beliefs=beliefs,
            total_goal=f"Get the agent to {goal}.",
            sub_goals=subgoals,
        )
        tags, difficulty = classify(self.model, episode, bool(beliefs))
        archetype = _archetype(self.model, episode, edge, bool(beliefs))
        known = [str(actor)]
        for table in sorted(self.model.public_keys):
            t = self.model.spec.table(table)
            known += [str(row_key(t, r)) for r in view.rows(table)]
        known += [k for k in self._public(task.render(), internal or set()) if k not in known]
        profile = UserProfile(
            user_id=str(actor),
            name=attrs.pop("name"),
            archetype=archetype,
            attributes=attrs,
            known_ids=known,
        )
        return Projection(task=task, profile=profile, tags=tags, difficulty=difficulty)


def _contains(text: str, key: str) -> bool:
    return (
        key in text
        and re.search(rf"(?<![A-Za-z0-9_]){re.escape(key)}(?![A-Za-z0-9_])", text) is not None
    )


def classify(model: DomainModel, episode: Episode, adversarial: bool) -> tuple[list[str], str]:
    """Complexity tags and difficulty tier (L1-L3) from the witness and the goals."""
    writes = sum(1 for c in episode.witness if c.ok and model.writes(c.tool))
    violations = len(episode.rejected)
    rules = [model.spec.rule(r) for r in episode.rejected]
    hidden = any(not (set(h.changed) - t.decided) for t in episode.subgoals for h in t.hits)
    conditional = any(t.decided or _has_choice(model, t) for t in episode.subgoals)
    tags = set()
    if episode.refusal is not None:
        tags.add("refusal")
    if writes == 1 and violations == 0 and not conditional:
        tags.add("linear")
    if conditional:
        tags.add("conditional")
    if writes >= 2:
        tags.add("multi-step")
    if violations and writes:
        tags.add("waterfall")
    if adversarial:
        tags.add("adversarial")
    if hidden:
        tags.add("hidden-constraint")
    if any(model.tool(t.tx.tool).kind == "update" for t in episode.subgoals) or any(
        r.category in ("quota", "prerequisite", "irreversibility") for r in rules
    ):
        tags.add("state-based")
    if (writes >= 2 and violations >= 1) or violations >= 2 or (adversarial and hidden):
        level = "L3"
    elif writes <= 1 and violations == 0 and not conditional:
        level = "L1"
    else:
        level = "L2"
    return sorted(tags), level


def _has_choice(model: DomainModel, trace: SubGoalTrace) -> bool:
    table = model.spec.table(model.tool(trace.tx.tool).table)
    return any(
        (c := table.column(name)).references
        and c.references.split(".")[0] not in (model.actor,)
        and not model.owned(c.references.split(".")[0])
        for name in trace.args
        if name in table.column_names
    )


Archetype = Literal["mismatch", "entangled", "rookie", "edge"]


def _archetype(model: DomainModel, episode: Episode, edge: bool, adversarial: bool) -> Archetype:
    categories = {model.spec.rule(r).category for r in episode.rejected}
    if edge or "quota" in categories:
        return "edge"
    if adversarial or categories & {"authority", "policy"}:
        return "mismatch"
    if len(episode.subgoals) >= 2:
        return "entangled"
    return "rookie"


def describe_transaction(tx: Transaction) -> str:
    """A one-line summary of an SOP."""
    return f"{tx.name}: {tx.goal}"
