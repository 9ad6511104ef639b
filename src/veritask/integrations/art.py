"""ART (OpenPipe) integration: a rollout function returning ``art.Trajectory``.

ART trains on the ``Choice`` objects its trajectories hold for assistant turns, so every
assistant turn is kept as the raw choice the endpoint returned (logprobs included), and every
other message as a plain dict. The endpoint comes from the ``art.Model`` (its inference base
URL, key and model name).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from veritask.integrations.episode import EpisodeResult, run_episode
from veritask.model import openai_choice

__all__ = ["art_items", "art_rollout"]


def art_items(result: EpisodeResult) -> list[Any]:
    """The episode as ART's ``messages_and_choices``: the SDK's ``Choice`` for each assistant
    turn, message dicts for the rest."""
    choices = iter(result.outputs)
    items: list[Any] = []
    for message in result.messages:
        if message.get("role") != "assistant":
            items.append(message)
            continue
        output = next(choices)
        items.append(openai_choice(output.choice) if output.choice is not None else message)
    return items


def _endpoint(model: Any) -> tuple[str | None, str, str | None]:
    base_url = getattr(model, "inference_base_url", None)
    name = getattr(model, "inference_model_name", None) or getattr(model, "name", "")
    return base_url, str(name), getattr(model, "inference_api_key", None)


async def art_rollout(
    model: Any,
    task: Any,
    *,
    dataset: str | Path | None = None,
    max_turns: int = 30,
    http_client: Any | None = None,
) -> Any:
    """Play one task with an ``art.Model`` and return its ``art.Trajectory`` (reward: the
    verified reward; metrics: proximity, violations).

    Raises:
        ImportError: ART (``openpipe-art``) is not installed.
    """
    import art

    base_url, name, api_key = _endpoint(model)
    result = await run_episode(
        task, base_url, name, api_key, http_client, dataset=dataset, max_turns=max_turns
    )
    breakdown = result.trajectory.reward_breakdown or {}
    metrics = {k: float(v) for k, v in breakdown.items() if isinstance(v, int | float)}
    return art.Trajectory(
        messages_and_choices=art_items(result), reward=result.reward, metrics=metrics
    )
