"""Distribution statistics over rollouts, per agent: how long episodes are and how they end.

LOGIGEN's analysis plots turns, messages and tool calls per episode; these are the same figures
computed from trajectory files (``veritask rollout --out``), one block per agent: the number of
episodes, then for each measure its mean, median, 90th percentile and a histogram, and the
errors (episodes that errored, tool calls the environment rejected, how episodes stopped).

Definitions (per episode):

- ``turns``: assistant messages (each is one turn of the agent);
- ``messages``: every message but the system prompt;
- ``tool_calls``: tool calls the agent made (``Trajectory.steps``);
- ``rejected_calls``: tool calls the environment answered with an error.

Lines of a file that are failure records (``failure_record``: an episode that errored before a
trajectory was written) count as errored episodes of the file's agent, or of ``unknown``.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from veritask._util import iter_jsonl, read_text
from veritask.task import Trajectory

MEASURES = ("turns", "messages", "tool_calls")
"""The per-episode counts every agent block describes."""
HISTOGRAM_BINS = 10
"""Most bins in a histogram (fewer when the values span fewer integers)."""


def episode_counts(traj: Trajectory) -> dict[str, int]:
    """The per-episode counts of one trajectory (see the module docstring)."""
    roles = [str(m.get("role", "")) for m in traj.messages]
    return {
        "turns": roles.count("assistant"),
        "messages": sum(r != "system" for r in roles),
        "tool_calls": len(traj.steps),
        "rejected_calls": sum(not s.ok for s in traj.steps),
    }


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile: the smallest value with at least ``share`` of the values at
    or below it (0.0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(math.ceil(share * len(ordered)), 1)
    return float(ordered[rank - 1])


def histogram(values: Sequence[int], bins: int = HISTOGRAM_BINS) -> list[dict[str, int]]:
    """Counts of integer ``values`` in at most ``bins`` equal-width integer bins from the least
    to the largest value; each bin is ``{"low", "high", "count"}`` with both ends included."""
    if not values:
        return []
    low, high = min(values), max(values)
    width = max(math.ceil((high - low + 1) / bins), 1)
    counts = Counter((v - low) // width for v in values)
    return [
        {"low": low + i * width, "high": low + (i + 1) * width - 1, "count": counts.get(i, 0)}
        for i in range((high - low) // width + 1)
    ]


def describe(values: Sequence[int]) -> dict[str, Any]:
    """``mean``, ``median``, ``p90``, ``min``, ``max`` and the ``histogram`` of integer values."""
    if not values:
        return {"mean": 0.0, "median": 0.0, "p90": 0.0, "min": 0, "max": 0, "histogram": []}
    return {
        "mean": statistics.fmean(values),
        "median": float(statistics.median(values)),
        "p90": percentile(values, 0.9),
        "min": min(values),
        "max": max(values),
        "histogram": histogram(values),
    }


def _agent_block(trajectories: Sequence[Trajectory], failures: int) -> dict[str, Any]:
    counts = [episode_counts(t) for t in trajectories]
    stops = Counter(t.stop_reason for t in trajectories)
    errored = stops.get("agent_error", 0) + failures
    rewards = [t.reward for t in trajectories if t.reward is not None]
    return {
        "episodes": len(trajectories) + failures,
        **{m: describe([c[m] for c in counts]) for m in MEASURES},
        "errors": {
            "errored_episodes": errored,
            "error_share": errored / (len(trajectories) + failures),
            "rejected_calls": sum(c["rejected_calls"] for c in counts),
            "rejected_per_episode": statistics.fmean(c["rejected_calls"] for c in counts)
            if counts
            else 0.0,
        },
        "stop_reasons": dict(sorted(stops.items())),
        "mean_reward": statistics.fmean(rewards) if rewards else None,
    }


def rollout_stats(
    trajectories: Iterable[Trajectory], failures: Iterable[dict[str, Any]] = ()
) -> dict[str, Any]:
    """Per-agent distribution statistics over episodes.

    Args:
        trajectories: The recorded episodes (any agents, any tasks).
        failures: Failure records (``failure_record``) of episodes without a trajectory; an
            ``agent`` key names their agent (``unknown`` without one).

    Returns:
        ``{"episodes", "agents": {agent: block}}``, agents sorted by name; a block has
        ``episodes``, ``turns``/``messages``/``tool_calls`` (each ``describe``), ``errors``
        (``errored_episodes``, ``error_share``, ``rejected_calls``, ``rejected_per_episode``),
        ``stop_reasons`` and ``mean_reward``.
    """
    by_agent: dict[str, list[Trajectory]] = {}
    failed: Counter[str] = Counter()
    for traj in trajectories:
        by_agent.setdefault(traj.agent, []).append(traj)
    for record in failures:
        failed[str(record.get("agent") or "unknown")] += 1
    agents = sorted(set(by_agent) | set(failed))
    blocks = {a: _agent_block(by_agent.get(a, []), failed[a]) for a in agents}
    return {"episodes": sum(b["episodes"] for b in blocks.values()), "agents": blocks}


def read_rollouts(paths: Iterable[Path]) -> tuple[list[Trajectory], list[dict[str, Any]]]:
    """The trajectories and failure records of rollout files (JSON lines), in file order.

    Raises:
        ValueError: A line is neither a trajectory nor a failure record (file and line named),
            or a file is too large or not JSON lines (``InputError`` is a ``ValueError``).
        OSError: A file cannot be read.
    """
    trajectories: list[Trajectory] = []
    failures: list[dict[str, Any]] = []
    for path in paths:
        for number, value in iter_jsonl(read_text(path), what=str(path)):
            if isinstance(value, dict) and "messages" not in value and "kind" in value:
                failures.append(value)
                continue
            try:
                trajectories.append(Trajectory.model_validate(value))
            except ValidationError as exc:
                why = exc.errors()[0]["msg"]
                raise ValueError(f"{path}:{number}: not a trajectory: {why}") from None
    return trajectories, failures


def stats_of_files(paths: Sequence[Path]) -> dict[str, Any]:
    """``rollout_stats`` of rollout files, with the files named under ``files``.

    Raises:
        ValueError: See ``read_rollouts``.
        OSError: See ``read_rollouts``.
    """
    trajectories, failures = read_rollouts(paths)
    return {"files": [p.name for p in paths], **rollout_stats(trajectories, failures)}
