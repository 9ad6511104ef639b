"""Diagnostics aggregated across evolve runs: what fails, how often, and what acceptance costs.

Each ``evolve`` run writes ``result.json`` in its run directory (an
:class:`~veritask.logic.EvolutionResult`). :func:`aggregate_runs` reads any number of them and
reports, over all runs: how many were accepted and in how many rounds, the outcome of rounds by
stage (propose, refine), the most frequent problem kinds (a problem's text with its instance
prefix such as ``d=3 #4:`` dropped and every number written ``N``, so the same failure on
different instances counts once per round), and the summed model cost.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from veritask._util import read_json

RESULT_NAME = "result.json"
_INSTANCE_PREFIX = re.compile(r"^d=\d+ #\d+: ")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def problem_kind(problem: str) -> str:
    """A problem's kind: without its instance prefix, numbers as ``N``, at most 120 chars."""
    return _NUMBER.sub("N", _INSTANCE_PREFIX.sub("", problem.strip()))[:120]


def find_results(paths: Sequence[Path]) -> list[Path]:
    """``result.json`` files: the paths that are files, and those found under directories
    (sorted, so the report does not depend on the file system's order)."""
    found: list[Path] = []
    for path in paths:
        found.extend(sorted(path.rglob(RESULT_NAME)) if path.is_dir() else [path])
    return found


def _total_cost(costs: Any) -> float:
    total = costs.get("total", {}) if isinstance(costs, dict) else {}
    value = total.get("cost", 0.0) if isinstance(total, dict) else 0.0
    return float(value) if isinstance(value, (int, float)) else 0.0


def aggregate_runs(results: Iterable[dict[str, Any]], top: int = 10) -> dict[str, Any]:
    """Figures over evolve results (dicts as written to ``result.json``).

    Args:
        results: The runs' results.
        top: How many problem kinds to list.

    Returns:
        ``runs``, ``accepted``, ``acceptance_rate``, ``rounds`` (total),
        ``rounds_to_accept`` (``mean`` and ``median`` over accepted runs, or None),
        ``by_stage`` (stage -> outcome -> rounds), ``by_seed`` (seed family -> runs and
        accepted), ``problems`` (the ``top`` kinds: ``kind``, ``rounds`` it occurred in,
        ``runs``) and ``cost`` (summed).
    """
    runs = accepted = rounds_total = 0
    to_accept: list[int] = []
    by_stage: dict[str, Counter[str]] = {}
    by_seed: dict[str, Counter[str]] = {}
    in_rounds: Counter[str] = Counter()
    in_runs: Counter[str] = Counter()
    cost = 0.0
    for result in results:
        runs += 1
        rounds = list(result.get("rounds", []))
        rounds_total += len(rounds)
        seed = by_seed.setdefault(str(result.get("seed_family")), Counter())
        seed["runs"] += 1
        if result.get("accepted"):
            accepted += 1
            seed["accepted"] += 1
            to_accept.append(len(rounds))
        kinds_in_run: set[str] = set()
        for rnd in rounds:
            by_stage.setdefault(str(rnd.get("stage")), Counter())[str(rnd.get("outcome"))] += 1
            kinds = {problem_kind(str(p)) for p in rnd.get("problems", [])}
            in_rounds.update(kinds)
            kinds_in_run |= kinds
        in_runs.update(kinds_in_run)
        cost += _total_cost(result.get("costs"))
    return {
        "runs": runs,
        "accepted": accepted,
        "acceptance_rate": round(accepted / runs, 4) if runs else 0.0,
        "rounds": rounds_total,
        "rounds_to_accept": (
            {"mean": round(statistics.mean(to_accept), 2), "median": statistics.median(to_accept)}
            if to_accept
            else None
        ),
        "by_stage": {s: dict(sorted(c.items())) for s, c in sorted(by_stage.items())},
        "by_seed": {s: dict(sorted(c.items())) for s, c in sorted(by_seed.items())},
        "problems": [
            {"kind": kind, "rounds": n, "runs": in_runs[kind]}
            for kind, n in sorted(in_rounds.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        ],
        "cost": round(cost, 6),
    }


def aggregate_files(paths: Sequence[Path], top: int = 10) -> dict[str, Any]:
    """:func:`aggregate_runs` over the ``result.json`` files at or under ``paths``.

    Raises:
        ValueError: When a file is not an evolve result.
    """
    results = []
    found = find_results(paths)
    if not found:
        raise ValueError(f"no {RESULT_NAME} at or under {', '.join(map(str, paths))}")
    for path in found:
        try:
            data = read_json(path)  # bounded: size, depth, UTF-8 (raises InputError)
        except OSError as exc:
            raise ValueError(f"{path}: {exc.strerror or exc}") from None
        if not isinstance(data, dict) or "rounds" not in data:
            raise ValueError(f"{path}: not an evolve result (no 'rounds')")
        results.append(data)
    return aggregate_runs(results, top) | {"files": len(results)}
