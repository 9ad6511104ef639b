"""verl settings that keep every veritask prompt and tool response whole.

verl's defaults are sized for single-turn math: ``multi_turn.max_tool_response_length=256``
characters (a longer tool response is cut), ``data.max_prompt_length=512`` tokens with
``data.filter_overlong_prompts`` (a longer prompt drops its row) and ``rollout.prompt_length``
/ ``response_length`` bounding the whole conversation. A veritask prompt carries the policy and
the domain's tool schemas, and a query can return many rows, so :func:`verl_settings` measures a
dataset and answers Hydra overrides that fit it:

* the longest tool response: every task's witness replayed, plus each read tool called with no
  filter on each task's starting state (the most rows a query can return there);
* the longest prompt: the system policy and opening message with the tool schemas, in tokens
  when a tokenizer is given (its chat template), else in characters (an upper bound on the
  tokens of this ASCII text under a byte-level BPE tokenizer);
* ``data.truncation=error``, so a prompt that still does not fit fails loudly instead of being
  cut.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from veritask.integrations._session import VeritaskEnv, dataset_source
from veritask.integrations.verl import verl_rows

__all__ = ["VerlLimits", "measure_verl_limits", "verl_settings"]

VERL_DEFAULTS = {
    "actor_rollout_ref.rollout.multi_turn.max_tool_response_length": 256,
    "data.max_prompt_length": 512,
    "data.max_response_length": 512,
}
"""The verl defaults (``verl/trainer/config``) that truncate or drop veritask data."""


@dataclass(frozen=True)
class VerlLimits:
    """What a dataset needs: the longest tool response (characters) and prompt (tokens, or
    characters when measured without a tokenizer), and how many of each were measured."""

    tool_response_chars: int
    prompt_length: int
    prompt_unit: str
    tool_responses: int
    prompts: int


def _response_text(payload: dict[str, Any]) -> str:
    """The text ``VeritaskTool.execute`` hands verl for a call's payload."""
    body = payload["result"] if payload["ok"] else {"error": payload["error"]}
    return json.dumps(body, default=str)


def _tool_responses(dataset_dir: str) -> list[int]:
    lengths: list[int] = []
    env = VeritaskEnv(dataset_dir)
    try:
        for pkg in env.source.packages:
            env.reset(pkg.id)
            reads = [t["function"]["name"] for t in env.tools if not _writes(t)]
            for name in reads:
                lengths.append(len(_response_text(env.call_tool(name, {}))))
            for i, call in enumerate(pkg.witness):
                lengths.append(len(_response_text(env.call_tool(call.tool, call.args, f"c{i}"))))
    finally:
        env.close()
    return lengths


def _writes(tool: dict[str, Any]) -> bool:
    name = str(tool["function"]["name"])
    return not name.startswith(("query_", "get_", "list_", "search_", "find_"))


def _prompt_lengths(dataset_dir: str, tokenizer: Any | None) -> list[int]:
    env = VeritaskEnv(dataset_dir)
    out = []
    try:
        for row in verl_rows(dataset_dir):
            env.reset(row["extra_info"]["task_id"])
            if tokenizer is not None:
                ids = tokenizer.apply_chat_template(
                    row["prompt"], tools=env.tools, tokenize=True, add_generation_prompt=True
                )
                out.append(len(ids["input_ids"] if isinstance(ids, dict) else ids))
            else:
                out.append(len(json.dumps(row["prompt"])) + len(json.dumps(env.tools)))
    finally:
        env.close()
    return out


def measure_verl_limits(dataset_dir: str | Path, tokenizer: Any | None = None) -> VerlLimits:
    """Measure the longest tool response and prompt of a dataset directory."""
    dataset_dir = str(Path(dataset_dir).resolve())
    dataset_source(dataset_dir)
    responses = _tool_responses(dataset_dir)
    prompts = _prompt_lengths(dataset_dir, tokenizer)
    return VerlLimits(
        tool_response_chars=max(responses, default=0),
        prompt_length=max(prompts, default=0),
        prompt_unit="tokens" if tokenizer is not None else "characters",
        tool_responses=len(responses),
        prompts=len(prompts),
    )


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def verl_settings(
    dataset_dir: str | Path,
    *,
    tokenizer: Any | None = None,
    response_length: int = 8192,
    headroom: float = 2.0,
) -> dict[str, Any]:
    """Hydra overrides (``key: value``) under which verl neither cuts a tool response nor drops
    or cuts a prompt of the dataset.

    Args:
        dataset_dir: A dataset directory made by ``veritask.synth.generate``.
        tokenizer: The policy's tokenizer (prompt lengths in its tokens); None measures
            characters, an upper bound.
        response_length: Tokens for the whole multi-turn response (assistant turns and tool
            responses after the prompt).
        headroom: Factor on the longest tool response measured (a model's queries may return
            more rows than the witness's), rounded up to a multiple of 1024.

    Returns:
        The overrides, e.g. ``{"data.max_prompt_length": 13312, ...}``.
    """
    limits = measure_verl_limits(dataset_dir, tokenizer)
    prompt = _round_up(limits.prompt_length, 1024)
    tool = _round_up(int(limits.tool_response_chars * headroom), 1024)
    return {
        "data.max_prompt_length": prompt,
        "data.max_response_length": response_length,
        "data.filter_overlong_prompts": True,
        "data.truncation": "error",
        "actor_rollout_ref.rollout.prompt_length": prompt,
        "actor_rollout_ref.rollout.response_length": response_length,
        "actor_rollout_ref.rollout.multi_turn.max_tool_response_length": tool,
        "actor_rollout_ref.rollout.multi_turn.tool_response_truncate_side": "middle",
    }
