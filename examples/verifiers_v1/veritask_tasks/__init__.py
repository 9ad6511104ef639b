"""veritask tasks as a verifiers v1 environment: ``vf-eval veritask-tasks``.

The taskset, its per-rollout tool server and the scripted-user env live in
``veritask.integrations.verifiers_v1``; this package gives them an id verifiers can import.
"""

from veritask.integrations.verifiers_v1 import VeritaskTaskset, VeritaskUserEnv

__all__ = ["VeritaskTaskset", "VeritaskUserEnv"]
