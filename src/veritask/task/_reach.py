"""Why a rule or a write tool a dataset never exercised was not reached, read from the spec.

Coverage counts the rules some task collides with and the write tools some witness calls
successfully. What is left is either *not reached*, with why (*no procedure uses it*: no
transaction calls a tool that could meet it, so the generator never will; or *not sampled*: a
procedure could, a larger or another run may), or *unreachable by construction*, which the spec
itself says:

- **no tool**: no write tool changes the rule's table with the rule's event (a read-only table),
  so no request can ever meet the rule;
- **reserved**: a ``system_control`` rule without a ``when`` guard checks every insert (or
  update) of a table, and every example call of that tool in the spec is refused: the spec
  reserves the write to the system (approvals opened when a refund needs one). The tool is then
  never called successfully, and the rules listed after the reserving rule on the same table and
  event are never checked (rules of one table and event are checked in spec order, and the first
  violated one is reported).

The classification is static: it reads the spec only, never the dataset.
"""

from __future__ import annotations

from veritask.policy import DomainSpec, Rule, ToolSpec, build_tools

NOT_REACHED = "not reached"
"""The prefix of the reason of an uncovered rule or tool the spec does not rule out."""
NO_PROCEDURE = f"{NOT_REACHED}: no procedure uses it"
"""Not reached, and no transaction (procedure) of the spec calls a tool that could meet it: the
generator makes requests through procedures only, so it never will."""
NOT_SAMPLED = f"{NOT_REACHED}: not sampled"
"""Not reached, though a procedure could meet it: no task of this run did (a larger or another
run may; a rule that only a refused task meets is met only in the units that may refuse)."""
UNREACHABLE = "unreachable by construction"
"""The prefix of the reason of one the spec rules out."""


def _example_outcomes(spec: DomainSpec, tool: str) -> list[str]:
    """The expected outcome of every example call of ``tool`` in the spec (rules' and effects')."""
    examples = [ex for r in spec.rules for ex in r.examples]
    examples += [ex for e in spec.effects for ex in e.examples]
    return [c.expect for ex in examples for c in ex.calls if c.tool == tool]


def _reserving_rule(spec: DomainSpec, tool: ToolSpec) -> Rule | None:
    """The rule that reserves a write tool to the system (see the module docstring), or None."""
    rules = [r for r in spec.rules if r.table == tool.table and tool.kind in r.on]
    guard = next((r for r in rules if r.category == "system_control" and r.when is None), None)
    if guard is None:
        return None
    outcomes = _example_outcomes(spec, tool.name)
    if not outcomes or "ok" in outcomes:
        return None
    return guard


def unreachable(spec: DomainSpec) -> tuple[dict[str, str], dict[str, str]]:
    """The rules and write tools of ``spec`` no request can reach, each with its reason.

    Returns:
        ``(rules, tools)``: rule id -> reason, write tool name -> reason; every reason starts
        with :data:`UNREACHABLE`.
    """
    tools = {n: t for n, t in build_tools(spec).items() if t.kind in ("insert", "update")}
    reserved: dict[tuple[str, str], Rule] = {}
    out_tools: dict[str, str] = {}
    for name, tool in tools.items():
        guard = _reserving_rule(spec, tool)
        if guard is not None:
            reserved[(tool.table, tool.kind)] = guard
            out_tools[name] = (
                f"{UNREACHABLE}: reserved for the system by {guard.id} (system_control, no "
                f"guard; every example {name} call in the spec is refused)"
            )
    writable: set[tuple[str, str]] = {(t.table, str(t.kind)) for t in tools.values()}
    out_rules: dict[str, str] = {}
    for rule in spec.rules:
        reason = _rule_reason(spec, rule, writable, reserved)
        if reason is not None:
            out_rules[rule.id] = f"{UNREACHABLE}: {reason}"
    return out_rules, out_tools


def _rule_reason(
    spec: DomainSpec,
    rule: Rule,
    writable: set[tuple[str, str]],
    reserved: dict[tuple[str, str], Rule],
) -> str | None:
    """Why no request reaches ``rule`` on any of its events, or None when one may."""
    reasons = []
    for event in rule.on:
        if (rule.table, event) not in writable:
            reasons.append(f"no tool writes {rule.table} on {event}")
            continue
        guard = reserved.get((rule.table, event))
        if guard is None or guard.id == rule.id:
            return None
        order = [r.id for r in spec.rules]
        if order.index(guard.id) > order.index(rule.id):
            return None
        reasons.append(f"{guard.id} is checked first and refuses every {event} of {rule.table}")
    return "; ".join(reasons) if reasons else None


def uncovered(spec: DomainSpec, exercised: set[str], called: set[str]) -> dict[str, dict[str, str]]:
    """The rules and write tools a dataset did not cover, each with why.

    Args:
        spec: The domain spec.
        exercised: Rule ids some package exercised.
        called: Write tools some witness called successfully.

    Returns:
        ``{"rules": {id: reason}, "tools": {name: reason}}`` in spec order; a reason is
        :data:`NOT_SAMPLED` or :data:`NO_PROCEDURE` (both start with :data:`NOT_REACHED`), or
        starts with :data:`UNREACHABLE`.
    """
    rules, tools = unreachable(spec)
    built = build_tools(spec)
    writes = [n for n, t in built.items() if t.kind in ("insert", "update")]
    used = {tx.tool for tx in spec.transactions}
    if not spec.transactions:  # a spec without procedures: one is derived per write tool
        used = set(writes)
    return {
        "rules": {
            r.id: rules.get(r.id) or _why_not(r, built, used)
            for r in spec.rules
            if r.id not in exercised
        },
        "tools": {
            n: tools.get(n) or (NOT_SAMPLED if n in used else NO_PROCEDURE)
            for n in writes
            if n not in called
        },
    }


def _why_not(rule: Rule, tools: dict[str, ToolSpec], used: set[str]) -> str:
    """Why a rule the spec does not rule out was not reached: no procedure calls a tool that
    writes its table on one of its events, or (else) it was not sampled."""
    meets = {n for n, t in tools.items() if t.table == rule.table and str(t.kind) in rule.on}
    return NOT_SAMPLED if meets & used else NO_PROCEDURE
