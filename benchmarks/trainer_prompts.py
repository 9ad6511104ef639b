"""Prompt tokens per task (whole policy vs compact), verl limits and the single-turn count.

Usage: python benchmarks/trainer_prompts.py [N] [SEED]  (travel tasks, default 30 and 7)

Tokens are counted with the o200k_base encoding from the ``bpe-openai`` package (its data is
in the wheel, so nothing is downloaded); without it, characters / 4 is printed as a proxy.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from veritask.integrations import VeritaskEnv
from veritask.integrations._session import opening_prompts
from veritask.integrations.trl_users import single_turn_tasks
from veritask.integrations.verl_settings import VERL_DEFAULTS, measure_verl_limits
from veritask.synth import generate


def _counter() -> tuple[str, Callable[[str], int]]:
    try:
        import bpe_openai
    except ImportError:
        return "chars/4 proxy", lambda text: len(text) // 4
    encoding = bpe_openai.get_encoding("o200k_base")
    return "o200k_base tokens", lambda text: len(encoding.encode(text))


def _witness_responses(dataset: str) -> list[int]:
    env = VeritaskEnv(dataset)
    out = []
    for pkg in env.source.packages:
        env.reset(pkg.id)
        for i, call in enumerate(pkg.witness):
            payload = env.call_tool(call.tool, call.args, f"c{i}")
            body = payload["result"] if payload["ok"] else {"error": payload["error"]}
            out.append(len(json.dumps(body, default=str)))
    env.close()
    return out


def main(n: int, seed: int) -> None:
    unit, count = _counter()
    with tempfile.TemporaryDirectory() as tmp:
        dataset = str(Path(tmp) / "travel")
        generate("travel", n, seed, dataset)
        env = VeritaskEnv(dataset)
        env.reset(0)
        tools = count(json.dumps(env.tools))
        for compact in (False, True):
            sizes = [
                count(p[0]["content"]) + count(p[1]["content"])
                for _, p in opening_prompts(dataset, compact=compact)
            ]
            label = "compact" if compact else "whole policy"
            print(
                f"{label}: messages mean {statistics.mean(sizes):.0f}, max {max(sizes)} "
                f"{unit}; + tool schemas {tools}"
            )
        single = single_turn_tasks(dataset)
        print(f"single-turn tasks: {len(single)} of {n}")
        responses = _witness_responses(dataset)
        cut = sum(1 for r in responses if r > 256)
        print(
            f"witness tool responses: {len(responses)}, longest {max(responses)} chars, {cut} > 256"
        )
        limits = measure_verl_limits(dataset)
        print(f"verl limits (chars): {limits}; defaults {VERL_DEFAULTS}")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(*(args + [30, 7][len(args) :]))
