"""The phases of one iteration of one stream: synthesize (and select), verify (tasks, then
rollouts and attribution of failed trajectories), reflect. The evolution engine of
``veritask.pipeline`` runs them (see ``_run``).

Synthesis goes through a :class:`Synthesizer` the caller provides (the command line passes the
symbolic generator of ``veritask.synth``): this package sits beside the generators on the same
floor and never imports them. The synthesizer writes certified candidates into a scratch
dataset per (stream, iteration, domain), seeded from the run seed and those names; the plan
picks the candidates it wants (:func:`select`), and everything after that is this module's.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veritask._util import derive_seed
from veritask.agent._error_model import ErrorModel
from veritask.env import Environment
from veritask.evolve._attribution import ErringRoles, Solver, attribute, run_role
from veritask.evolve._model_roles import model_judgment, model_rationale, model_reflection
from veritask.evolve._plans import PlanPair, plan_diff
from veritask.evolve._reflect import Evidence, reflect
from veritask.evolve._task_agent import TaskAgent
from veritask.evolve._verify import TaskVerdict, score_parts, select, unverified, verify_task
from veritask.model import CostLedger, ModelProvider, StructuredOutputError
from veritask.rollout import TaskSource
from veritask.task import TaskPackage, Trajectory
from veritask.verify import Checker, partial_credit

Synthesize = Callable[[str, int, int, Path], object]
"""``(domain, n, seed, out)``: write ``n`` certified candidates into the dataset ``out``
(resumable, deterministic in ``seed``), as ``veritask.synth.generate`` does."""


@dataclass(frozen=True)
class Synthesizer:
    """A task synthesizer and the name the run config records for it."""

    name: str
    generate: Synthesize


@dataclass(frozen=True)
class StreamSettings:
    """What decides a stream's outputs besides its plans (part of the run config)."""

    assistant: str = "faithful"
    """The rollout agent (``faithful`` errs by ``errors``; ``random`` and the rest by name)."""
    user: str = "scripted"
    seed: int = 0
    task_verification: bool = True
    reflection: bool = True
    errors: ErrorModel = field(default_factory=lambda: ErrorModel(DEFAULT_ERROR_RATE))
    """The error model of the faithful rollout agent and of the reference solver."""


DEFAULT_ERROR_RATE = 0.2
"""The faithful agent's default error rate in the engine (a solver that can fail)."""


@dataclass
class StreamRoles:
    """The working parts of an iteration (not part of the config)."""

    synthesizer: Synthesizer
    solver: Solver
    domain_rules: dict[str, list[str]]
    model: ModelProvider | None = None
    ledger: CostLedger = field(default_factory=CostLedger)
    task_agent: TaskAgent | None = None
    """Synthesizes with a model instead of ``synthesizer`` when set."""
    domain_sources: dict[str, str] = field(default_factory=dict)
    """Spec name -> how the run was given the domain (a built-in name or a spec file)."""
    orchestrator: ModelProvider | None = None
    """Proposes workflow changes between iterations when set."""
    prompts: dict[str, dict[str, str]] = field(default_factory=dict)
    """Stream -> the prompts by role of the workflow version its current iteration runs."""

    def source(self, domain: str) -> str:
        """What to load the domain named ``domain`` from."""
        return self.domain_sources.get(domain, domain)


@dataclass
class _Candidate:
    source: TaskSource
    pkg: TaskPackage
    verdict: TaskVerdict | None = None
    trajectory: Trajectory | None = None
    record: dict[str, Any] = field(default_factory=dict)
    pkg_stream: str = ""


async def _synthesize(
    pair: PlanPair, pool: Path, settings: StreamSettings, roles: StreamRoles
) -> tuple[list[_Candidate], dict[str, int], dict[str, Any]]:
    plan = pair.synthesis
    out: list[_Candidate] = []
    counts: dict[str, int] = {}
    logs: dict[str, Any] = {}
    for domain in plan.domains:
        seed = derive_seed(settings.seed, plan.stream, plan.iteration, domain) % 1_000_000
        root = pool / domain
        if roles.task_agent is not None:
            agent = roles.task_agent
            log = await agent.synthesize(plan, roles.source(domain), plan.candidates, seed, root)
            logs[domain] = log.to_json()
        else:
            roles.synthesizer.generate(roles.source(domain), plan.candidates, seed, root)
        source = TaskSource.load(root)
        counts[domain] = len(source.packages)
        out += [_Candidate(source, pkg, pkg_stream=plan.stream) for pkg in source.packages]
    return out, counts, logs


