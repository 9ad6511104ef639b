"""SkyRL's gym itself (``skyrl-gym``), not a stand-in: ``register`` puts the text environment in
skyrl_gym's registry, ``skyrl_gym.make`` builds it from a dataset row as SkyRL's generator does,
and an oracle episode written as hermes tool-call text reaches the verified reward 1.0 (a
do-nothing one 0.0) through ``init`` / ``step``.

Run with ``make test-skyrl`` (its own virtualenv with the ``skyrl`` extra)."""

from __future__ import annotations

import json
from typing import Any

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym")

from veritask.integrations.skyrl import VeritaskTextEnv, register, skyrl_rows  # noqa: E402
from veritask.task import TaskPackage  # noqa: E402


def _play(env: Any, replies: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"done": False}
    for text in replies:
        out = dict(env.step(text))
        if out["done"]:
            return out
    for _ in range(20):
        out = dict(env.step("All done."))
        if out["done"]:
            break
    return out


@pytest.mark.parametrize("mode", ["oracle", "noop"])
def test_skyrl_gym_make_and_episode(dataset: str, solvable: list[TaskPackage], mode: str) -> None:
    register()
    task = solvable[0]
    row = next(r for r in skyrl_rows(dataset) if r["extra_info"]["task_id"] == task.id)
    env = skyrl_gym.make(row["env_class"], env_config={}, extras=row)
    assert isinstance(env, VeritaskTextEnv)
    assert isinstance(env, skyrl_gym.Env)
    prompt, _ = env.init(row["prompt"])
    assert prompt == row["prompt"]
    calls = task.witness if mode == "oracle" else []
    replies = [
        "<tool_call>\n" + json.dumps({"name": c.tool, "arguments": c.args}) + "\n</tool_call>"
        for c in calls
    ]
    out = _play(env, replies)
    assert out["done"] and out["reward"] == (1.0 if mode == "oracle" else 0.0)
    env.close()
