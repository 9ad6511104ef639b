"""Preference refs: the one read that finds "the cheapest hotel in Paris", and its answer.

A :class:`~veritask.task.RowRef` with ``prefer`` names the unique best record under a
preference among the rows its match picks out. One query answers it: the match as filters,
sorted by the preferred column (descending for ``max``), two rows a page. The first row is the
record; the second says whether it is the only best one (a tie names no record). The Explorer
makes this read in the witness, the grounding certificate and the faithful agent resolve the
ref from it, so all three agree by construction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from veritask.task._package import Preference

PAGE = 2
"""Rows the preference read asks for: the best one and the runner-up that rules out a tie."""


def preference_args(match: dict[str, Any], prefer: Preference) -> dict[str, Any]:
    """The query arguments that find the best record under ``prefer`` among ``match``."""
    args = {**match, "order_by": prefer.column, "limit": PAGE}
    if prefer.order == "max":
        args["descending"] = True
    return args


def best_row(rows: Sequence[dict[str, Any]], prefer: Preference) -> dict[str, Any] | None:
    """The unique best row of ``rows`` under ``prefer`` (any order, any number of rows), or
    None when there is none, a tie for the best, or a row without a value to compare."""
    values: list[Any] = [r.get(prefer.column) for r in rows]
    if not rows or any(v is None for v in values):
        return None
    best = min(values) if prefer.order == "min" else max(values)
    winners = [r for r, v in zip(rows, values, strict=True) if v == best]
    return winners[0] if len(winners) == 1 else None


def best_in(payload: Any, prefer: Preference) -> dict[str, Any] | None:
    """The unique best row of a query's payload (``{"rows": [...]}``), as :func:`best_row`."""
    rows = payload.get("rows") if isinstance(payload, dict) else None
    row = best_row(rows or [], prefer)
    return dict(row) if row is not None else None


__all__ = ["PAGE", "best_in", "best_row", "preference_args"]
