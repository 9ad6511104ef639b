"""The actions component: the agent made the witness's writes, in any order, and no others."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from veritask.task import WitnessCall
from veritask.verify._compare import format_call, mismatched_keys, short
from veritask.verify._verdict import ComponentResult

if TYPE_CHECKING:
    from veritask.task import Trajectory

WRITE_PREFIXES = ("insert_", "update_")


@dataclass(frozen=True)
class _Call:
    tool: str
    args: dict[str, Any]

    def matches(self, other: _Call) -> bool:
        return self.tool == other.tool and not mismatched_keys(self.args, other.args)

    def __str__(self) -> str:
        return format_call(self.tool, self.args)


def gold_calls(witness: Sequence[WitnessCall]) -> list[_Call]:
    """The witness's successful write calls."""
    return [_Call(c.tool, c.args) for c in witness if c.ok and c.tool.startswith(WRITE_PREFIXES)]


def agent_calls(traj: Trajectory) -> list[_Call]:
    """The agent's successful write calls."""
    return [_Call(s.tool, s.args or {}) for s in traj.steps if s.ok and s.writes]


def _augment(g: int, edges: list[list[int]], owner: list[int | None], seen: set[int]) -> bool:
    for a in edges[g]:
        if a in seen:
            continue
        seen.add(a)
        prev = owner[a]
        if prev is None or _augment(prev, edges, owner, seen):
            owner[a] = g
            return True
    return False


def match_calls(gold: Sequence[_Call], agent: Sequence[_Call]) -> list[int | None]:
    """A maximum matching of gold calls to distinct agent calls: ``owner[agent_i] = gold_j``."""
    edges = [[i for i, a in enumerate(agent) if g.matches(a)] for g in gold]
    owner: list[int | None] = [None] * len(agent)
    for g in range(len(gold)):
        _augment(g, edges, owner, set())
    return owner


def _closest(gold: _Call, agent: Sequence[_Call]) -> str:
    same = [a for a in agent if a.tool == gold.tool]
    if not same:
        return f"no successful agent call to {gold.tool}"
    best = min(same, key=lambda a: len(mismatched_keys(gold.args, a.args)))
    diffs = ", ".join(
        f"{k}: gold {short(gold.args.get(k))}, agent {short(best.args.get(k))}"
        for k in mismatched_keys(gold.args, best.args)
    )
    return f"closest {best} differs in {diffs}"


def actions(traj: Trajectory, witness: Sequence[WitnessCall]) -> ComponentResult:
    """The agent's successful writes are the witness's successful writes, in any order.

    Each gold write (a successful ``insert_*`` / ``update_*`` call of the witness) must match a
    distinct successful agent write with the same tool and matching arguments (numbers within
    1e-4, strings case-insensitive and trimmed, None equal to a missing key). Reads and
    rejected calls are ignored; an extra successful write fails the component.

    Args:
        traj: The recorded episode.
        witness: The task's witness calls.

    Returns:
        A binary result; on failure the detail names each unmatched gold write with the closest
        agent candidate, and each extra agent write.
    """
    gold, agent = gold_calls(witness), agent_calls(traj)
    owner = match_calls(gold, agent)
    matched = {g for g in owner if g is not None}
    problems = [
        f"gold {g} had no match ({_closest(g, agent)})"
        for j, g in enumerate(gold)
        if j not in matched
    ]
    problems += [
        f"extra write {a} is not in the gold actions"
        for a, o in zip(agent, owner, strict=True)
        if o is None
    ]
    if problems:
        return ComponentResult.binary("actions", False, "; ".join(problems))
    detail = f"all {len(gold)} gold write(s) matched; no extra writes"
    return ComponentResult.binary("actions", True, detail)
