"""A stream's workflow between iterations: run a version, measure it, keep or roll it back, and
ask the orchestrator for the next one. The iteration's artifact stores the whole record, so a
resumed run rebuilds the same state from it (:meth:`Flow.after`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from veritask.evolve._orchestrator import (
    Workflow,
    apply,
    decide,
    evidence_of,
    figures,
    propose,
    workflow_diff,
)
from veritask.evolve._plans import PlanPair
from veritask.model import CostLedger, ModelProvider, StructuredOutputError


@dataclass(frozen=True)
class Flow:
    """The version the next iteration runs, the last kept version and its figures."""

    current: Workflow
    kept: Workflow
    kept_figures: dict[str, float] | None
    rolled_back: tuple[dict[str, Any], ...] = ()
    """The diffs of the versions rolled back so far (the orchestrator is shown them)."""

    def running(self, pair: PlanPair) -> PlanPair:
        """The plans with the current version's stage settings."""
        settings = {"candidates": self.current.candidates, "batch": self.current.batch}
        return pair.model_copy(update={"synthesis": pair.synthesis.model_copy(update=settings)})

    @staticmethod
    def after(record: dict[str, Any]) -> Flow:
        """The flow an iteration's ``workflow`` record leaves for the next iteration."""
        kept = Workflow.model_validate(record["baseline"]["workflow"])
        following = record["next"]
        current = Workflow.model_validate(following) if following is not None else kept
        rolled = tuple(record["rolled_back"])
        return Flow(current, kept, dict(record["baseline"]["figures"]), rolled)


def _rejected(artifact: dict[str, Any]) -> dict[str, int]:
    kinds: Counter[str] = Counter()
    for verdict in artifact["verification"]:
        kinds.update(sorted({r["kind"] for r in verdict["reasons"]}))
    return dict(sorted(kinds.items()))


async def orchestrate(
    provider: ModelProvider,
    flow: Flow,
    artifact: dict[str, Any],
    last: bool,
    ledger: CostLedger | None = None,
) -> dict[str, Any]:
    """The ``workflow`` record of one iteration: the version it ran, its figures, the decision
    and its reason, the baseline after it, and the next version (None after the last)."""
    counts = {k: v for k, v in artifact["counts"].items() if k != "candidates"}
    measured = figures(counts)
    ran = flow.current
    if flow.kept_figures is None:
        kept, reason = True, "kept: the first version is the baseline"
    else:
        kept, reason = decide(measured, flow.kept_figures)
    baseline, base_figures = (ran, measured) if kept else (flow.kept, flow.kept_figures or {})
    diff = workflow_diff(flow.kept, ran) if ran.parent is not None else {}
    rolled = list(flow.rolled_back) + ([] if kept else [diff])
    record: dict[str, Any] = {
        "ran": ran.model_dump(mode="json"),
        "diff": diff,
        "figures": measured,
        "kept": kept,
        "reason": reason,
        "baseline": {"workflow": baseline.model_dump(mode="json"), "figures": base_figures},
        "proposal": None,
        "next": None,
        "rolled_back": rolled,
    }
    if last:
        return record
    evidence = {**evidence_of(counts, _rejected(artifact)), "rolled_back": rolled}
    try:
        proposal = await propose(provider, baseline, measured, evidence, ledger)
        following = apply(baseline, proposal, ran.version + 1)
    except (StructuredOutputError, ValueError) as exc:
        record["proposal"] = {"rejected": str(exc)}
        return record
    record["proposal"] = proposal.model_dump(mode="json")
    record["next"] = following.model_dump(mode="json")
    return record
