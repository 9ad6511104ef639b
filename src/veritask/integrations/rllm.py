"""rLLM integration: an ``AgentFlow`` that plays a veritask task through rLLM's model gateway and
an ``Evaluator`` that verifies the episode it produced.

rLLM (``rllm-org/rllm``, the ``rllm.types`` protocols) hands a flow a ``Task`` (its ``metadata``
is the dataset row) and an ``AgentConfig`` whose ``base_url`` is the gateway that records every
completion for training; the flow returns a ``Trajectory``, and the engine's ``Evaluator``
(``evaluate(task, episode) -> EvalOutput``) writes the reward back. Here the flow is
:func:`~veritask.integrations.run_episode` on the gateway, and the evaluator does not trust the
flow's own score: it rebuilds the state from the tool calls the trajectory records
(:func:`~veritask.integrations.replay_reward`) and verifies that.

rLLM is imported only when a flow runs or an episode is scored (it is not on PyPI; install it
from its repository).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from veritask.integrations._session import dataset_source, replay_reward
from veritask.integrations.episode import EpisodeResult, run_episode
from veritask.model import GenerateConfig

__all__ = ["VeritaskEvaluator", "VeritaskFlow", "episode_calls", "rllm_rows"]

META_KEY = "veritask"
"""Key of the trajectory metadata the flow fills: task id, dataset and the calls made."""


def _row(task: Any) -> Mapping[str, Any]:
    """The dataset row of an rLLM ``Task`` (its ``metadata``), or ``task`` itself as a row."""
    if isinstance(task, Mapping):
        return task
    metadata = getattr(task, "metadata", None) or {}
    if "task_id" not in metadata and getattr(task, "id", None) is not None:
        return {**metadata, "task_id": str(task.id)}
    return dict(metadata)


def _calls(result: EpisodeResult) -> list[list[Any]]:
    """``[tool, arguments]`` of every tool call of the episode, in order."""
    out: list[list[Any]] = []
    for message in result.messages:
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or {}
            out.append([str(fn.get("name", "")), fn.get("arguments") or "{}"])
    return out


def _steps(result: EpisodeResult) -> list[Any]:
    """One rLLM ``Step`` per model reply: the chat up to it, the reply and its turn reward."""
    from rllm.types import Step

    replies = [i for i, m in enumerate(result.messages) if m.get("role") == "assistant"]
    steps = []
    for k, at in enumerate(replies):
        message = result.messages[at]
        reward = result.turn_rewards[k] if k < len(result.turn_rewards) else 0.0
        steps.append(
            Step(
                chat_completions=[dict(m) for m in result.messages[: at + 1]],
                model_response=str(message.get("content") or ""),
                reward=float(reward),
                done=k == len(replies) - 1,
            )
        )
    return steps


class VeritaskFlow:
    """rLLM ``AgentFlow``: one veritask episode against the gateway in ``config.base_url``.

    Args:
        dataset: The dataset directory (else each row's ``dataset_dir``).
        max_turns: Most model replies per episode.
        http_client: An ``httpx.AsyncClient`` for the requests (else the gateway is reached
            with the ``openai`` client's own).
        **sampling: ``temperature``, ``top_p``, ``max_tokens`` for each request.
    """

    name = "veritask"

    def __init__(
        self,
        dataset: str | Path | None = None,
        max_turns: int = 30,
        http_client: Any | None = None,
        **sampling: Any,
    ) -> None:
        self.dataset = dataset
        self.max_turns = max_turns
        self.http_client = http_client
        self.config = GenerateConfig(**sampling)

    async def arun(self, task: Any, config: Any) -> Any:
        """Play the task's row (``task_id``) and return an rLLM ``Trajectory`` whose metadata
        holds the calls made (for the evaluator) and whose reward is the verified reward."""
        from rllm.types import Trajectory

        row = _row(task)
        result = await run_episode(
            row,
            config.base_url,
            config.model,
            None,
            self.http_client,
            dataset=self.dataset,
            max_turns=self.max_turns,
            config=self.config,
        )
        dataset = str(self.dataset or row.get("dataset_dir"))
        metadata = {"task_id": result.task_id, "dataset_dir": dataset, "calls": _calls(result)}
        return Trajectory(
            name=self.name,
            task=dict(row),
            steps=_steps(result),
            reward=result.reward,
            metadata={META_KEY: metadata},
        )

    def run(self, task: Any, config: Any) -> Any:
        """``arun`` for callers without an event loop (rLLM runs sync flows in a thread)."""
        return asyncio.run(self.arun(task, config))


def episode_calls(episode: Any) -> tuple[str, str, list[tuple[str, Any]]] | None:
    """``(task_id, dataset_dir, calls)`` recorded by :class:`VeritaskFlow` on an episode's
    first veritask trajectory; None when no trajectory carries them."""
    for traj in getattr(episode, "trajectories", None) or []:
        found = (getattr(traj, "metadata", None) or {}).get(META_KEY)
        if found:
            calls = [(str(name), args) for name, args in found["calls"]]
            return str(found["task_id"]), str(found["dataset_dir"]), calls
    return None


class VeritaskEvaluator:
    """rLLM ``Evaluator``: replays the episode's recorded tool calls on a fresh copy of the
    task's start state and verifies the final state (signals: proximity, violations)."""

    def evaluate(self, task: Any, episode: Any) -> Any:
        """The verified reward of ``episode`` as rLLM's ``EvalOutput``; an episode with no
        recorded veritask calls scores 0."""
        from rllm.eval.types import EvalOutput, Signal

        found = episode_calls(episode)
        if found is None:
            return EvalOutput(reward=0.0, is_correct=False, metadata={"error": "no veritask run"})
        task_id, dataset_dir, calls = found
        expected = _row(task).get("task_id")
        if expected is not None and str(expected) != task_id:
            raise ValueError(f"episode played {task_id!r}, the task is {expected!r}")
        scored = replay_reward(dataset_dir, task_id, calls)
        signals = [
            Signal(name="proximity", value=float(scored["proximity"])),
            Signal(name="violations", value=float(scored["violations"])),
        ]
        breakdown = json.loads(json.dumps(scored["breakdown"] or {}, default=str))
        return EvalOutput(
            reward=float(scored["reward"]),
            is_correct=scored["reward"] == 1.0,
            signals=signals,
            metadata={"breakdown": breakdown},
        )


def rllm_rows(dataset: str | Path) -> list[dict[str, Any]]:
    """One row per task of a dataset, in the shape rLLM datasets hold (``id``,
    ``instruction``; ``task_id`` and ``dataset_dir`` for the flow). The instruction is the
    task text; the policy itself sees the wiki policy and the scripted user's opening."""
    source = dataset_source(str(dataset))
    return [
        {
            "id": p.id,
            "instruction": p.task_description,
            "task_id": p.id,
            "dataset_dir": str(dataset),
        }
        for p in source.packages
    ]
