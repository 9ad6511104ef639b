"""Model-played roles: plan generation, a verification rationale, and reflection.

Each role asks through :func:`veritask.model.ask`, so a malformed answer is sent back with the
reason and repaired, or rejected (``StructuredOutputError``) after the repair rounds. Answers are
validated against the domains: a plan naming an unknown domain or rule is a parse error the
model is told about. Plans are generated one after another with the earlier plans in context.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from veritask.evolve._plans import PlanPair
from veritask.model import CostLedger, ModelProvider, ask, parse_model

PLAN_SYSTEM = (
    "You design synthesis and evaluation plans for verifiable tool-use tasks. Answer with one "
    'JSON object {"synthesis": {...}, "evaluation": {...}} matching the schema you are given, '
    "and nothing else."
)


def _plan_parser(
    domain_rules: dict[str, list[str]], stream: str, iteration: int
) -> Callable[[str], PlanPair]:
    """Parse a PlanPair and check it against the domains; fix the stream name and iteration."""
    base = parse_model(PlanPair)

    def parse(text: str) -> PlanPair:
        pair = base(text)
        unknown = [d for d in pair.synthesis.domains if d not in domain_rules]
        if unknown:
            raise ValueError(f"unknown domains {unknown}; choose from {sorted(domain_rules)}")
        known = {r for d in pair.synthesis.domains for r in domain_rules[d]}
        bad = sorted(set(pair.synthesis.rules) - known)
        if bad:
            raise ValueError(f"rules {bad} are not rules of {pair.synthesis.domains}")
        fixed = {"stream": stream, "iteration": iteration}
        return PlanPair(
            synthesis=pair.synthesis.model_copy(update=fixed),
            evaluation=pair.evaluation.model_copy(update=fixed),
        )

    return parse


def _schema_message(domain_rules: dict[str, list[str]]) -> str:
    return (
        f"Domains and their rules: {json.dumps(domain_rules, sort_keys=True)}\n"
        f"Schema: {json.dumps(PlanPair.model_json_schema(), sort_keys=True)}"
    )


async def model_plans(
    provider: ModelProvider,
    domain_rules: dict[str, list[str]],
    n: int,
    ledger: CostLedger | None = None,
) -> list[PlanPair]:
    """``n`` plan pairs, asked one after another with the earlier plans in context."""
    plans: list[PlanPair] = []
    for i in range(n):
        earlier = [p.model_dump(mode="json") for p in plans]
        messages = [
            {"role": "system", "content": PLAN_SYSTEM},
            {
                "role": "user",
                "content": f"{_schema_message(domain_rules)}\nEarlier plans: "
                f"{json.dumps(earlier, sort_keys=True)}\nWrite plan {i + 1} of {n}: cover "
                "domains, rules, archetypes and tiers the earlier plans leave out.",
            },
        ]
        parse = _plan_parser(domain_rules, f"plan-{i:02d}", 0)
        plans.append(await ask(provider, messages, parse, module="evolve.plan", ledger=ledger))
    return plans


class Judgment(BaseModel):
    """A model's task verification verdict."""

    model_config = ConfigDict(extra="forbid")

    verdict: Literal["PASS", "FAIL"]
    rationale: str


async def model_judgment(
    provider: ModelProvider,
    rubrics: list[str],
    task: dict[str, Any],
    ledger: CostLedger | None = None,
    system: str | None = None,
) -> Judgment:
    """The model's PASS/FAIL and rationale for a candidate the deterministic checks passed
    (``system``: the workflow's prompt for the role, replacing the default)."""
    messages = [
        {
            "role": "system",
            "content": system
            or "You verify tasks against rubrics. Answer with JSON "
            '{"verdict": "PASS" or "FAIL", "rationale": "..."} and nothing else.',
        },
        {
            "role": "user",
            "content": f"Rubrics: {json.dumps(rubrics)}\nTask: {json.dumps(task, sort_keys=True)}",
        },
    ]
    return await ask(
        provider, messages, parse_model(Judgment), module="evolve.verify", ledger=ledger
    )


async def model_reflection(
    provider: ModelProvider,
    pair: PlanPair,
    failures: list[dict[str, Any]],
    domain_rules: dict[str, list[str]],
    ledger: CostLedger | None = None,
    system: str | None = None,
) -> PlanPair:
    """The model's revision of both plans from one iteration's failures and attributions
    (``system``: the workflow's prompt for the role, replacing the default)."""
    messages = [
        {"role": "system", "content": system or PLAN_SYSTEM},
        {
            "role": "user",
            "content": f"{_schema_message(domain_rules)}\nCurrent plans: "
            f"{pair.model_dump_json()}\nFailures with reasons and attributions: "
            f"{json.dumps(failures, sort_keys=True)}\nRevise both plans: steer synthesis away "
            "from task-side failures and toward what the assistant fails on.",
        },
    ]
    parse = _plan_parser(domain_rules, pair.stream, pair.synthesis.iteration + 1)
    return await ask(provider, messages, parse, module="evolve.reflect", ledger=ledger)


class Rationale(BaseModel):
    """A model's explanation of an attribution decided by execution."""

    model_config = ConfigDict(extra="forbid")

    rationale: str


async def model_rationale(
    provider: ModelProvider,
    failure: dict[str, Any],
    ledger: CostLedger | None = None,
    system: str | None = None,
) -> Rationale:
    """The model's explanation of one failed trajectory's attribution (the attribution itself
    is decided by running the reference solver; the model only explains it)."""
    messages = [
        {
            "role": "system",
            "content": system
            or "You explain why an assistant failed a tool-use task. The attribution "
            "(TASK: the task cannot be solved from its text; TRAJECTORY: it can and the "
            "assistant failed) was decided by running a reference solver; do not change it. "
            'Answer with JSON {"rationale": "..."} and nothing else.',
        },
        {"role": "user", "content": f"Attribution: {json.dumps(failure, sort_keys=True)}"},
    ]
    return await ask(
        provider, messages, parse_model(Rationale), module="evolve.attribute", ledger=ledger
    )
