"""Run the examples of a spec's rules and effects: the one runner behind ``validate --examples``,
the Architect's rules stage and the test suite.

Each example runs from the seed state. A call declared ``ok`` must succeed; a call declared with
a rule id (or error code) must be rejected by it. After the calls, every ``expect_rows`` entry
must match. For a quota rule with a literal threshold N, every call the rule rejects must come
after a call of the same example that was accepted at N-1 and brought the guarded counter to N
(the example shows the limit itself). Coverage is checked too: every rule has a call it rejects
and a call it lets through, every effect an example with ``expect_rows``.

Failures carry the spec location of the example or call (``("rules", 3, "examples", 0,
"calls", 1)``), so a caller holding the spec's line index can name the YAML line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from typing import Any

from veritask.env._environment import CompiledDomain, Environment
from veritask.env._result import ToolResult
from veritask.policy import DomainSpec, Effect, Example, Rule

Loc = tuple[str | int, ...]

EXAMPLE_SECONDS = 5.0
"""Wall-clock budget of one example: a runaway rule expression is interrupted, not waited for."""


@dataclass(frozen=True)
class ExampleFailure:
    """One example (or missing example) that does not behave as the spec declares.

    Attributes:
        check: A stable id: ``example_passing_call_rejected``, ``example_violation_accepted``,
            ``example_wrong_rule``, ``example_quota_boundary``, ``example_rows``, ``build``,
            ``rule_without_violating_example``, ``rule_without_passing_example`` or
            ``effect_without_example``.
        owner: The rule or effect id (empty for ``build``).
        message: What happened, with the call and its outcome.
        example: Index of the example in its owner's ``examples``, when one is concerned.
        call: Index of the call in the example, when one is concerned.
        loc: Location in the spec data of the call, the example or the owner.
    """

    check: str
    owner: str
    message: str
    example: int | None = None
    call: int | None = None
    loc: Loc = ()

    @property
    def where(self) -> str:
        """``RULE example 0 call 1``, ``RULE example 0`` or ``RULE``."""
        out = self.owner
        if self.example is not None:
            out += f" example {self.example}"
        if self.call is not None:
            out += f" call {self.call}"
        return out

    def to_json(self) -> dict[str, Any]:
        """The failure as a JSON-ready dict (``loc`` as a list)."""
        return {
            "check": self.check,
            "owner": self.owner,
            "example": self.example,
            "call": self.call,
            "message": self.message,
            "loc": list(self.loc),
        }


def call_text(tool: str, args: dict[str, Any]) -> str:
    """A call as ``tool({...})`` with sorted keys."""
    return f"{tool}({json.dumps(args, sort_keys=True, ensure_ascii=False)})"


def _outcome(result: ToolResult) -> str:
    if result.ok:
        return "it succeeded"
    assert result.error is not None
    rule = f" (rule {result.error.violated_rule})" if result.error.violated_rule else ""
    return f"it was rejected with [{result.error.code}] {result.error.message}{rule}"


def _call_check(owner: str, expect: str, result: ToolResult) -> str | None:
    """The check id of a call that did not behave as declared, or None."""
    if expect == "ok":
        return None if result.ok else "example_passing_call_rejected"
    if result.ok:
        return "example_violation_accepted"
    assert result.error is not None
    if expect == owner:
        return None if result.error.violated_rule == expect else "example_wrong_rule"
    return (
        None if expect in (result.error.violated_rule, result.error.code) else "example_wrong_rule"
    )


_CHECK_TEXT = {
    "example_passing_call_rejected": "should succeed, but {outcome}",
    "example_violation_accepted": "should be rejected by {expect}, but {outcome}",
    "example_wrong_rule": "should be rejected by {expect}, but {outcome}",
}


class _QuotaWatch:
    """Watches the counter a quota rule guards while an example runs (literal thresholds)."""

    def __init__(self, spec: DomainSpec, item: Rule | Effect) -> None:
        self.rule_id = item.id
        self.target: tuple[str, str] | None = None
        self.limit: float = 0
        self.history: list[dict[Any, Any]] = []
        if not isinstance(item, Rule) or item.category != "quota":
            return
        threshold = item.threshold
        if threshold is None or threshold.value is None or "." not in threshold.quantity:
            return
        table, column = threshold.quantity.split(".", 1)
        if spec.has_table(table) and column in spec.table(table).column_names:
            self.target, self.limit = (table, column), threshold.value

    def before(self, env: Environment) -> None:
        """Record the counter of every row before a call."""
        if self.target is None:
            return
        table, column = self.target
        self.history.append({i: row[column] for i, row in enumerate(env.rows(table))})

    def problem(self, expect: str) -> str | None:
        """Why a call rejected by the quota does not show the limit (None when it does)."""
        if self.target is None or expect != self.rule_id:
            return None
        table, column = self.target
        n = self.limit
        at_limit = {k for k, v in self.history[-1].items() if v == n}
        if not at_limit:
            return f"rejected while no {table}.{column} was at the limit {n:g}"
        reached = any(
            self.history[i].get(k) == n - 1 and self.history[i + 1].get(k) == n
            for i in range(len(self.history) - 1)
            for k in at_limit
        )
        if not reached:
            return f"no earlier call of the example was accepted at N-1 = {n - 1:g} (reaching N)"
        return None


def run_example(
    env: Environment, seed: bytes, item: Rule | Effect, index: int, loc: Loc = ()
) -> list[ExampleFailure]:
    """Run example ``index`` of ``item`` from ``seed``; the first call that misbehaves is
    reported, else every ``expect_rows`` entry that does not match.

    Args:
        env: An environment of the spec (its state is replaced).
        seed: The state the example starts from (the spec's seed state).
        item: The rule or effect the example belongs to.
        index: Which of its examples.
        loc: Location of the example in the spec data (``("rules", 3, "examples", 0)``).
    """
    example = item.examples[index]
    env.restore(seed)
    watch = _QuotaWatch(env.spec, item)
    for step, call in enumerate(example.calls):
        watch.before(env)
        result = env.call(call.tool, call.args)
        check = _call_check(item.id, call.expect, result)
        text = None
        if check is not None:
            text = _CHECK_TEXT[check].format(expect=call.expect, outcome=_outcome(result))
        elif (quota := watch.problem(call.expect)) is not None:
            check, text = "example_quota_boundary", f"is rejected by {item.id}, but {quota}"
        if check is not None:
            message = f"{call_text(call.tool, call.args)} {text}"
            call_loc = (*loc, "calls", step)
            return [ExampleFailure(check, item.id, message, index, step, call_loc)]
    return _row_failures(env, item.id, index, example, loc)


def _row_failures(
    env: Environment, owner: str, index: int, example: Example, loc: Loc
) -> list[ExampleFailure]:
    out = []
    for k, exp in enumerate(example.expect_rows):
        where = (*loc, "expect_rows", k)
        if not env.spec.has_table(exp.table):
            message = f"expect_rows names an unknown table {exp.table!r}"
            out.append(ExampleFailure("example_rows", owner, message, index, None, where))
            continue
        rows = [r for r in env.rows(exp.table) if all(r.get(c) == v for c, v in exp.where.items())]
        if not rows:
            message = f"no {exp.table} row matches {exp.where}"
            out.append(ExampleFailure("example_rows", owner, message, index, None, where))
            continue
        for key, value in exp.values.items():
            got = rows[0].get(key)
            if got != value:
                message = f"{exp.table} {exp.where}: {key} is {got!r}, expected {value!r}"
                out.append(ExampleFailure("example_rows", owner, message, index, None, where))
    return out


def _owners(spec: DomainSpec) -> Iterator[tuple[Loc, Rule | Effect]]:
    for i, rule in enumerate(spec.rules):
        yield ("rules", i), rule
    for i, effect in enumerate(spec.effects):
        yield ("effects", i), effect


def example_coverage(spec: DomainSpec) -> list[ExampleFailure]:
    """Rules without a call they reject or one they let through; effects without an example
    that shows what they write (``expect_rows``)."""
    out = []
    for loc, item in _owners(spec):
        if isinstance(item, Effect):
            if not any(ex.expect_rows for ex in item.examples):
                message = "no example with expect_rows shows what the effect writes"
                out.append(ExampleFailure("effect_without_example", item.id, message, loc=loc))
            continue
        expects = [c.expect for ex in item.examples for c in ex.calls]
        if item.id not in expects:
            message = f"no example call has expect: {item.id} (a write the rule must reject)"
            out.append(ExampleFailure("rule_without_violating_example", item.id, message, loc=loc))
        if "ok" not in expects:
            message = "no example call has expect: ok (a similar write the rule lets through)"
            out.append(ExampleFailure("rule_without_passing_example", item.id, message, loc=loc))
    return out


def run_spec_examples(spec: DomainSpec | CompiledDomain) -> list[ExampleFailure]:
    """Run every rule and effect example on a fresh environment of the spec, in spec order.

    A spec whose environment does not build gives one ``build`` failure (a model-written spec
    may break the build in any way). Coverage is not checked here: see ``example_coverage``.
    """
    try:
        domain = spec if isinstance(spec, CompiledDomain) else CompiledDomain.from_spec(spec)
    except Exception as exc:  # report any build failure of a spec we did not write
        return [ExampleFailure("build", "", f"the environment does not build: {exc}")]
    out: list[ExampleFailure] = []
    with closing(Environment(domain)) as env:
        for loc, item in _owners(domain.spec):
            for i in range(len(item.examples)):
                with env.time_limit(EXAMPLE_SECONDS):
                    out += run_example(env, domain.seed, item, i, (*loc, "examples", i))
    return out
