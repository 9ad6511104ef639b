"""Floor 8: the self-evolving data engine (AReaL-SEA on certified, grounded tasks).

- Plans: ``SynthesisPlan`` / ``EvaluationPlan`` pairs, versioned per iteration; a covering
  design over domains x rules x archetypes x tiers (``enumerate_plans``) and its ``coverage``;
  model-made plans asked one after another with the earlier ones in context.
- Streams: per plan pair and iteration, synthesis through a caller-given ``Synthesizer`` or the
  model's synthesis agent (``TaskAgent``: read-only exploration, ``propose_task`` with the
  witness executed on a scratch copy, only certified and grounded candidates kept), plan-driven
  selection, deterministic task verification (certificate, grounded, spoiler-free,
  duplicate, difficulty, per-task SQL checkers), rollouts with any assistant, attribution of
  failures by execution (``attribute``: TASK when a text-only solver fails too, TRAJECTORY when
  it succeeds), and reflection (symbolic weight shifts, or a model's revision).
- The workflow: each stream's worker prompts and stage settings as versioned data
  (``Workflow``); an orchestrator (a model, or ``orchestrator_script`` behind the scripted
  provider) proposes changes from attribution, and a version is kept only when the next
  iteration's measured yield or difficulty gap improves, else rolled back (``orchestrate``).
- The run: ``evolve`` / ``evolve_async``, the plan streams as an ``Evolution`` on the engine of
  ``veritask.pipeline`` (the one ``logic evolve`` runs on): units with a run manifest, exact
  resume, a dataset directory assembled from the units, and a report.
"""

from veritask.evolve._assemble import RUN_DIR, read_report, status
from veritask.evolve._attribution import (
    Attributed,
    Attribution,
    FaithfulSolver,
    Solver,
    attribute,
    run_role,
)
from veritask.evolve._coverage import coverage, enumerate_plans
from veritask.evolve._flow import Flow, orchestrate
from veritask.evolve._model_roles import (
    Judgment,
    Rationale,
    model_judgment,
    model_plans,
    model_rationale,
    model_reflection,
)
from veritask.evolve._orchestrator import (
    ROLES,
    Change,
    Workflow,
    initial_workflow,
    orchestrator_script,
    workflow_diff,
)
from veritask.evolve._plans import (
    ARCHETYPES,
    FAILURE_TAXONOMY,
    PLAN_SCHEMA,
    TIERS,
    EvaluationPlan,
    PlanPair,
    SynthesisPlan,
    plan_diff,
)
from veritask.evolve._reflect import Evidence, features, reflect
from veritask.evolve._run import (
    EvolveConfig,
    EvolveSummary,
    PlanStreams,
    StreamState,
    domain_rules,
    domain_sources,
    evolve,
    evolve_async,
)
from veritask.evolve._stream import StreamRoles, StreamSettings, Synthesize, Synthesizer
from veritask.evolve._task_agent import AgentLog, Proposal, TaskAgent
from veritask.evolve._verify import TaskVerdict, candidate_score, select, verify_task

__all__ = [
    "ARCHETYPES",
    "FAILURE_TAXONOMY",
    "PLAN_SCHEMA",
    "ROLES",
    "RUN_DIR",
    "TIERS",
    "AgentLog",
    "Attributed",
    "Attribution",
    "Change",
    "EvaluationPlan",
    "Evidence",
    "EvolveConfig",
    "EvolveSummary",
    "FaithfulSolver",
    "Flow",
    "Judgment",
    "PlanPair",
    "PlanStreams",
    "Proposal",
    "Rationale",
    "Solver",
    "StreamRoles",
    "StreamSettings",
    "StreamState",
    "SynthesisPlan",
    "Synthesize",
    "Synthesizer",
    "TaskAgent",
    "TaskVerdict",
    "Workflow",
    "attribute",
    "candidate_score",
    "coverage",
    "domain_rules",
    "domain_sources",
    "enumerate_plans",
    "evolve",
    "evolve_async",
    "features",
    "initial_workflow",
    "model_judgment",
    "model_plans",
    "model_rationale",
    "model_reflection",
    "orchestrate",
    "orchestrator_script",
    "plan_diff",
    "read_report",
    "reflect",
    "run_role",
    "select",
    "status",
    "verify_task",
    "workflow_diff",
]
