"""Trainer integrations: the episode API, the OpenAI-endpoint episode, TRL, verifiers, verl and
the thin adapters for AReaL, rLLM, SkyRL and ART (servers, OpenEnv included, are in
veritask.serve)."""

from veritask.integrations._session import (
    EnvFactory,
    Observation,
    StepResult,
    VeritaskEnv,
    replay_reward,
)
from veritask.integrations.episode import EpisodeResult, run_episode

__all__ = [
    "EnvFactory",
    "EpisodeResult",
    "Observation",
    "StepResult",
    "VeritaskEnv",
    "replay_reward",
    "run_episode",
]
