"""Dual control and escalation in a dataset: which tasks need the user's own tools, which end
in a hand-off to a human agent (docs/design/0060-dual-control-and-escalation.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from veritask.policy import DomainSpec, user_tool_names
from veritask.task._package import TaskPackage


def user_calls(package: TaskPackage, spec: DomainSpec) -> int:
    """Witness calls the user makes with their own tools."""
    mine = user_tool_names(spec)
    return sum(1 for c in package.witness if c.tool in mine)


def handoff_reason(package: TaskPackage, spec: DomainSpec) -> str | None:
    """The reason of the hand-off the witness records, or None when the task ends without one.

    A task whose witness makes an accepted call of the escalation tool ends in a hand-off (the
    state holds the hand-off and its reason); a refused call is the policy declining it.
    """
    esc = spec.escalation
    if esc is None:
        return None
    for call in package.witness:
        if call.ok and call.tool == esc.tool:
            return str(call.args.get(esc.reason))
    return None


def declined_handoff(package: TaskPackage, spec: DomainSpec) -> bool:
    """True when the user asked for a hand-off the policy does not allow (every call of the
    escalation tool refused): the correct end is no hand-off."""
    esc = spec.escalation
    if esc is None:
        return False
    calls = [c for c in package.witness if c.tool == esc.tool]
    return bool(calls) and not any(c.ok for c in calls)


def dual_report(
    packages: Sequence[TaskPackage], spec_of: Callable[[str], DomainSpec]
) -> dict[str, Any] | None:
    """The dataset's dual-control and escalation figures, or None when no domain of it gives
    the user tools or a hand-off (the report then stays as it was).

    Returns:
        ``{"user_tool_tasks", "user_tool_share", "user_calls", "escalations",
        "escalation_share", "escalation_reasons": {reason: n}, "declined_escalations"}``.
    """
    specs = {name: spec_of(name) for name in sorted({p.domain for p in packages})}
    if not any(s.user_tools is not None or s.escalation is not None for s in specs.values()):
        return None
    calls = [user_calls(p, specs[p.domain]) for p in packages]
    reasons = Counter(r for p in packages if (r := handoff_reason(p, specs[p.domain])) is not None)
    n = len(packages)
    escalations = sum(reasons.values())
    return {
        "user_tool_tasks": sum(1 for c in calls if c),
        "user_tool_share": round(sum(1 for c in calls if c) / n, 4) if n else 0.0,
        "user_calls": sum(calls),
        "escalations": escalations,
        "escalation_share": round(escalations / n, 4) if n else 0.0,
        "escalation_reasons": dict(sorted(reasons.items())),
        "declined_escalations": sum(1 for p in packages if declined_handoff(p, specs[p.domain])),
    }


def dual_section(
    packages: Sequence[TaskPackage], spec_of: Callable[[str], DomainSpec]
) -> dict[str, Any]:
    """``{"dual_control": dual_report(...)}``, or ``{}`` for domains with neither user tools
    nor a hand-off (their report stays as it was)."""
    dual = dual_report(packages, spec_of)
    return {} if dual is None else {"dual_control": dual}
