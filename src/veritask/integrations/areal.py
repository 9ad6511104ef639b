"""AReaL integration: an agent workflow (``async run(data, **extra_kwargs)`` returning the
reward), the form AReaL's proxy mode wraps for training.

AReaL calls ``run`` with the dataset row and ``base_url`` / ``http_client`` (and ``api_key``)
of its proxy in ``extra_kwargs``; every completion made through them is recorded for training,
and the returned float is the episode's reward. This module imports nothing from AReaL.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from veritask.integrations.episode import run_episode
from veritask.model import GenerateConfig

__all__ = ["VeritaskAReaLAgent"]


class VeritaskAReaLAgent:
    """One veritask episode per call of ``run``, scored by the verifier.

    Args:
        dataset: The dataset directory (else each row's ``dataset_dir``).
        model: The model name sent to AReaL's proxy.
        max_turns: Most model replies per episode.
        **sampling: ``temperature``, ``top_p``, ``max_tokens`` for each request.
    """

    def __init__(
        self,
        dataset: str | Path | None = None,
        model: str = "default",
        max_turns: int = 30,
        **sampling: Any,
    ) -> None:
        self.dataset = dataset
        self.model = model
        self.max_turns = max_turns
        self.config = GenerateConfig(**sampling)

    async def run(self, data: dict[str, Any], **extra_kwargs: Any) -> float:
        """Play the row's task (``task_id``) through AReaL's endpoint; the verified reward."""
        result = await run_episode(
            data,
            extra_kwargs.get("base_url"),
            self.model,
            extra_kwargs.get("api_key"),
            extra_kwargs.get("http_client"),
            dataset=self.dataset,
            max_turns=self.max_turns,
            config=self.config,
        )
        return result.reward
