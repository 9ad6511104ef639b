"""Run a spec's rule and effect examples on its environment (through the env API only)."""

from __future__ import annotations

from contextlib import closing

from veritask.env import CompiledDomain, Environment
from veritask.policy import DomainSpec, Effect, Example, Rule


def _call_problem(env: Environment, example: Example) -> str | None:
    for step, call in enumerate(example.calls):
        result = env.call(call.tool, call.args)
        if call.expect == "ok" and not result.ok:
            return f"call {step} {call.tool} should succeed: {result.error}"
        if call.expect != "ok":
            error = result.error
            if error is None or call.expect not in (error.violated_rule, error.code):
                return f"call {step} {call.tool} should be rejected by {call.expect}: {error}"
    return None


def _row_problem(env: Environment, example: Example) -> str | None:
    for exp in example.expect_rows:
        rows = [r for r in env.rows(exp.table) if all(r.get(k) == v for k, v in exp.where.items())]
        if not rows:
            return f"no {exp.table} row matches {exp.where}"
        wrong = {k: rows[0].get(k) for k, v in exp.values.items() if rows[0].get(k) != v}
        if wrong:
            return f"{exp.table} {exp.where}: got {wrong}, expected {exp.values}"
    return None


def example_failures(spec: DomainSpec) -> list[str]:
    """Every rule or effect example that does not behave as declared, as ``owner #i: why``."""
    domain = CompiledDomain.from_spec(spec)
    failures: list[str] = []
    with closing(Environment(domain)) as env:
        owners: list[Rule | Effect] = [*spec.rules, *spec.effects]
        for owner in owners:
            for i, example in enumerate(owner.examples):
                env.restore(domain.seed)
                problem = _call_problem(env, example) or _row_problem(env, example)
                if problem is not None:
                    failures.append(f"{owner.id} #{i}: {problem}")
    return failures
