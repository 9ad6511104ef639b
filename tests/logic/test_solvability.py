"""``logic solvability``: a scripted model's pass@k per level."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.logic import builtin_families, make_instance
from veritask.logic._solvability import solvability
from veritask.model import ScriptedProvider, register_provider

Messages = list[dict[str, Any]]


def _answers(family_id: str, level_of_wrong: int) -> ScriptedProvider:
    """Right on every level below ``level_of_wrong``; at and above it, right only on the first
    of the answers to each question (so pass@1 is 1/n there and pass@n is 1)."""
    family = builtin_families()[family_id]
    truth = {}
    for level in range(1, 11):
        for index in range(3):
            inst = make_instance(family, level, split="solvability", index=index)
            truth[inst.question] = (level, inst.answer)

    def script(messages: Messages, tools: Any) -> str:
        prompt = messages[0]["content"]
        attempt = int(re.search(r"attempt (\d+)", prompt).group(1))  # type: ignore[union-attr]
        question = next(q for q in truth if q in prompt)
        level, answer = truth[question]
        right = level < level_of_wrong or attempt == 1
        return f"\\boxed{{{answer if right else 'no idea'}}}"

    return ScriptedProvider(script)


def test_pass_at_k_per_level_follows_the_model() -> None:
    family = builtin_families()["weekday_shift"]
    report = asyncio.run(
        solvability(
            family, _answers("weekday_shift", 3), levels=(1, 2, 3, 4), per_level=3, n=4, ks=(1, 4)
        )
    )
    assert report.levels[1]["pass@1"] == 1.0 and report.levels[2]["pass@4"] == 1.0
    assert report.levels[3]["pass@1"] == 0.25 and report.levels[4]["pass@4"] == 1.0
    assert report.levels[4]["correct"] == 3 and report.levels[4]["asked"] == 12


def test_solvability_command_with_a_registered_scripted_provider() -> None:
    register_provider("solvability-test", lambda _arg, **_: _answers("weekday_shift", 2))
    args = ["logic", "solvability", "weekday_shift", "--model", "solvability-test:x"]
    args += ["--levels", "1,2", "--per-level", "2", "--n", "2", "--k", "1,2", "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["levels"]["1"]["pass@1"] == 1.0
    assert data["levels"]["2"] == {
        "instances": 2,
        "correct": 2,
        "asked": 4,
        "pass@1": 0.5,
        "pass@2": 1.0,
    }
    bad = CliRunner().invoke(cli, [*args[:5], "--n", "2", "--k", "3"])
    assert bad.exit_code != 0 and "every k in 1..2" in bad.output
