"""verl settings measured on the dataset: no tool response of a replayed witness or an unfiltered
query is longer than ``max_tool_response_length``, no prompt longer than the prompt lengths, and
the measured limits exceed verl's defaults that truncated and dropped data."""

from __future__ import annotations

import json
from typing import Any

from veritask.integrations import VeritaskEnv
from veritask.integrations.verl import verl_rows
from veritask.integrations.verl_settings import VERL_DEFAULTS, measure_verl_limits, verl_settings
from veritask.task import TaskPackage

TOOL_KEY = "actor_rollout_ref.rollout.multi_turn.max_tool_response_length"


class WordTokenizer:
    """A chat template stand-in: one token per whitespace-separated word of messages and tools."""

    def apply_chat_template(self, messages: list[dict[str, Any]], **kw: Any) -> list[int]:
        text = " ".join(m["content"] for m in messages) + json.dumps(kw["tools"])
        return list(range(len(text.split())))


def test_settings_fit_every_tool_response_and_prompt(
    dataset: str, packages: dict[str, TaskPackage]
) -> None:
    settings = verl_settings(dataset)
    env = VeritaskEnv(dataset)
    for pkg in packages.values():
        env.reset(pkg.id)
        for i, call in enumerate(pkg.witness):
            payload = env.call_tool(call.tool, call.args, f"c{i}")
            body = payload["result"] if payload["ok"] else {"error": payload["error"]}
            assert len(json.dumps(body, default=str)) <= settings[TOOL_KEY]
    for row in verl_rows(dataset):
        env.reset(row["extra_info"]["task_id"])
        chars = len(json.dumps(row["prompt"])) + len(json.dumps(env.tools))
        assert chars <= settings["data.max_prompt_length"]
    env.close()
    assert settings["data.max_prompt_length"] == settings["actor_rollout_ref.rollout.prompt_length"]
    assert settings["data.truncation"] == "error"
    for key, default in VERL_DEFAULTS.items():
        if key != "data.max_response_length":
            assert settings[key] > default, key


def test_limits_in_tokens_with_a_tokenizer(dataset: str) -> None:
    words = measure_verl_limits(dataset, WordTokenizer())
    chars = measure_verl_limits(dataset)
    assert words.prompt_unit == "tokens" and chars.prompt_unit == "characters"
    assert 0 < words.prompt_length < chars.prompt_length
    assert words.prompts == chars.prompts == len(verl_rows(dataset))
    assert verl_settings(dataset, tokenizer=WordTokenizer())["data.max_prompt_length"] % 1024 == 0
