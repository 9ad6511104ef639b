"""State components: the end state equals s_target, or contains the gold changes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from veritask.env import Layout, Snapshot, diff
from veritask.task import DatasetDir, TaskPackage
from veritask.verify._compare import row_key, short
from veritask.verify._verdict import ComponentResult, VerificationError

if TYPE_CHECKING:
    from veritask.task import Trajectory

SIDES = ("added", "removed")
_SHOWN = 5


def state_exact(traj: Trajectory) -> ComponentResult:
    """The final state equals s_target (canonical rows, technical keys excluded).

    Args:
        traj: The recorded episode; its ``final_distance`` is the DIFF distance to s_target.

    Returns:
        A binary result; on failure the detail gives the remaining distance.
    """
    if traj.final_distance == 0:
        return ComponentResult.binary("state_exact", True, "final state equals s_target")
    detail = (
        f"final state differs from s_target by {traj.final_distance} row(s) "
        f"(s_origin was {traj.initial_distance} away; the agent changed "
        f"{traj.agent_diff.get('distance', '?')} row(s))"
    )
    return ComponentResult.binary("state_exact", False, detail)


def _tables(diff_json: Mapping[str, Any], what: str) -> Mapping[str, Any]:
    tables = diff_json.get("tables")
    if not isinstance(tables, Mapping):
        raise VerificationError(f"{what} has no 'tables' (expected StateDiff.to_json() output)")
    return tables


def _counters(tables: Mapping[str, Any]) -> dict[tuple[str, str], Counter[Any]]:
    return {
        (name, side): Counter(row_key(r) for r in table.get(side, []))
        for name, table in tables.items()
        for side in SIDES
    }


def _missing_rows(gold: Mapping[str, Any], agent: Mapping[str, Any]) -> list[str]:
    have = _counters(agent)
    missing: list[str] = []
    for name, table in gold.items():
        for side in SIDES:
            pool = have.get((name, side), Counter())
            for row in table.get(side, []):
                key = row_key(row)
                if pool[key] > 0:
                    pool[key] -= 1
                else:
                    missing.append(f"{name} {side} {short(dict(row), 200)}")
    return missing


def state_subset(traj: Trajectory, gold_diff: Mapping[str, Any]) -> ComponentResult:
    """Every gold row change is among the agent's changes (AgentSkiller's gold ⊆ agent).

    Each row added to or removed from a table between s_origin and s_target must also be added
    to (removed from) that table between s_origin and the final state, counted as a multiset.
    Further changes by the agent are allowed.

    Args:
        traj: The recorded episode; ``agent_diff`` is DIFF(s_origin, final state).
        gold_diff: DIFF(s_origin, s_target) as ``StateDiff.to_json()`` (see ``gold_diff_for``).

    Returns:
        A binary result; on failure the detail lists the gold rows the agent did not produce.

    Raises:
        VerificationError: When either diff is not in ``StateDiff.to_json()`` shape (a
            trajectory without a recorded ``agent_diff`` included).
    """
    gold = _tables(gold_diff, "gold_diff")
    agent = _tables(traj.agent_diff, "the trajectory's agent_diff")
    n_gold = sum(len(t.get(s, [])) for t in gold.values() for s in SIDES)
    n_agent = sum(len(t.get(s, [])) for t in agent.values() for s in SIDES)
    missing = _missing_rows(gold, agent)
    if not missing:
        detail = f"all {n_gold} gold row change(s) are among the agent's {n_agent}"
        return ComponentResult.binary("state_subset", True, detail)
    shown = "; ".join(missing[:_SHOWN]) + (
        f"; … {len(missing) - _SHOWN} more" if len(missing) > _SHOWN else ""
    )
    detail = (
        f"{len(missing)} of {n_gold} gold row change(s) missing from the agent's changes: {shown}"
    )
    return ComponentResult.binary("state_subset", False, detail)


def gold_diff_for(package: TaskPackage, dataset: DatasetDir, layout: Layout) -> dict[str, Any]:
    """DIFF(s_origin, s_target) of a package, from the states stored in its dataset.

    Args:
        package: The task.
        dataset: The dataset directory holding ``states/<sha256>.sqlite``.
        layout: The domain's diff layout (``CompiledDomain.layout``).

    Returns:
        ``StateDiff.to_json()``: ``{"distance", "tables": {t: {"added", "removed"}}}``.
    """
    origin = Snapshot(dataset.read_state(package.origin), layout)
    target = Snapshot(dataset.read_state(package.target), layout)
    return diff(origin, target).to_json()
