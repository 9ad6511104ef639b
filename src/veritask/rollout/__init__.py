"""Rollouts: episodes between agents, user simulators and environments; batches.

The records a rollout produces (``Trajectory``, ``ToolStep``) live in ``veritask.task``; the
metrics over them (pass^k, pass@k) in ``veritask.verify``. The batch runner (scheduling,
persistence, resume) is the rollout job of ``veritask.pipeline``.
"""

from veritask.rollout._batch import RoleFactory, TaskSource, score, summarize
from veritask.rollout._episode import (
    EpisodeLimits,
    EpisodeTask,
    SessionFactory,
    real_session,
    run_episode,
)

__all__ = [
    "EpisodeLimits",
    "EpisodeTask",
    "RoleFactory",
    "SessionFactory",
    "TaskSource",
    "real_session",
    "run_episode",
    "score",
    "summarize",
]
