"""The trajectory pruner (AgentSkiller 3.19.2): which gold calls an agent must repeat.

Two invariants: a write (insert / update, accepted or rejected) is never pruned; a read is
pruned when every row it returned was already returned by an earlier call (a read, or a write,
which returns the row as stored), or, for a read that found nothing, when the same read with the
same arguments already found nothing and no write was accepted since.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class Call(Protocol):
    """A recorded tool call (``WitnessCall`` and ``ToolStep`` both qualify)."""

    @property
    def tool(self) -> str: ...

    @property
    def ok(self) -> bool: ...

    @property
    def result(self) -> Any: ...


@dataclass(frozen=True)
class PruneStep:
    """The pruner's verdict on one gold call."""

    index: int
    tool: str
    required: bool
    reason: str


def is_write(tool: str) -> bool:
    """True for the engine's write tools (``insert_*``, ``update_*``)."""
    return tool.startswith(("insert_", "update_"))


def _rows(result: Any) -> list[Any]:
    if isinstance(result, dict) and isinstance(result.get("rows"), list):
        return list(result["rows"])
    if isinstance(result, list):
        return result
    return [] if result is None else [result]


def _facts(call: Call) -> set[str]:
    table = call.tool.partition("_")[2]
    return {f"{table}:{json.dumps(row, sort_keys=True, default=str)}" for row in _rows(call.result)}


def _signature(call: Call) -> str:
    args = getattr(call, "args", None)
    return f"{call.tool}:{json.dumps(args, sort_keys=True, default=str)}"


def prune(calls: Sequence[Call]) -> list[PruneStep]:
    """One verdict per call of a gold trajectory, in order."""
    known: set[str] = set()
    empty: set[str] = set()
    out: list[PruneStep] = []
    for i, call in enumerate(calls):
        facts = _facts(call) if call.ok else set()
        if is_write(call.tool):
            out.append(PruneStep(i, call.tool, True, "a write is never pruned"))
            if call.ok:
                empty.clear()
        elif not call.ok:
            out.append(PruneStep(i, call.tool, True, "a failed read is kept"))
        elif facts and facts <= known:
            out.append(PruneStep(i, call.tool, False, "every row it returned was known"))
        elif not facts and _signature(call) in empty:
            out.append(PruneStep(i, call.tool, False, "the same read already found nothing"))
        else:
            reason = "returns rows not seen before" if facts else "the first read to find nothing"
            out.append(PruneStep(i, call.tool, True, reason))
            if not facts:
                empty.add(_signature(call))
        known |= facts
    return out


def required_calls(calls: Sequence[Call]) -> list[int]:
    """Indices of the gold calls that stay required after pruning."""
    return [step.index for step in prune(calls) if step.required]
