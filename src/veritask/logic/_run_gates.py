"""Running every gate on one family (SSLogic 3.3), in order:

1. Gate 1, static (:func:`~veritask.logic.gate1_static`): slots, determinism, consensus, runtime,
   degenerate answers. Runs without a model.
2. Gate 2a, consensus (:func:`~veritask.logic.check_consensus`). Runs without a model.
3. Gate 1, LLM quality review (:func:`~veritask.logic.review_family`).
4. Gate 2b, blind review (:func:`~veritask.logic.blind_review`).

By default a failed stage skips the model stages after it (they cost money and the family is
already rejected); ``GateSettings(short_circuit=False)`` runs everything. :func:`run_gates` is
:func:`run_gates_async` run to completion; both take one :class:`GateSettings`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from veritask.logic._family import Family
from veritask.logic._filefamily import sandbox_validators
from veritask.logic._gates import GateReport, gate1_static
from veritask.logic._reports import FamilyGateRecord
from veritask.logic._review import blind_review, check_consensus, review_family
from veritask.logic._settings import GateSettings
from veritask.model import CostLedger, ModelProvider

SANDBOX_BUDGET_US_PER_CALL = 1000.0
"""Extra Gate 1 runtime budget per sandboxed call (generate or one validator) of an instance."""
_NO_MODEL = "no model provider"


def _static(family: Family, per_level: int, budget_us: float | None) -> GateReport:
    """gate1_static, with sandbox time allowed for and family-code failures as problems."""
    if budget_us is None:
        budget_us = 2000.0
        if sandbox_validators(family) is not None:
            budget_us += SANDBOX_BUDGET_US_PER_CALL * (1 + len(family.validators))
    try:
        return gate1_static(family, per_level=per_level, budget_us=budget_us)
    except Exception as exc:  # family code crashing the gate is a finding
        return GateReport(family.id, problems=[f"{type(exc).__name__}: {exc}"])


def _recorded_settings(provider: ModelProvider | None, settings: GateSettings) -> dict[str, Any]:
    out = settings.recorded()
    if provider is not None:
        out["model"] = getattr(provider, "model", None) or getattr(provider, "name", None)
    return out


async def run_gates_async(
    family: Family,
    provider: ModelProvider | None = None,
    settings: GateSettings | None = None,
    *,
    ledger: CostLedger | None = None,
    record_path: str | Path | None = None,
) -> FamilyGateRecord:
    """Run the gates on ``family`` (see the module docstring); async form of :func:`run_gates`.

    Args:
        family: The family (built-in or loaded from a file).
        provider: The model for the quality review and blind review; None runs the static
            gates only.
        settings: How the gates run (default ``GateSettings()``).
        ledger: Charged with this run's model costs (the record holds them too).
        record_path: Where to write the record as JSON (not written when None).
    """
    settings = settings if settings is not None else GateSettings()
    local = CostLedger()
    record = FamilyGateRecord(
        family.id,
        family.version,
        "static" if provider is None else "full",
        static=_static(family, settings.per_level, settings.budget_us),
        settings=_recorded_settings(provider, settings),
    )
    record.consensus = check_consensus(
        family, per_level=settings.consensus_per_level, seed=settings.seed
    )
    if provider is None:
        record.skipped = {"review": _NO_MODEL, "blind_review": _NO_MODEL}
    else:
        await _model_gates(record, family, provider, settings, local)
    record.costs = local.to_json() if local.modules else {}
    if ledger is not None:
        ledger.merge(local)
    if record_path is not None:
        record.write(record_path)
    return record


async def _model_gates(
    record: FamilyGateRecord,
    family: Family,
    provider: ModelProvider,
    settings: GateSettings,
    ledger: CostLedger,
) -> None:
    """The quality review, then the blind review, each skipped after an earlier failure."""
    failed = [
        name
        for name, ok in (
            ("gate1_static", record.static.passed),
            ("consensus", record.consensus is not None and record.consensus.passed),
        )
        if not ok
    ]
    if failed and settings.short_circuit:
        reason = f"{' and '.join(failed)} failed"
        record.skipped = {"review": reason, "blind_review": reason}
        return
    record.review = await review_family(
        family,
        provider,
        difficulties=settings.review_difficulties,
        seed=settings.seed,
        ledger=ledger,
        config=settings.config,
        code_calls=settings.review_code_calls,
    )
    if not record.review.passed and settings.short_circuit:
        record.skipped = {"blind_review": "review failed"}
        return
    record.blind = await blind_review(
        family,
        provider,
        n=settings.n,
        tau=settings.tau,
        difficulties=settings.difficulties,
        attempts=settings.attempts,
        seed=settings.seed,
        ledger=ledger,
        config=settings.config,
        code_calls=settings.blind_code_calls,
    )


def run_gates(
    family: Family,
    provider: ModelProvider | None = None,
    settings: GateSettings | None = None,
    *,
    ledger: CostLedger | None = None,
    record_path: str | Path | None = None,
) -> FamilyGateRecord:
    """Run every gate on ``family`` and return the record (synchronous; see
    :func:`run_gates_async` for the arguments). Must not be called from a running event loop.
    """
    return asyncio.run(
        run_gates_async(family, provider, settings, ledger=ledger, record_path=record_path)
    )
