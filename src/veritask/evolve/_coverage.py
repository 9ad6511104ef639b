"""Symbolic plan sets: a greedy covering design over domains x rules x archetypes x tiers.

Plan ``i`` takes the (domain, tier, archetype pair) that covers the most factor values and factor
pairs no earlier plan covers (domain x tier, domain x archetype, tier x archetype), ties broken by the fixed
order of the factors, then the least-used rules of its domain and tool-use patterns. The set is
a pure function of the domains and N. :func:`coverage` reports what a plan set covers, for
symbolic and model-made sets alike.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from typing import Any

from veritask.evolve._plans import (
    ARCHETYPES,
    TIERS,
    Archetype,
    EvaluationPlan,
    PlanPair,
    SynthesisPlan,
    Tier,
)
from veritask.task import TAGS

_Pair = tuple[str, str]
_Choice = tuple[str, Tier, tuple[Archetype, Archetype]]


def _pairs(choice: _Choice) -> set[_Pair]:
    domain, tier, archetypes = choice
    out = {(f"domain:{domain}", f"tier:{tier}"), (f"tier:{tier}", ""), (f"domain:{domain}", "")}
    for arch in archetypes:
        out |= {(f"domain:{domain}", f"archetype:{arch}"), (f"tier:{tier}", f"archetype:{arch}")}
        out.add((f"archetype:{arch}", ""))
    return out


def _least_used(items: list[str], used: Counter[str], k: int) -> list[str]:
    """The ``k`` items used least so far (ties: in list order)."""
    order = sorted(range(len(items)), key=lambda i: (used[items[i]], i))
    return [items[i] for i in order[:k]]


def _mix(tier: Tier) -> dict[Tier, float]:
    return {t: (0.6 if t == tier else 0.2) for t in TIERS}


def enumerate_plans(
    domain_rules: dict[str, list[str]], n: int, *, candidates: int = 40, batch: int = 8
) -> list[PlanPair]:
    """``n`` plan pairs covering the domains, their rules, the archetypes and the tiers.

    Args:
        domain_rules: Domain name -> its rule ids, in spec order.
        n: Plans to make.
        candidates: Candidates per domain and iteration in each plan.
        batch: Candidates per iteration that go on to verification.
    """
    domains = sorted(domain_rules)
    choices: list[_Choice] = [
        (d, t, a) for d in domains for t in TIERS for a in itertools.combinations(ARCHETYPES, 2)
    ]
    covered: set[_Pair] = set()
    rule_use: Counter[str] = Counter()
    tag_use: Counter[str] = Counter()
    per_domain = max(1, math.ceil(n / len(domains)))
    plans: list[PlanPair] = []
    for i in range(n):
        best = max(choices, key=lambda c: len(_pairs(c) - covered))
        covered |= _pairs(best)
        domain, tier, archetypes = best
        rules = domain_rules[domain]
        k = max(1, math.ceil(len(rules) / per_domain))
        chosen = _least_used(rules, rule_use, k)
        rule_use.update(chosen)
        tags = _least_used(list(TAGS), tag_use, 3)
        tag_use.update(tags)
        stream = f"plan-{i:02d}"
        synthesis = SynthesisPlan(
            stream=stream,
            domains=[domain],
            tier=tier,
            difficulty_mix=_mix(tier),
            rules=dict.fromkeys(chosen, 1.0),
            tool_patterns=dict.fromkeys(tags, 1.0),
            archetypes=dict.fromkeys(archetypes, 1.0),
            candidates=candidates,
            batch=batch,
            notes="covering design",
        )
        evaluation = EvaluationPlan(stream=stream, rubrics=_rubrics(domain))
        plans.append(PlanPair(synthesis=synthesis, evaluation=evaluation))
    return plans


def _rubrics(domain: str) -> list[str]:
    return [
        f"the {domain} task is certified: its witness replays to s_target",
        "the task text alone determines the target (grounded)",
        "the text names nothing the user could not know (spoiler-free)",
        "every per-task checker is true on s_target and false on s_origin",
    ]


def _share(found: set[Any], universe: set[Any]) -> dict[str, Any]:
    hit = found & universe
    return {
        "covered": len(hit),
        "total": len(universe),
        "share": round(len(hit) / len(universe), 4) if universe else 1.0,
    }


def coverage(plans: list[PlanPair], domain_rules: dict[str, list[str]]) -> dict[str, Any]:
    """What a plan set covers: single factors and pairs of factors, each as covered/total.

    Returns:
        ``{"plans", "domains", "rules", "archetypes", "tiers", "tool_patterns",
        "domain_x_tier", "tier_x_archetype", "rule_x_archetype"}``, each factor entry
        ``{"covered", "total", "share"}``.
    """
    found: dict[str, set[Any]] = {k: set() for k in ("d", "r", "a", "t", "p", "dt", "ta", "ra")}
    for pair in plans:
        s = pair.synthesis
        rules = {(d, r) for d in s.domains for r in s.rules if r in domain_rules.get(d, [])}
        found["d"] |= set(s.domains)
        found["r"] |= rules
        found["a"] |= set(s.archetypes)
        found["t"].add(s.tier)
        found["p"] |= set(s.tool_patterns)
        found["dt"] |= {(d, s.tier) for d in s.domains}
        found["ta"] |= {(s.tier, a) for a in s.archetypes}
        found["ra"] |= {(r, a) for r in rules for a in s.archetypes}
    all_rules = {(d, r) for d, rs in domain_rules.items() for r in rs}
    return {
        "plans": len(plans),
        "domains": _share(found["d"], set(domain_rules)),
        "rules": _share(found["r"], all_rules),
        "archetypes": _share(found["a"], set(ARCHETYPES)),
        "tiers": _share(found["t"], set(TIERS)),
        "tool_patterns": _share(found["p"], set(TAGS)),
        "domain_x_tier": _share(found["dt"], set(itertools.product(domain_rules, TIERS))),
        "tier_x_archetype": _share(found["ta"], set(itertools.product(TIERS, ARCHETYPES))),
        "rule_x_archetype": _share(found["ra"], set(itertools.product(all_rules, ARCHETYPES))),
    }