async def _verify(
    chosen: list[_Candidate],
    pair: PlanPair,
    seen: dict[tuple[str, str], str],
    settings: StreamSettings,
    roles: StreamRoles,
) -> None:
    for cand in chosen:
        if not settings.task_verification:
            cand.verdict = unverified(cand.source, cand.pkg)
            continue
        cand.verdict = verify_task(cand.source, cand.pkg, pair.evaluation, seen)
        if cand.verdict.passed and roles.model is not None:
            task = {"description": cand.pkg.task_description, "tags": cand.pkg.tags}
            system = roles.prompts.get(pair.stream, {}).get("verify")
            rubrics = pair.evaluation.rubrics
            judged = await model_judgment(roles.model, rubrics, task, roles.ledger, system)
            cand.verdict.rationale = judged.rationale
            if judged.verdict == "FAIL":
                cand.verdict.fail("model", judged.rationale)


def _final_state(source: TaskSource, pkg: TaskPackage, trajectory: Trajectory) -> bytes:
    """The agent's final state, rebuilt by replaying its accepted writes on s_origin."""
    env = Environment(source.domain(pkg.domain))
    try:
        env.restore(source.dataset.read_state(pkg.origin))
        for step in trajectory.steps:
            if step.ok and step.writes:
                env.call(step.tool, step.args or {})
        return env.image()
    finally:
        env.close()


def _credit(cand: _Candidate, trajectory: Trajectory, checkers: list[Checker]) -> dict[str, Any]:
    env = Environment(cand.source.domain(cand.pkg.domain))
    try:
        credit = partial_credit(checkers, env, _final_state(cand.source, cand.pkg, trajectory))
    finally:
        env.close()
    return {"passed": credit["passed"], "total": credit["total"], "score": credit["score"]}


async def _rollout(
    cand: _Candidate, pair: PlanPair, settings: StreamSettings, roles: StreamRoles
) -> dict[str, Any]:
    pkg = cand.pkg
    factory = ErringRoles(settings.assistant, settings.user, errors=settings.errors)
    seed = derive_seed(settings.seed, pkg.id, "assistant") % 1_000_000
    cand.trajectory = await run_role(cand.source, pkg, factory, seed)
    reward = cand.trajectory.reward
    record: dict[str, Any] = {"id": pkg.id, "reward": reward}
    record["stop_reason"] = cand.trajectory.stop_reason
    checkers = cand.verdict.checkers if cand.verdict else []
    record["partial_credit"] = _credit(cand, cand.trajectory, checkers)
    if reward is not None and reward >= pair.evaluation.success_reward:
        record["outcome"] = "SUCCESS"
        return record
    solver_seed = derive_seed(settings.seed, pkg.id, "solver") % 1_000_000
    attributed = await attribute(cand.source, pkg, roles.solver, solver_seed)
    record.update(outcome="FAIL", attribution=attributed.kind, detail=attributed.detail)
    if roles.model is not None:
        record["rationale"] = await _rationale(cand, record, roles)
    return record


async def _rationale(cand: _Candidate, record: dict[str, Any], roles: StreamRoles) -> str:
    """The model's explanation of an attribution (a malformed answer: the reason instead)."""
    assert roles.model is not None and cand.trajectory is not None
    steps = [
        {"tool": s.tool, "ok": s.ok, "error": (s.error or {}).get("code")}
        for s in cand.trajectory.steps
    ]
    failure = {
        "task": cand.pkg.task_description,
        **{k: record[k] for k in ("attribution", "detail", "stop_reason", "partial_credit")},
        "assistant_calls": steps,
    }
    try:
        system = roles.prompts.get(cand.pkg_stream, {}).get("attribute")
        return (await model_rationale(roles.model, failure, roles.ledger, system)).rationale
    except StructuredOutputError as exc:
        return f"model answer rejected ({exc})"


async def _next_plan(
    pair: PlanPair,
    evidence: Evidence,
    failures: list[dict[str, Any]],
    settings: StreamSettings,
    roles: StreamRoles,
) -> tuple[PlanPair, str]:
    if not settings.reflection:
        return pair.next_version(), "none"
    if roles.model is None:
        return reflect(pair, evidence), "symbolic"
    try:
        system = roles.prompts.get(pair.stream, {}).get("reflect")
        revised = await model_reflection(
            roles.model, pair, failures, roles.domain_rules, roles.ledger, system
        )
    except StructuredOutputError as exc:
        return reflect(pair, evidence), f"model answer rejected ({exc}); symbolic reflection"
    return revised, "model"


def _counts(cands: list[_Candidate], records: list[dict[str, Any]]) -> dict[str, int]:
    outcomes = Counter(r.get("attribution", r["outcome"]) for r in records)
    return {
        "selected": len(cands),
        "verified": sum(1 for c in cands if c.verdict and c.verdict.passed),
        "rolled_out": len(records),
        "succeeded": outcomes["SUCCESS"],
        "TASK": outcomes["TASK"],
        "TRAJECTORY": outcomes["TRAJECTORY"],
        "accepted": sum(1 for r in records if r.get("attribution") != "TASK"),
    }


