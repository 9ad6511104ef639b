"""Integrations: the episode API for trainers, TRL, verifiers, verl, MCP and an HTTP server."""

from veritask.integrations._session import (
    EnvFactory,
    Observation,
    StepResult,
    VeritaskEnv,
    run_episode,
)

__all__ = ["EnvFactory", "Observation", "StepResult", "VeritaskEnv", "run_episode"]
