"""Every rule and effect of every built-in domain behaves as its spec examples declare.

The examples live in the specs, so these tests are generated from the spec: add a rule with an
example and it is tested.
"""

from __future__ import annotations

from typing import Any

import pytest

from veritask.domains import builtin_domains, load_domain
from veritask.env import CompiledDomain, Environment
from veritask.policy import Example, Rule


def _cases(kind: str) -> list[Any]:
    out = []
    for name in builtin_domains():
        spec = load_domain(name)
        items = spec.rules if kind == "rules" else spec.effects
        for item in items:
            for i, example in enumerate(item.examples):
                out.append(pytest.param(name, item.id, example, id=f"{name}:{item.id}:{i}"))
    return out


def _run_example(env: Environment, example: Example, rule: Rule | None = None) -> None:
    for step, call in enumerate(example.calls):
        before = env.snapshot().data
        result = env.call(call.tool, call.args)
        where = f"call {step} {call.tool}({call.args})"
        if call.expect == "ok":
            assert result.ok, f"{where} should succeed, got {result.error}"
            continue
        assert not result.ok, f"{where} should be rejected by {call.expect}"
        assert result.error is not None
        assert call.expect in (result.error.violated_rule, result.error.code), (
            f"{where}: {result.error}"
        )
        if result.error.violated_rule:
            expected = env.spec.rule(result.error.violated_rule)
            assert result.error.code == expected.code
            assert result.error.hint == expected.hint
        assert not result.state_changed
        assert env.snapshot().data == before, f"{where}: a rejected call changed the database"


@pytest.mark.parametrize(("domain", "rule_id", "example"), _cases("rules"))
def test_rule_example(
    compiled: dict[str, CompiledDomain], domain: str, rule_id: str, example: Example
) -> None:
    env = Environment(compiled[domain])
    _run_example(env, example)


@pytest.mark.parametrize(("domain", "effect_id", "example"), _cases("effects"))
def test_effect_example(
    compiled: dict[str, CompiledDomain], domain: str, effect_id: str, example: Example
) -> None:
    env = Environment(compiled[domain])
    _run_example(env, example)
    assert example.expect_rows, f"effect {effect_id} example asserts no rows"
    for exp in example.expect_rows:
        rows = [r for r in env.rows(exp.table) if all(r[k] == v for k, v in exp.where.items())]
        assert rows, f"no {exp.table} row matches {exp.where}"
        for key, value in exp.values.items():
            assert rows[0][key] == value, (
                f"{exp.table}{exp.where}.{key} = {rows[0][key]!r}, expected {value!r}"
            )


@pytest.mark.parametrize("domain", builtin_domains())
def test_every_rule_has_a_rejecting_example(domain: str) -> None:
    spec = load_domain(domain)
    for rule in spec.rules:
        expects = [c.expect for ex in rule.examples for c in ex.calls]
        assert rule.id in expects, f"{domain}: rule {rule.id} has no example that it rejects"
        assert "ok" in expects, f"{domain}: rule {rule.id} has no passing example"
    for effect in spec.effects:
        assert effect.examples, f"{domain}: effect {effect.id} has no example"


def _quota_rules() -> list[Any]:
    return [
        pytest.param(name, rule, id=f"{name}:{rule.id}")
        for name in builtin_domains()
        for rule in load_domain(name).rules
        if rule.category == "quota"
        and rule.threshold is not None
        and rule.threshold.value is not None
    ]


@pytest.mark.parametrize(("domain", "rule"), _quota_rules())
def test_quota_accepts_at_n_minus_1_and_rejects_at_n(
    compiled: dict[str, CompiledDomain], domain: str, rule: Rule
) -> None:
    """Replay the quota's example and watch the guarded counter: N-1 -> accepted, N -> rejected."""
    assert rule.threshold is not None and rule.threshold.value is not None
    table, column = rule.threshold.quantity.split(".")
    limit = rule.threshold.value
    env = Environment(compiled[domain])
    seen = False
    for example in rule.examples:
        env.restore(compiled[domain].seed)
        history: list[dict[Any, Any]] = []
        for call in example.calls:
            history.append(
                {r[env.spec.table(table).column_names[0]]: r[column] for r in env.rows(table)}
            )
            result = env.call(call.tool, call.args)
            if call.expect == rule.id:
                at_limit = {k for k, v in history[-1].items() if v == limit}
                assert at_limit, f"rejected while no {table}.{column} was at {limit}"
                accepted_at_n_minus_1 = any(
                    history[i].get(k) == limit - 1 and history[i + 1].get(k) == limit
                    for i in range(len(history) - 1)
                    for k in at_limit
                )
                assert accepted_at_n_minus_1, "no call was accepted at N-1 (reaching N)"
                assert result.error is not None and result.error.violated_rule == rule.id
                seen = True
    assert seen
