"""More requests in one task: the goals a user adds after the first, built to read as one visit.

A task with several requests is the hard kind (L3 when a rule meets one of them), and the
semantic lint (:func:`veritask.task.lint_package`) discards a whole package when its requests do
not hang together: a record made and retired in the same task (``undone_in_task``), two records
described with the same words (``repeated_request``). Generating such tasks and discarding them
at the end loses every multi-request candidate the lint meets, so here each further request is
chosen to pass those checks as it is made: a follow-up that would undo or repeat an earlier
request of the task is rolled back on the spot and another procedure is tried in its place.
The clock is kept by the sampler (later requests are drawn no earlier than the task's latest,
``StateView.now``), so a follow-up never moves it back.

A follow-up that fails (nothing to act on, or the policy forbids it outright) no longer ends the
task either: up to ``FOLLOW_TRIES`` procedures are tried, the natural follow-up first (the record
just written, or a child of it), then the others in a seeded order.
"""

from __future__ import annotations

from typing import Any

from veritask.policy import Transaction
from veritask.synth._analysis import DomainModel
from veritask.synth._episode import Episode, SubGoalTrace
from veritask.synth._escalation import goes_on
from veritask.synth._explorer import SymbolicExplorer
from veritask.task import WitnessCall

FOLLOW_TRIES = 4
"""Procedures tried for one more request before the task stops growing."""


def chained(explorer: SymbolicExplorer, episode: Episode, max_goals: int, chain: float) -> Episode:
    """``episode`` with more requests of its user, while a draw under ``chain`` asks for one
    and fewer than ``max_goals`` are made, never after a hand-off to a person. A refusal task, and one whose last request is refused
    on the state the user's own earlier requests made (the user stops there), are returned as
    they are.

    Args:
        explorer: The Explorer that made ``episode``; its witness and state are the episode's.
        episode: The episode after its first request (with any lead-up goals).
        max_goals: The most goals the task may have.
        chain: The chance of asking for one more goal after each.

    Returns:
        The same episode, its witness and goals extended.
    """
    if episode.refusal is not None or (episode.declined is not None and episode.declined_at):
        return episode  # a refusal, or a last request refused after the user's own: it ends
    goals = list(episode.subgoals)
    spec = explorer.model.spec
    while goals and len(goals) < max_goals and goes_on(spec, explorer.witness, explorer.rng, chain):
        more = next_goals(explorer, goals, episode.actor)
        if more is None:
            break
        goals += more
    episode.subgoals = goals
    episode.witness = list(explorer.witness)
    return episode


def next_goals(
    explorer: SymbolicExplorer, goals: list[SubGoalTrace], actor: Any
) -> list[SubGoalTrace] | None:
    """One more goal of ``actor`` (with its lead-up goals) that neither undoes nor repeats
    an earlier one; None, with the witness and the state as they were, when none is found."""
    first = explorer.follow_up(goals[-1])
    rest = [t for t in explorer.model.write_transactions if t is not first]
    explorer.rng.shuffle(rest)
    options = [first, *rest] if first is not None else rest
    for tx in options[:FOLLOW_TRIES]:
        more = attempt(explorer, tx, actor, goals)
        if more is not None:
            return more
    return None


def attempt(
    explorer: SymbolicExplorer, tx: Transaction, actor: Any, goals: list[SubGoalTrace]
) -> list[SubGoalTrace] | None:
    """One more goal through ``tx`` (with its lead-up goals), aimed at one of the procedure's
    rules drawn at random (the aimed request is walked to the rule's boundary, so it states what
    the rule tests); None, with the witness and the state as they were, when it is not reached
    or it clashes with ``goals``."""
    rules = explorer.model.rules_for(tx.tool)
    aim = explorer.rng.choice(rules) if rules else None
    mark, snap = len(explorer.witness), explorer.env.image()
    explorer.pre_traces = []
    trace = explorer.achieve(tx, actor, aim)
    more = None if trace is None else [*explorer.pre_traces, trace]
    if more is None or clashes(
        explorer.model, explorer.witness[:mark], explorer.witness[mark:], goals, more
    ):
        del explorer.witness[mark:]
        explorer.env.restore(snap)
        explorer.view.invalidate()
        explorer.pre_traces = []
        return None
    return more


def clashes(
    model: DomainModel,
    before: list[WitnessCall],
    after: list[WitnessCall],
    goals: list[SubGoalTrace],
    more: list[SubGoalTrace],
) -> bool:
    """True when the calls ``after`` retire a record the calls ``before`` created, or a new
    goal creates a record described with the same words as an earlier one."""
    return bool(retired(model, before, after)) or repeats(model, goals, more)


def retired(
    model: DomainModel, before: list[WitnessCall], after: list[WitnessCall]
) -> list[tuple[str, Any]]:
    """The records (table, key) created by an accepted insert in ``before`` that an accepted
    update in ``after`` sets to an inactive value of its table's lifecycle."""
    spec = model.spec
    made = set(_created(model, before))
    found: list[tuple[str, Any]] = []
    for call in after:
        tool = model.tools.get(call.tool) if call.ok else None
        if tool is None or tool.kind != "update" or tool.key is None:
            continue
        if not spec.has_table(tool.table):
            continue
        life = spec.table(tool.table).lifecycle
        key = call.args.get(tool.key)
        if (
            life is not None
            and (tool.table, key) in made
            and call.args.get(life.column) in set(life.inactive_values)
        ):
            found.append((tool.table, key))
    return found


def _created(model: DomainModel, calls: list[WitnessCall]) -> list[tuple[str, Any]]:
    """The (table, key) of each record an accepted insert among ``calls`` created."""
    spec = model.spec
    made: list[tuple[str, Any]] = []
    for call in calls:
        tool = model.tools.get(call.tool) if call.ok else None
        if tool is None or tool.kind != "insert" or not isinstance(call.result, dict):
            continue
        if not spec.has_table(tool.table):
            continue
        keys = [c.name for c in spec.table(tool.table).primary_key]
        if len(keys) == 1 and keys[0] in call.result:
            made.append((tool.table, call.result[keys[0]]))
    return made


def repeats(model: DomainModel, goals: list[SubGoalTrace], more: list[SubGoalTrace]) -> bool:
    """True when a goal of ``more`` creates a record with the same free-text words (multi-word
    values of columns without an enum) as an earlier insert goal of the same procedure tool."""
    seen: set[tuple[str, tuple[str, ...]]] = set()
    for n, trace in enumerate([*goals, *more]):
        words = _words(model, trace)
        if words is None:
            continue
        if n >= len(goals) and words in seen:
            return True
        seen.add(words)
    return False


def _words(model: DomainModel, trace: SubGoalTrace) -> tuple[str, tuple[str, ...]] | None:
    """The insert tool of ``trace`` and the free-text words its first request states (None for
    an update, or an insert that states none)."""
    tool = model.tool(trace.tx.tool)
    if tool.kind != "insert" or trace.ask is None:
        return None
    table = model.spec.table(tool.table)
    words = tuple(
        sorted(
            f"{c}={v}"
            for c, v in trace.ask.values.items()
            if isinstance(v, str)
            and " " in v
            and c in table.column_names
            and table.column(c).enum is None
        )
    )
    return (tool.name, words) if words else None


__all__ = ["FOLLOW_TRIES", "chained", "clashes", "next_goals", "repeats", "retired"]