@dataclass
class Synthesized:
    """An iteration's candidates: how many each domain made, and the ones the plan selected."""

    made: dict[str, int]
    chosen: list[_Candidate]
    logs: dict[str, Any] = field(default_factory=dict)
    """The synthesis agent's log per domain (empty for the symbolic generator)."""
    why: list[dict[str, Any]] = field(default_factory=list)
    """Per chosen candidate: its score and the factors of it (plan weights, tier, styles)."""


@dataclass
class Verified:
    """An iteration's verdicts and rollouts, and the evidence reflection works from."""

    synthesized: Synthesized
    records: list[dict[str, Any]]
    failures: list[dict[str, Any]]
    evidence: Evidence
    counts: dict[str, int]


async def synthesize(
    pair: PlanPair, pool: Path, settings: StreamSettings, roles: StreamRoles
) -> Synthesized:
    """Synthesize the plan's candidates into ``pool`` and select the ones it wants."""
    candidates, made, logs = await _synthesize(pair, pool, settings, roles)
    by_id = {c.pkg.id: c for c in candidates}
    chosen = [by_id[p.id] for p in select(pair.synthesis, [c.pkg for c in candidates])]
    why = [_why(pair, c.pkg) for c in chosen]
    return Synthesized(made, chosen, logs, why)


def _why(pair: PlanPair, pkg: TaskPackage) -> dict[str, Any]:
    """Why selection took a candidate: its score and the factors of it."""
    parts = score_parts(pair.synthesis, pkg)
    return {"id": pkg.id, "score": round(math.prod(parts.values()), 6), **parts}


async def verify(
    pair: PlanPair,
    synthesized: Synthesized,
    seen: dict[tuple[str, str], str],
    settings: StreamSettings,
    roles: StreamRoles,
) -> Verified:
    """Task verification, then rollouts of the verified tasks and attribution of failures."""
    cands = synthesized.chosen
    await _verify(cands, pair, seen, settings, roles)
    evidence, failures, records = Evidence(), [], []
    for cand in cands:
        assert cand.verdict is not None
        if not cand.verdict.passed:
            evidence.blame_task(cand.pkg)
            evidence.verification_kinds.update(r["kind"] for r in cand.verdict.reasons)
            failures.append({"id": cand.pkg.id, "stage": "task", **cand.verdict.to_json()})
            continue
        record = await _rollout(cand, pair, settings, roles)
        records.append(record)
        if record.get("attribution") == "TASK":
            evidence.blame_task(cand.pkg)
        elif record.get("attribution") == "TRAJECTORY":
            evidence.blame_assistant(cand.pkg)
        if record["outcome"] == "FAIL":
            failures.append({"stage": "trajectory", **record})
    counts = _counts(cands, records)
    evidence.verified, evidence.rolled_out = counts["verified"], counts["rolled_out"]
    evidence.succeeded = counts["succeeded"]
    return Verified(synthesized, records, failures, evidence, counts)


async def reflect_on(
    pair: PlanPair, verified: Verified, settings: StreamSettings, roles: StreamRoles
) -> dict[str, Any]:
    """The next plans (reflection) and the iteration's artifact (plans, verdicts, rollouts,
    the accepted packages and their checkers, the next plans and what changed)."""
    v = verified
    following, how = await _next_plan(pair, v.evidence, v.failures, settings, roles)
    return _artifact(pair, following, how, v)


def _artifact(pair: PlanPair, following: PlanPair, how: str, v: Verified) -> dict[str, Any]:
    made, cands, records, counts = v.synthesized.made, v.synthesized.chosen, v.records, v.counts
    kept = {r["id"] for r in records if r.get("attribution") != "TASK"}
    accepted = [c for c in cands if c.pkg.id in kept]
    extra = {"synthesis_agent": v.synthesized.logs} if v.synthesized.logs else {}
    return {
        **extra,
        "stream": pair.stream,
        "iteration": pair.synthesis.iteration,
        "plan": pair.model_dump(mode="json"),
        "candidates": made,
        "selection": v.synthesized.why,
        "verification": [c.verdict.to_json() for c in cands if c.verdict is not None],
        "rollouts": records,
        "counts": {"candidates": sum(made.values()), **counts},
        "accepted": [
            {
                "package": c.pkg.model_dump(mode="json"),
                "pool": c.pkg.domain,
                "checkers": [k.model_dump(mode="json") for k in c.verdict.checkers]
                if c.verdict
                else [],
                "trajectory": c.trajectory.model_dump(mode="json")
                if c.trajectory is not None and c.trajectory.reward == 1.0
                else None,
            }
            for c in accepted
        ],
        "reflection": how,
        "next_plan": following.model_dump(mode="json"),
        "plan_diff": plan_diff(pair, following),
    }
