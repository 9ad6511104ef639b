"""ART (OpenPipe) integration: a rollout function returning ``art.Trajectory``.

ART trains on the ``Choice`` objects its trajectories hold for assistant turns, so every
assistant turn is kept as the raw choice the endpoint returned (logprobs included), and every
other message as a plain dict, and the trajectory's ``tools`` are the schemas every request
carried, so ART tokenizes the training sequence with the tools the model sampled with.

The endpoint comes from the ``art.Model``: its inference base URL and key, and the name of its
*latest* checkpoint, asked of the model on every rollout (``model.get_inference_name()``, which
the backend answers ``agent-001@3`` after three training steps). ``inference_model_name`` is only
what the backend answered when the model was registered (``agent-001@0``), so it is the fallback
for models without ``get_inference_name``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from veritask.integrations.episode import EpisodeResult, run_episode
from veritask.model import openai_choice

__all__ = ["art_items", "art_rollout", "inference_name"]


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


def inference_name(model: Any) -> str:
    """The name of the model's latest checkpoint, as ART's backend serves it."""
    latest = getattr(model, "get_inference_name", None)
    if callable(latest):
        return str(latest())
    return str(getattr(model, "inference_model_name", None) or getattr(model, "name", ""))


def _endpoint(model: Any) -> tuple[str | None, str, str | None]:
    base_url = getattr(model, "inference_base_url", None)
    return base_url, inference_name(model), getattr(model, "inference_api_key", None)


async def art_rollout(
    model: Any,
    task: Any,
    *,
    dataset: str | Path | None = None,
    max_turns: int = 30,
    http_client: Any | None = None,
) -> Any:
    """Play one task with an ``art.Model`` and return its ``art.Trajectory`` (reward: the
    verified reward; metrics: the reward breakdown's numbers; tools: the schemas sampled with).

    Args:
        model: An ``art.Model`` or ``art.TrainableModel`` (registered with a backend).
        task: A task id, index or package, or a dataset row with ``task_id``.
        dataset: The dataset directory (else the row's ``dataset_dir``).
        max_turns: Most model replies.
        http_client: An ``httpx.AsyncClient`` for the requests.

    Returns:
        The ``art.Trajectory`` of the verified episode.

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
        messages_and_choices=art_items(result),
        tools=result.tools,
        reward=result.reward,
        metrics=metrics,
    )
