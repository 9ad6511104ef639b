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
from veritask.synth._episode import Episode, Hit, SubGoalTrace
from veritask.synth._preference import PREFERENCE_TAG, has_preference
from veritask.synth._refs import AskMaker, part_text, ref_text
from veritask.synth._sampler import StateView
from veritask.task import Ask, Fallback, SubGoal, TaskDescription, UserProfile

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

    # -- requests, rendered from their structure -----------------------------------------

    def _ask(self, view: StateView, trace: SubGoalTrace, actor: Any) -> Ask:
        """The goal's first request: as the Explorer built it on the state it met, else (an
        episode recorded without requests) built on ``view``."""
        if trace.ask is not None:
            return trace.ask
        return AskMaker(self.model, view, actor).ask(trace.tx, self._initial(trace), trace.decided)

    def _revised(self, view: StateView, trace: SubGoalTrace, hit: Hit, actor: Any) -> Ask:
        if hit.ask is not None:
            return hit.ask
        args = dict(trace.args)
        for later in trace.hits[trace.hits.index(hit) + 1 :]:
            for col, (tried, _) in later.changed.items():
                args[col] = tried
        return AskMaker(self.model, view, actor).ask(trace.tx, args, trace.decided)

    def _initial(self, trace: SubGoalTrace) -> dict[str, Any]:
        args = dict(trace.args)
        for hit in reversed(trace.hits):
            for col, (tried, _) in hit.changed.items():
                if col not in trace.decided:
                    args[col] = tried
        return args

    def _parts(self, ask: Ask, actor: Any, only: set[str] | None = None) -> list[str]:
        """The values and named records of a request in words, in column order."""
        table = self.model.spec.table(self.model.tool(ask.tool).table)
        out = []
        for col in table.columns:
            if only is not None and col.name not in only:
                continue
            if col.name in ask.values:
                out.append(part_text(self.model, table.name, col.name, ask.values[col.name], actor))
            elif col.name in ask.refs:
                out.append(part_text(self.model, table.name, col.name, ask.refs[col.name], actor))
        return out

    def render(self, tx: Transaction, ask: Ask, actor: Any) -> str:
        """A request's text, saying every value the ask states."""
        details = self._parts(ask, actor)
        what = tx.name[0].lower() + tx.name[1:]
        if ask.target is not None:
            subject = ref_text(self.model, ask.target, actor)
            tail = f" ({', '.join(details)})" if details else ""
            return f"Ask the agent to {what} for {subject}{tail}."
        tail = f": {', '.join(details)}" if details else ""
        return f"Ask the agent to {what}{tail}."

    def _fallbacks(
        self, view: StateView, trace: SubGoalTrace, first: Ask, actor: Any
    ) -> tuple[list[Fallback], list[str], list[str]]:
        """One fallback (and its trigger) per refusal the user reacts to by changing what they
        ask for; the beliefs the first request stood on."""
        fallbacks: list[Fallback] = []
        triggers: list[str] = []
        beliefs: list[str] = []
        prev = first
        key = target_key(self.model.tool(trace.tx.tool))
        for hit in trace.hits:
            then = self._revised(view, trace, hit, actor)
            if key is not None and key not in hit.changed and then.target != prev.target:
                # the same record, named again on the state the retry met: the user names it
                # as before (a new name would read as another record)
                then = then.model_copy(update={"target": prev.target})
            changed = _changed(prev, then)
            if not changed and hit.created is None:
                prev = then
                continue
            rule = self.model.spec.rule(hit.rule)
            made = [self._final_ask(view, hit.created, actor)] if hit.created else []
            fallbacks.append(Fallback(rule=rule.id, then=then, first=made))
            triggers.append(self._trigger(rule.message, then, changed, made, hit, actor))
            beliefs += self._beliefs(prev, changed, actor)
            prev = then
        return fallbacks, triggers, beliefs

    def _final_ask(self, view: StateView, trace: SubGoalTrace, actor: Any) -> Ask:
        """What the user asks for in the end (a parent record opened on the way)."""
        return (
            self._revised(view, trace, trace.hits[-1], actor)
            if trace.hits
            else self._ask(view, trace, actor)
        )

    def _trigger(
        self, message: str, then: Ask, changed: set[str], made: list[Ask], hit: Hit, actor: Any
    ) -> str:
        accepted = self._parts(then, actor, changed)
        if "target" in changed and then.target is not None:
            accepted.insert(0, ref_text(self.model, then.target, actor))
        instead = f"accept {', '.join(accepted)} instead" if accepted else "try again"
        if made and hit.created is not None:
            opened = ", ".join(self._parts(made[0], actor))
            name = hit.created.tx.name.lower()
            return f"IF the agent explains that this is not possible ({plain(message)}), THEN agree to {name} ({opened}) and {instead}."
        return (
            f"IF the agent explains that this is not possible ({plain(message)}), THEN {instead}."
        )

    def _beliefs(self, prev: Ask, changed: set[str], actor: Any) -> list[str]:
        tried = self._parts(prev, actor, changed)
        if "target" in changed and prev.target is not None:
            tried.insert(0, ref_text(self.model, prev.target, actor))
        missing = [
            column_words(c)
            for c in sorted(changed - {"target"})
            if c not in prev.values and c not in prev.refs
        ]
        out = []
        if tried:
            out.append(f"You believe {', '.join(tried)} is acceptable for this request.")
        if missing:
            out.append(
                f"You do not think the {', '.join(missing)} is needed, and leave it out at first."
            )
        return out

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
            if value is not None:  # an empty optional link says nothing ("manager: none")
                parts.append(self.value_text(view, table.name, col.name, value, actor))
        text = f'You are {name} (user id: "{actor}")'
        return (text + (f", with {', '.join(parts)}." if parts else "."), {"name": name, **attrs})

    def who(self, view: StateView, actor: Any) -> tuple[str, dict[str, Any]]:
        """The user's self-introduction ("You are ...") and public attributes (``name`` first)."""
        return self._who(view, actor)

    def _refused(self, view: StateView, episode: Episode, item: Any, then: str) -> SubGoal:
        tx, args, target, rule = item
        ask = episode.refused_ask
        if ask is None:
            trace = SubGoalTrace(
                tx=tx, args=args, result={}, target=target, decided=self.model.agent_decides(tx)
            )
            ask = self._ask(view, trace, episode.actor)
        trigger = f"IF the agent explains that this is not possible ({plain(rule.message)}), THEN accept that it cannot be done and {then}."
        return SubGoal(
            title=tx.name,
            request=self.render(tx, ask, episode.actor),
            reactive_triggers=[trigger],
            ask=ask,
            fallbacks=[Fallback(rule=rule.id)],
        )

    def _subgoal(
        self, view: StateView, trace: SubGoalTrace, actor: Any
    ) -> tuple[SubGoal, list[str]]:
        ask = self._ask(view, trace, actor)
        fallbacks, triggers, beliefs = self._fallbacks(view, trace, ask, actor)
        sub = SubGoal(
            title=trace.tx.name,
            request=self.render(trace.tx, ask, actor),
            reactive_triggers=triggers,
            ask=ask,
            fallbacks=fallbacks,
        )
        return sub, beliefs

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
            sub, believed = self._subgoal(view, trace, actor)
            beliefs += believed
            subgoals.append(sub)
        if episode.declined is not None:
            last = episode.declined_at >= len(subgoals)
            then = "end the conversation" if last else "move on to your next request"
            refused = self._refused(view, episode, episode.declined, then)
            subgoals.insert(episode.declined_at, refused)
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
        tags = sorted({*tags, PREFERENCE_TAG}) if has_preference(task) else tags
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


def _changed(prev: Ask, then: Ask) -> set[str]:
    """What a revised request changes: columns stated or named differently, and ``target``."""
    out = {"target"} if prev.target != then.target else set()
    for part in ("values", "refs"):
        old, new = getattr(prev, part), getattr(then, part)
        out |= {c for c in set(old) | set(new) if old.get(c) != new.get(c) and c in new}
    return out


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
    """A first label for the episode's user, read from what happened in it.

    The symbolic generator replaces it with the archetype the slot was built as (the Set
    Designer's cast, ``_cast``); only the LLM-mode projector keeps it as the final label."""
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
