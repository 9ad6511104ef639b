"""The orchestrator: the workflow of a stream as versioned data, changed from attribution and
kept only when the next iteration's measured figures improve.

A :class:`Workflow` holds the worker prompts (the system prompt of each model role) and the
stage settings (the stage order, candidates synthesized, candidates selected). Each stream
starts from version 0. After every iteration but the last, the orchestrator (a model asked
through :func:`veritask.model.ask`; the ``scripted`` provider with
:func:`orchestrator_script` offline) reads the iteration's figures and attribution and proposes
changes, which make the next version; the next iteration runs with it. That iteration's
figures then decide: the version is kept when its yield or its difficulty gap improves on the
last kept version's without the other getting worse, and rolled back otherwise (the next
proposal then starts from the last kept version). Every decision is stored in the iteration's
artifact with the figures that made it, so a resumed run rebuilds the same workflow.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from veritask.model import CostLedger, ModelProvider, ask, parse_model

Role = Literal["verify", "reflect", "attribute"]
ROLES: tuple[Role, ...] = ("verify", "reflect", "attribute")
"""The worker roles whose prompts a workflow owns (the roles that run in every iteration)."""
STAGES = ("synthesize", "select", "verify", "rollout", "attribute", "reflect")
"""The stage order; a version may only name it in this order (every stage needs the one before)."""
Setting = Literal["candidates", "batch"]
DIFFICULTY_TARGET = 0.3
"""The share of rolled-out, solvable tasks the assistant should fail (TRAJECTORY)."""

DEFAULT_PROMPTS: dict[str, str] = {
    "verify": "You verify tasks against rubrics. Answer with JSON "
    '{"verdict": "PASS" or "FAIL", "rationale": "..."} and nothing else.',
    "reflect": "You design synthesis and evaluation plans for verifiable tool-use tasks. Answer "
    'with one JSON object {"synthesis": {...}, "evaluation": {...}} matching the schema you '
    "are given, and nothing else.",
    "attribute": "You explain why an assistant failed a tool-use task. The attribution (TASK: the "
    "task cannot be solved from its text; TRAJECTORY: it can and the assistant failed) was "
    "decided by running a reference solver; do not change it. Answer with JSON "
    '{"rationale": "..."} and nothing else.',
}


class Workflow(BaseModel):
    """One version of a stream's workflow: worker prompts and stage settings."""

    model_config = ConfigDict(extra="forbid")

    version: int = Field(default=0, ge=0)
    parent: int | None = None
    """The version this one was made from (None: the first)."""
    prompts: dict[Role, str]
    order: list[str] = Field(default_factory=lambda: list(STAGES))
    candidates: int = Field(ge=1, le=400)
    """Candidates synthesized per domain and iteration (the synthesize stage)."""
    batch: int = Field(ge=1, le=100)
    """Candidates that go on to verification (the select stage)."""

    @field_validator("order")
    @classmethod
    def _order(cls, order: list[str]) -> list[str]:
        if order != list(STAGES):
            raise ValueError(f"the stage order must be {list(STAGES)}")
        return order


def initial_workflow(candidates: int, batch: int) -> Workflow:
    """Version 0: the default prompts and the run's settings."""
    return Workflow(prompts=dict(DEFAULT_PROMPTS), candidates=candidates, batch=batch)  # type: ignore[arg-type]


class Change(BaseModel):
    """One proposed change: a role's prompt, or a stage setting."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["prompt", "setting"]
    role: Role | None = None
    prompt: str | None = None
    setting: Setting | None = None
    value: int | None = None
    because: str
    """The attribution evidence the change answers (which stage, which prompt)."""


class Proposal(BaseModel):
    """The orchestrator's answer: changes to make for the next iteration."""

    model_config = ConfigDict(extra="forbid")

    changes: list[Change] = Field(min_length=1, max_length=4)


def apply(workflow: Workflow, proposal: Proposal, version: int) -> Workflow:
    """The next version: ``proposal`` applied to ``workflow`` (raises ValueError if malformed)."""
    data = workflow.model_dump(mode="json")
    for change in proposal.changes:
        if change.kind == "prompt":
            if change.role is None or not change.prompt:
                raise ValueError("a prompt change names a role and the new prompt")
            data["prompts"][change.role] = change.prompt
        else:
            if change.setting is None or change.value is None:
                raise ValueError("a setting change names the setting and its new value")
            data[change.setting] = change.value
    data.update(version=version, parent=workflow.version)
    return Workflow.model_validate(data)


def workflow_diff(old: Workflow, new: Workflow) -> dict[str, list[Any]]:
    """Fields that differ (``prompts.ROLE``, ``candidates``, ...) -> ``[old, new]``."""
    before, after = old.model_dump(mode="json"), new.model_dump(mode="json")
    out: dict[str, list[Any]] = {}
    for role in ROLES:
        if before["prompts"][role] != after["prompts"][role]:
            out[f"prompts.{role}"] = [before["prompts"][role], after["prompts"][role]]
    for key in ("order", "candidates", "batch"):
        if before[key] != after[key]:
            out[key] = [before[key], after[key]]
    return out


