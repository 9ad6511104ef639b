"""Every rule and effect of every built-in domain behaves as its spec examples declare.

The examples live in the specs, so these tests are generated from the spec: add a rule with an
example and it is tested.
"""

from __future__ import annotations

from typing import Any

import pytest

from veritask.domains import builtin_domains, load_domain
from veritask.env import CompiledDomain, Environment, example_coverage, run_example
from veritask.policy import DomainSpec, Effect, Example, Rule


def _cases(kind: str) -> list[Any]:
    out = []
    for name in builtin_domains():
        spec = load_domain(name)
        items = spec.rules if kind == "rules" else spec.effects
        for item in items:
            for i, example in enumerate(item.examples):
                out.append(pytest.param(name, item.id, example, id=f"{name}:{item.id}:{i}"))
    return out


def _engine_checks(env: Environment, example: Example) -> None:
    """What the runner takes from the engine: a rejection names its rule's code and hint and
    leaves the database byte-identical."""
    for call in example.calls:
        before = env.snapshot().data
        result = env.call(call.tool, call.args)
        if call.expect == "ok" or result.ok:
            continue
        assert result.error is not None
        if result.error.violated_rule:
            expected = env.spec.rule(result.error.violated_rule)
            assert result.error.code == expected.code
            assert result.error.hint == expected.hint
        assert not result.state_changed
        assert env.snapshot().data == before, f"{call.tool}: a rejected call changed the database"


def _item(spec: DomainSpec, item_id: str) -> Rule | Effect:
    return next(i for i in (*spec.rules, *spec.effects) if i.id == item_id)


@pytest.mark.parametrize(("domain", "rule_id", "example"), _cases("rules"))
def test_rule_example(
    compiled: dict[str, CompiledDomain], domain: str, rule_id: str, example: Example
) -> None:
    env = Environment(compiled[domain])
    rule = _item(env.spec, rule_id)
    index = rule.examples.index(example)
    assert run_example(env, compiled[domain].seed, rule, index) == []
    env.restore(compiled[domain].seed)
    _engine_checks(env, example)


@pytest.mark.parametrize(("domain", "effect_id", "example"), _cases("effects"))
def test_effect_example(
    compiled: dict[str, CompiledDomain], domain: str, effect_id: str, example: Example
) -> None:
    env = Environment(compiled[domain])
    effect = _item(env.spec, effect_id)
    assert example.expect_rows, f"effect {effect_id} example asserts no rows"
    assert run_example(env, compiled[domain].seed, effect, effect.examples.index(example)) == []


@pytest.mark.parametrize("domain", builtin_domains())
def test_every_rule_has_a_rejecting_example(domain: str) -> None:
    assert example_coverage(load_domain(domain)) == []


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
