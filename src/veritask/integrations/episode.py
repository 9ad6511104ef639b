"""One episode against an OpenAI-compatible endpoint: the function trainers that serve their
policy behind a base URL (AReaL, rLLM, SkyRL, ART, a vLLM or SGLang server) call per rollout.

Requests go through the model layer's provider door (``get_provider("openai:MODEL", ...)``),
so the ``openai`` client is the only SDK involved; a trainer's own ``httpx.AsyncClient`` (one
that records completions for training, or an in-process transport) is passed through as is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veritask.integrations._session import VeritaskEnv
from veritask.model import GenerateConfig, ModelOutput, get_provider
from veritask.reward import per_turn_rewards
from veritask.task import TaskPackage, Trajectory

__all__ = ["EpisodeResult", "resolve_task", "run_episode"]


@dataclass
class EpisodeResult:
    """A finished, verified episode.

    Attributes:
        task_id: The task.
        reward: The verified reward (1.0 when the final state is the task's target).
        trajectory: The verified Trajectory (messages, steps, distances, breakdown).
        outputs: One model output per request, in order; ``output.choice`` is the raw choice.
        turn_rewards: The dense reward of each assistant turn, in order.
        tools: The OpenAI tool schemas every request carried (what the model sampled with).
    """

    task_id: str
    reward: float
    trajectory: Trajectory
    outputs: list[ModelOutput] = field(default_factory=list)
    turn_rewards: list[float] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The whole conversation (system policy, user, assistant and tool messages)."""
        return self.trajectory.messages


def resolve_task(
    task: str | int | TaskPackage | Mapping[str, Any], dataset: str | Path | None
) -> tuple[str | int | TaskPackage, str]:
    """The task and dataset directory of ``task``, which may be a dataset row carrying
    ``task_id`` (and ``dataset_dir`` when ``dataset`` is None).

    Raises:
        ValueError: No dataset directory is known.
    """
    if isinstance(task, Mapping):
        dataset = dataset or task.get("dataset_dir")
        task = str(task["task_id"])
    if dataset is None:
        raise ValueError("pass dataset= (or a row with dataset_dir) to say where the task lives")
    return task, str(dataset)


async def run_episode(
    task: str | int | TaskPackage | Mapping[str, Any],
    base_url: str | None,
    model: str,
    api_key: str | None = None,
    http_client: Any | None = None,
    *,
    dataset: str | Path | None = None,
    max_turns: int = 30,
    config: GenerateConfig | None = None,
) -> EpisodeResult:
    """Play one task against a chat-completions endpoint and verify it.

    The policy sees the wiki policy and the scripted user's opening, and the domain's tools.
    Each reply with tool calls has them run on the episode's own database; a reply without
    gets the scripted user's answer, until the user stops or ``max_turns`` replies were made.

    Args:
        task: A task id, index or package, or a dataset row with ``task_id``.
        base_url: The endpoint (``http://host:port/v1``); None reads the environment.
        model: The model name sent to the endpoint.
        api_key: The key (``EMPTY`` for local servers when None and none is set).
        http_client: An ``httpx.AsyncClient`` for the requests; the caller keeps owning it.
        dataset: The dataset directory (else the row's ``dataset_dir``).
        max_turns: Most model replies.
        config: Sampling settings.

    Returns:
        The verified episode.

    Raises:
        veritask.model.ProviderError: The endpoint failed (after the provider's retries).
    """
    task, dataset_dir = resolve_task(task, dataset)
    provider = get_provider(
        f"openai:{model}", base_url=base_url, api_key=api_key, http_client=http_client
    )
    env = VeritaskEnv(dataset_dir)
    obs = env.reset(task)
    outputs: list[ModelOutput] = []
    try:
        for _ in range(max_turns):
            output = await provider.generate(list(env.messages), obs.tools, config)
            outputs.append(output)
            if env.step(dict(output.message)).done:
                break
        traj = env.trajectory()
        return EpisodeResult(
            obs.task_id,
            float(traj.reward or 0.0),
            traj,
            outputs,
            per_turn_rewards(traj),
            list(obs.tools),
        )
    finally:
        env.close()
        aclose = getattr(provider, "aclose", None)
        if aclose is not None:
            await aclose()
