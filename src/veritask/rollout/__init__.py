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
from veritask.rollout._naming import (
    function_of,
    parameter_names,
    rename_map,
    rename_payload,
    word_replacer,
)
from veritask.rollout._perturbed import (
    KINDS,
    PerturbedAgent,
    PerturbedRoles,
    SchemaReader,
    Surface,
    parse_kinds,
    perturbed_agent,
)
from veritask.rollout._stats import read_rollouts, rollout_stats, stats_of_files

__all__ = [
    "BUILTIN_AGENTS",
    "BUILTIN_USERS",
    "KINDS",
    "EpisodeFailure",
    "EpisodeLimits",
    "EpisodeOutcome",
    "EpisodeTask",
    "PerturbedAgent",
    "PerturbedRoles",
    "RoleError",
    "RoleFactory",
    "SchemaReader",
    "SessionFactory",
    "Surface",
    "TaskSource",
    "failure_record",
    "function_of",
    "parameter_names",
    "parse_kinds",
    "perturbed_agent",
    "play_episode",
    "read_rollouts",
    "real_session",
    "rename_map",
    "rename_payload",
    "rollout_stats",
    "run_episode",
    "score",
    "stats_of_files",
    "summarize",
    "word_replacer",
]
