"""ART (``openpipe-art``) itself, not a stand-in: a ``TrainableModel`` registered with a backend
that answers ART's ``Backend`` protocol (no GPU: its ``train`` only counts steps), rolled out by
``art_rollout`` against an in-process chat-completions endpoint playing the witness. The
trajectory validates as ART's pydantic ``Trajectory`` with the tool schemas the model sampled
with, groups into a ``TrajectoryGroup`` the backend trains on, and the rollout after a training
step asks for the new checkpoint (``agent-001@1``), not the one named at registration.

Run with ``make test-art`` (its own virtualenv with the ``art`` extra)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

art = pytest.importorskip("art")
httpx = pytest.importorskip("httpx")

from veritask.integrations.art import art_rollout  # noqa: E402
from veritask.task import TaskPackage  # noqa: E402

BASE = "http://policy.test/v1"


class StepBackend:
    """ART's ``Backend`` protocol with a step counter for training (vLLM's ``name@step``)."""

    def __init__(self) -> None:
        self.step = 0
        self.trained: list[Any] = []

    def _model_inference_name(self, model: Any, step: int | None = None) -> str:
        return f"{model.name}@{self.step if step is None else step}"

    async def close(self) -> None:
        return None

    async def register(self, model: Any) -> None:
        return None

    async def _get_step(self, model: Any) -> int:
        return self.step

    async def _delete_checkpoint_files(self, model: Any, steps_to_keep: list[int]) -> None:
        return None

    async def _prepare_backend_for_training(self, model: Any, config: Any) -> tuple[str, str]:
        return BASE, "k"

    async def train(self, model: Any, trajectory_groups: Any, **kwargs: Any) -> Any:
        self.trained.extend(trajectory_groups)
        self.step += 1
        return art.types.TrainResult(step=self.step, metrics={})


def _endpoint(witness: list[Any], asked: list[str]) -> Any:
    """Chat completions that play the witness, one call per turn, recording the model asked."""

    def handle(request: Any) -> Any:
        body = json.loads(request.content)
        asked.append(body["model"])
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        message: dict[str, Any] = {"role": "assistant", "content": "All done."}
        if turn < len(witness):
            fn = {"name": witness[turn].tool, "arguments": json.dumps(witness[turn].args)}
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"c{turn}", "type": "function", "function": fn}],
            }
        choice = {"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}
        payload = {
            "id": f"cmpl-{len(asked)}",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [choice],
        }
        return httpx.Response(200, json=payload)

    return httpx.AsyncClient(transport=httpx.MockTransport(handle))


def test_art_rollout_trains_and_follows_the_checkpoint(
    dataset: str, solvable: list[TaskPackage]
) -> None:
    task = solvable[0]
    backend = StepBackend()
    model = art.TrainableModel(name="agent-001", project="veritask", base_model="stand-in")
    asked: list[str] = []

    async def run() -> tuple[Any, Any]:
        await model.register(backend)
        assert model.inference_model_name == "agent-001@0"
        async with _endpoint(list(task.witness), asked) as http:
            first = await art_rollout(model, task.id, dataset=dataset, http_client=http)
            assert set(asked) == {"agent-001@0"}
            asked.clear()
            result = await backend.train(model, [art.TrajectoryGroup([first])])
            assert result.step == 1
            second = await art_rollout(model, task.id, dataset=dataset, http_client=http)
        return first, second

    first, second = asyncio.run(run())
    assert first.reward == 1.0 and second.reward == 1.0
    assert isinstance(first, art.Trajectory)
    names = {t["function"]["name"] for t in first.tools}
    assert names >= {c.tool for c in task.witness}
    assert backend.trained[0].trajectories[0].tools == first.tools
    assert set(asked) == {"agent-001@1"}  # every request of the rollout after the step
