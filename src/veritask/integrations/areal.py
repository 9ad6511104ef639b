"""AReaL integration: an agent workflow (``async run(data, **extra_kwargs)``), the form AReaL's
proxy mode wraps for training.

AReaL calls ``run`` with the dataset row and ``base_url`` / ``http_client`` (and ``api_key``)
of its proxy in ``extra_kwargs``; every completion made through them is recorded for training.
``run`` returns either a float, the episode's verified reward (AReaL gives it to the last
completion), or, with ``per_response=True``, a dict of rewards keyed by completion id (AReaL
sets each one): every response gets its turn's dense reward (the change in state proximity,
``-lambda_err`` per violating call) and the last one the verified reward. Completion ids are
read off the responses by an ``httpx`` response hook that records only for the episode running
in the current task, so episodes sharing one client do not mix. This module imports nothing
from AReaL.
"""

from __future__ import annotations

from contextvars import ContextVar
from pathlib import Path
from typing import Any

import httpx

from veritask.integrations.episode import EpisodeResult, run_episode
from veritask.model import GenerateConfig

__all__ = ["VeritaskAReaLAgent", "per_response_rewards"]

_COMPLETION_IDS: ContextVar[list[str] | None] = ContextVar("veritask_completion_ids", default=None)
DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=5.0)
"""Timeouts of the client made when AReaL passes none (the ``openai`` client's defaults)."""


async def _record_completion_id(response: httpx.Response) -> None:
    """Response hook: the chat completion's ``id``, for the episode of the current task."""
    ids = _COMPLETION_IDS.get()
    if ids is None or response.status_code != 200:
        return
    await response.aread()
    try:
        body = response.json()
    except ValueError:
        return
    if isinstance(body, dict) and isinstance(body.get("id"), str) and "choices" in body:
        ids.append(body["id"])


def _hooked(client: httpx.AsyncClient) -> httpx.AsyncClient:
    """``client`` with the completion-id hook among its response hooks (added once)."""
    hooks = client.event_hooks
    if _record_completion_id not in hooks["response"]:
        client.event_hooks = {**hooks, "response": [*hooks["response"], _record_completion_id]}
    return client


def per_response_rewards(result: EpisodeResult, completion_ids: list[str]) -> dict[str, float]:
    """``{completion id: reward}``: each response its turn's dense reward, the last one the
    verified reward.

    Raises:
        ValueError: There is not one completion id per response.
    """
    if len(completion_ids) != len(result.outputs) or not completion_ids:
        raise ValueError(
            f"{len(completion_ids)} completion ids for {len(result.outputs)} responses"
        )
    rewards = dict(zip(completion_ids, map(float, result.turn_rewards), strict=False))
    rewards[completion_ids[-1]] = float(result.reward)
    return rewards


class VeritaskAReaLAgent:
    """One veritask episode per call of ``run``, scored by the verifier.

    Args:
        dataset: The dataset directory (else each row's ``dataset_dir``).
        model: The model name sent to AReaL's proxy.
        max_turns: Most model replies per episode.
        per_response: Return rewards keyed by completion id instead of one float.
        **sampling: ``temperature``, ``top_p``, ``max_tokens`` for each request.
    """

    def __init__(
        self,
        dataset: str | Path | None = None,
        model: str = "default",
        max_turns: int = 30,
        per_response: bool = False,
        **sampling: Any,
    ) -> None:
        self.dataset = dataset
        self.model = model
        self.max_turns = max_turns
        self.per_response = per_response
        self.config = GenerateConfig(**sampling)

    async def _episode(self, data: dict[str, Any], extra: dict[str, Any], client: Any) -> Any:
        return await run_episode(
            data,
            extra.get("base_url"),
            self.model,
            extra.get("api_key"),
            client,
            dataset=self.dataset,
            max_turns=self.max_turns,
            config=self.config,
        )

    async def run(self, data: dict[str, Any], **extra_kwargs: Any) -> float | dict[str, float]:
        """Play the row's task (``task_id``) through AReaL's endpoint: the verified reward, or
        per-response rewards keyed by completion id (``per_response``)."""
        if not self.per_response:
            result = await self._episode(data, extra_kwargs, extra_kwargs.get("http_client"))
            return float(result.reward)
        given = extra_kwargs.get("http_client")
        client = given if given is not None else httpx.AsyncClient(timeout=DEFAULT_TIMEOUT)
        ids: list[str] = []
        token = _COMPLETION_IDS.set(ids)
        try:
            result = await self._episode(data, extra_kwargs, _hooked(client))
        finally:
            _COMPLETION_IDS.reset(token)
            if given is None:
                await client.aclose()
        return per_response_rewards(result, ids)
