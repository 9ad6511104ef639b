"""Rollouts: episodes between agents, user simulators and environments; batches; metrics.

The episode and batch names are loaded on first use: they depend on ``veritask.agent``, which
itself uses this package's data model (``Usage``), so importing them eagerly would be circular.
"""

from typing import TYPE_CHECKING, Any

from veritask.rollout._metrics import pass_at_k, pass_hat_k, pass_hat_k_table
from veritask.rollout._trajectory import StopReason, ToolStep, Trajectory, Usage

if TYPE_CHECKING:
    from veritask.rollout._batch import RoleFactory, TaskSource, run_batch, score, summarize
    from veritask.rollout._episode import EpisodeLimits, EpisodeTask, run_episode

_LAZY = {
    "EpisodeLimits": "_episode",
    "EpisodeTask": "_episode",
    "run_episode": "_episode",
    "RoleFactory": "_batch",
    "TaskSource": "_batch",
    "run_batch": "_batch",
    "score": "_batch",
    "summarize": "_batch",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'veritask.rollout' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"veritask.rollout.{module}"), name)


__all__ = [
    "EpisodeLimits",
    "EpisodeTask",
    "RoleFactory",
    "StopReason",
    "TaskSource",
    "ToolStep",
    "Trajectory",
    "Usage",
    "pass_at_k",
    "pass_hat_k",
    "pass_hat_k_table",
    "run_batch",
    "run_episode",
    "score",
    "summarize",
]
