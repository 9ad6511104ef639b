"""Rollouts: episodes between agents, user simulators and environments; batches.

The records a rollout produces (``Trajectory``, ``ToolStep``) live in ``veritask.task``; the
metrics over them (pass^k, pass@k) in ``veritask.verify``.
"""

from veritask.rollout._batch import RoleFactory, TaskSource, run_batch, score, summarize
from veritask.rollout._episode import EpisodeLimits, EpisodeTask, run_episode

__all__ = [
    "EpisodeLimits",
    "EpisodeTask",
    "RoleFactory",
    "TaskSource",
    "run_batch",
    "run_episode",
    "score",
    "summarize",
]