def figures(counts: dict[str, int], target: float = DIFFICULTY_TARGET) -> dict[str, float]:
    """An iteration's measured figures: yield (accepted per selected candidate), the share of
    rolled-out tasks the assistant failed on a solvable task, and its gap to ``target``."""
    selected, rolled = counts["selected"], counts["rolled_out"]
    fail = counts["TRAJECTORY"] / rolled if rolled else 0.0
    return {
        "yield": round(counts["accepted"] / selected, 4) if selected else 0.0,
        "assistant_failure": round(fail, 4),
        "difficulty_gap": round(abs(fail - target), 4),
    }


def decide(ran: dict[str, float], baseline: dict[str, float]) -> tuple[bool, str]:
    """Keep (True) or roll back, and the measured reason."""
    dy = round(ran["yield"] - baseline["yield"], 4)
    dg = round(ran["difficulty_gap"] - baseline["difficulty_gap"], 4)
    text = (
        f"yield {baseline['yield']:.3f} -> {ran['yield']:.3f}, difficulty gap "
        f"{baseline['difficulty_gap']:.3f} -> {ran['difficulty_gap']:.3f}"
    )
    if (dy > 0 and dg <= 0) or (dg < 0 and dy >= 0):
        return True, f"kept: {text}"
    if dy > 0 or dg < 0:
        return False, f"rolled back: {text} (one figure improved, the other got worse)"
    return False, f"rolled back: {text} (no improvement)"


def _summary(counts: dict[str, int], rejected: dict[str, int]) -> dict[str, Any]:
    return {"counts": counts, "task_verification_failures": rejected}


async def propose(
    provider: ModelProvider,
    workflow: Workflow,
    measured: dict[str, float],
    evidence: dict[str, Any],
    ledger: CostLedger | None = None,
) -> Proposal:
    """The orchestrator model's changes for the next iteration, from the iteration's figures and
    attribution (a malformed answer is repaired or raises ``StructuredOutputError``)."""
    messages = [
        {
            "role": "system",
            "content": "You run a data engine's workflow: worker prompts by role and stage "
            "settings. From the measured figures and the attribution of failures (which stage "
            "failed, TASK or TRAJECTORY), propose 1-4 changes. Answer with JSON matching the "
            "schema and nothing else.",
        },
        {
            "role": "user",
            "content": json.dumps(
                {
                    "workflow": workflow.model_dump(mode="json"),
                    "figures": measured,
                    "evidence": evidence,
                    "difficulty_target": DIFFICULTY_TARGET,
                    "schema": Proposal.model_json_schema(),
                },
                sort_keys=True,
            ),
        },
    ]
    parse = parse_model(Proposal)
    return await ask(provider, messages, parse, module="evolve.orchestrate", ledger=ledger)


def orchestrator_script(messages: list[dict[str, Any]], tools: Any = None) -> str:
    """The offline orchestrator, as a ``scripted`` provider's script: reads the request and
    answers a proposal by fixed rules. Task-side failures (verification, TASK) dominate: more
    candidates to choose from and a stricter verification prompt; otherwise one more task per
    batch and a reflection prompt that aims at the difficulty target. A setting whose change
    was rolled back before is not proposed again while another is left."""
    del tools
    request = json.loads(messages[-1]["content"])
    flow, evidence = request["workflow"], request["evidence"]
    counts, rejected = evidence["counts"], evidence["task_verification_failures"]
    tried = {key for diff in evidence.get("rolled_back", []) for key in diff}
    task_side = counts["TASK"] + sum(rejected.values())
    stage = max(sorted(rejected), key=lambda k: rejected[k]) if rejected else "attribute"
    options = [
        [
            _setting("candidates", min(400, flow["candidates"] * 2), stage),
            _prompt("verify", flow, f"reject tasks like the {stage} failures", stage),
        ],
        [
            _setting("batch", min(100, flow["batch"] + 1), "rollout"),
            _prompt("reflect", flow, "aim at the difficulty target", "rollout"),
        ],
    ]
    if task_side <= counts["TRAJECTORY"]:
        options.reverse()
    fresh = [o for o in options if o[0]["setting"] not in tried]
    return json.dumps({"changes": (fresh or options)[0]}, sort_keys=True)


def _setting(name: str, value: int, stage: str) -> dict[str, Any]:
    return {"kind": "setting", "setting": name, "value": value, "because": f"stage {stage}"}


def _prompt(role: str, flow: dict[str, Any], rule: str, stage: str) -> dict[str, Any]:
    prompt = f"{flow['prompts'][role]} Also: {rule}."
    return {"kind": "prompt", "role": role, "prompt": prompt, "because": f"stage {stage}"}


def evidence_of(counts: dict[str, int], rejected: dict[str, int]) -> dict[str, Any]:
    """What the orchestrator is shown of an iteration besides its figures."""
    return _summary(counts, rejected)
