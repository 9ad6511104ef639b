"""Rollouts: episodes between agents, user simulators and environments; batches.

The records a rollout produces (``Trajectory``, ``ToolStep``) live in ``veritask.task``; the
metrics over them (pass^k, pass@k) in ``veritask.verify``. The batch runner (scheduling,
persistence, resume) is the rollout job of ``veritask.pipeline``.
"""

from veritask.rollout._batch import (
    BUILTIN_AGENTS,
    BUILTIN_USERS,
    RoleError,
    RoleFactory,
    TaskSource,
    failure_record,
    score,
    summarize,
)
from veritask.rollout._episode import (
    EpisodeFailure,
    EpisodeLimits,
    EpisodeOutcome,
    EpisodeTask,
    SessionFactory,
    play_episode,
    real_session,
    run_episode,
)
from veritask.rollout._stats import read_rollouts, rollout_stats, stats_of_files

__all__ = [
    "BUILTIN_AGENTS",
    "BUILTIN_USERS",
    "EpisodeFailure",
    "EpisodeLimits",
    "EpisodeOutcome",
    "EpisodeTask",
    "RoleError",
    "RoleFactory",
    "SessionFactory",
    "TaskSource",
    "failure_record",
    "play_episode",
    "read_rollouts",
    "real_session",
    "rollout_stats",
    "run_episode",
    "score",
    "stats_of_files",
    "summarize",
]
