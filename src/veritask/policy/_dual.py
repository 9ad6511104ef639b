"""Dual control and escalation as facts of a spec: which tools are the user's, which tool hands a
user over to a human agent, and what the policy says about both
(docs/design/0060-dual-control-and-escalation.md)."""

from __future__ import annotations

from collections.abc import Iterator

from veritask.policy._spec import DomainSpec
from veritask.policy._tools import build_tools

Loc = tuple[str | int, ...]

USER_TOOL_CODE = "USER_TOOL"
"""The error code an agent gets when it calls one of the user's tools."""


def user_tool_names(spec: DomainSpec) -> frozenset[str]:
    """The tools the user holds: every tool of a user-side table and the ones named.

    Args:
        spec: The domain.

    Returns:
        Tool names (empty when the spec gives the user no tools).
    """
    side = spec.user_tools
    if side is None:
        return frozenset()
    tables = set(side.tables)
    names = {name for name, tool in build_tools(spec).items() if tool.table in tables}
    return frozenset(names | set(side.tools))


def is_user_tool(spec: DomainSpec, tool: str) -> bool:
    """True when ``tool`` is one of the user's tools."""
    return tool in user_tool_names(spec)


def escalation_tool(spec: DomainSpec) -> str | None:
    """The tool that hands a user over to a human agent, or None when the spec has none."""
    return spec.escalation.tool if spec.escalation is not None else None


def check_dual(spec: DomainSpec) -> Iterator[tuple[Loc, str]]:
    """Yield (location, message) for every user tool or escalation field that names nothing.

    The user's tables exist and are not the actor table's (the agent must be able to look the
    user up); the named user tools exist; the escalation tool is a write tool the agent holds,
    its reason column exists, and every reason is one of the column's ``enum`` values.
    """
    if spec.user_tools is None and spec.escalation is None:
        return
    try:
        tools = build_tools(spec)
    except ValueError:  # a procedure named like another tool: reported by the compiler
        return
    side = spec.user_tools
    if side is not None:
        for i, table in enumerate(side.tables):
            if not spec.has_table(table):
                yield ("user_tools", "tables", i), f"unknown table {table!r}"
            elif table == spec.actor:
                yield ("user_tools", "tables", i), "the actor table cannot be on the user's side"
        for i, name in enumerate(side.tools):
            if name not in tools:
                yield ("user_tools", "tools", i), f"unknown tool {name!r}"
    yield from _check_escalation(spec)


def _check_escalation(spec: DomainSpec) -> Iterator[tuple[Loc, str]]:
    esc = spec.escalation
    if esc is None:
        return
    tool = build_tools(spec).get(esc.tool)
    if tool is None or not tool.writes:
        yield ("escalation", "tool"), f"{esc.tool!r} is not a write tool of this spec"
        return
    if esc.tool in user_tool_names(spec):
        yield ("escalation", "tool"), "the hand-off tool is the agent's, not the user's"
    if esc.reason not in tool.params:
        yield ("escalation", "reason"), f"{esc.tool} has no argument {esc.reason!r}"
        return
    allowed = tool.params[esc.reason].enum
    for i, reason in enumerate(esc.reasons):
        if allowed is not None and reason.id not in allowed:
            message = (
                f"{reason.id!r} is not a value of {esc.reason} ({', '.join(map(str, allowed))})"
            )
            yield ("escalation", "reasons", i, "id"), message


def dual_policy_section(spec: DomainSpec) -> str:
    """The wiki's section on the user's own tools and on hand-offs ('' when the spec has none).

    Args:
        spec: The domain.

    Returns:
        Markdown, or the empty string.
    """
    lines: list[str] = []
    mine = sorted(user_tool_names(spec))
    if mine:
        lines += [
            "## The user's own tools",
            "",
            "The user holds these tools and runs them on their own records (their device, their "
            "settings). You cannot call them: ask the user to do it, with the values to use, and "
            "act on what they report back.",
            "",
            *(f"- `{name}`" for name in mine),
        ]
    esc = spec.escalation
    if esc is not None:
        if lines:
            lines.append("")
        lines += [
            "## Handing over to a human agent",
            "",
            f"Hand the user over with `{esc.tool}` exactly when the policy says so, and record "
            f"the reason in `{esc.reason}`. Do not hand over in any other case.",
            "",
            *(f"- `{r.id}`: {r.when}" for r in esc.reasons),
        ]
    return "\n".join(lines)
