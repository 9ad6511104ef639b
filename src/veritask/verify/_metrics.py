"""Reliability metrics over repeated trials: tau2-bench's pass^k and the unbiased pass@k."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from math import comb


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"successes c={c} must be between 0 and the trials n={n}")
    if k < 1:
        raise ValueError(f"k={k} must be at least 1")
    if k > n:
        raise ValueError(f"k={k} exceeds the number of trials n={n}")


def pass_hat_k(successes: Sequence[int | bool], k: int) -> float:
    """pass^k of one task: the chance that k trials drawn without replacement all succeed.

    ``C(c, k) / C(n, k)`` with n trials and c successes (tau2-bench's estimator).

    Args:
        successes: One entry per trial, truthy when the trial succeeded.
        k: How many trials must all succeed.

    Returns:
        The estimate in [0, 1].

    Raises:
        ValueError: When ``k`` is below 1 or above the number of trials.
    """
    n, c = len(successes), sum(1 for s in successes if s)
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator: the chance that at least one of k trials succeeds.

    ``1 - C(n - c, k) / C(n, k)`` (Chen et al., 2021).

    Args:
        n: Trials run.
        c: Trials that succeeded.
        k: Trials drawn.

    Returns:
        The estimate in [0, 1].

    Raises:
        ValueError: When ``c`` is not in ``[0, n]`` or ``k`` not in ``[1, n]``.
    """
    _check(n, c, k)
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k_table(
    results: Mapping[str, Sequence[bool | int]], ks: Iterable[int] | None = None
) -> dict[str, float]:
    """pass^k averaged over tasks, for several k.

    Args:
        results: Task id -> per-trial successes.
        ks: The k values; by default 1 up to the smallest number of trials of any task.

    Returns:
        ``{"pass^1": ..., "pass^2": ...}`` in the order of ``ks``.

    Raises:
        ValueError: When ``results`` is empty or some task has fewer than k trials.
    """
    if not results:
        raise ValueError("no task results")
    wanted = list(ks) if ks is not None else range(1, min(map(len, results.values())) + 1)
    return {f"pass^{k}": _mean_pass_hat_k(results, k) for k in wanted}


def _mean_pass_hat_k(results: Mapping[str, Sequence[bool | int]], k: int) -> float:
    total = 0.0
    for task_id, successes in results.items():
        try:
            total += pass_hat_k(successes, k)
        except ValueError as exc:
            raise ValueError(f"task {task_id!r}: {exc}") from exc
    return total / len(results)


def pass_hat_k_scored(
    results: Mapping[str, Sequence[bool | int]], ks: Iterable[int]
) -> dict[str, float | None]:
    """pass^k averaged over the tasks that have at least k scored trials.

    For runs where some episodes could not be scored (an unreachable model, say): a task's
    estimate uses only its scored trials (``C(c, k) / C(n, k)`` stays unbiased for any
    ``n >= k``), and a task with fewer than k scored trials is left out of pass^k.

    Args:
        results: Task id -> successes of its scored trials (may be empty).
        ks: The k values.

    Returns:
        ``{"pass^k": mean or None}``, None when no task has k scored trials.
    """
    table: dict[str, float | None] = {}
    for k in ks:
        eligible = {tid: s for tid, s in results.items() if len(s) >= k >= 1}
        table[f"pass^{k}"] = _mean_pass_hat_k(eligible, k) if eligible else None
    return table
