"""Trainer integrations: the episode API, TRL, verifiers and verl (servers are in veritask.serve)."""

from veritask.integrations._session import (
    EnvFactory,
    Observation,
    StepResult,
    VeritaskEnv,
    run_episode,
)

__all__ = ["EnvFactory", "Observation", "StepResult", "VeritaskEnv", "run_episode"]
