"""Model answers that cannot be used, fed to every LLM-driven role of task synthesis.

The Consultant (the LLM explorer's agent) sends truncated, deeply nested and wrongly named tool
calls; the Projector and the persona writer answer with prose, truncated JSON, JSON nested past
Python's recursion limit, integers past its digit limit, and the wrong shapes. Every answer is
repaired or its candidate rejected with a reason: generation finishes and counts the discards.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_llm_mode import PRICES, Message, consultant, llm_generate, travel_script
from test_llm_persona import persona_generate, with_writer

from veritask.model import ScriptedProvider, StructuredOutputError, ask, parse_model
from veritask.synth._persona import Persona

DEEP = "[" * 20_000  # past the recursion limit of the JSON parser
GARBAGE = [
    "",
    "Sure! Here is the description you asked for.",
    '{"who_you_are": "a traveller", "total_goal": ',
    DEEP,
    "Here you go: " + DEEP,
    '{"who_you_are": ' + "9" * 5000 + "}",
    "```json\n{not json}\n```",
    "null",
    "[1, 2, 3]",
    '{"who_you_are": 5, "instruction": [1]}',
    "\x00\ud800",
]


def cycling(answers: list[str]) -> Callable[[list[Message]], str]:
    """A role that answers with the next item of ``answers`` each time it is asked."""
    it = itertools.cycle(answers)
    return lambda _messages: next(it)


@pytest.mark.parametrize("text", GARBAGE)
def test_ask_rejects_garbage_with_a_reason(text: str) -> None:
    import asyncio

    provider = ScriptedProvider([text] * 3)
    with pytest.raises(StructuredOutputError) as info:
        asyncio.run(ask(provider, [{"role": "user", "content": "?"}], parse_model(Persona),
                        module="persona"))  # fmt: skip
    assert len(info.value.reasons) == 3 and all(info.value.reasons)


def test_a_projector_that_answers_garbage_discards_with_reasons(tmp_path: Path) -> None:
    script = travel_script(the_projector=cycling(GARBAGE))
    summary = llm_generate(tmp_path / "ds", ScriptedProvider(script, prices=PRICES), n=2)
    record = summary.costs.modules["projector"]
    assert summary.tasks == 0 and record.attempts > 0 and record.successes == 0
    assert sum(summary.discarded.values()) >= record.attempts


def test_a_persona_writer_that_answers_garbage_discards_with_reasons(tmp_path: Path) -> None:
    provider = ScriptedProvider(with_writer(cycling(GARBAGE)), prices=PRICES)
    summary = persona_generate(tmp_path / "ds", provider, n=2, explorer="symbolic", projector="llm")
    record = summary.costs.modules["persona"]
    assert summary.tasks == 0 and record.attempts > 0 and record.successes == 0
    assert sum(summary.discarded.values()) >= record.attempts


BAD_CALLS: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "query_users", "arguments": DEEP}]},
    {"tool_calls": [{"name": "query_users", "arguments": '{"id": ' + "9" * 5000 + "}"}]},
    {"tool_calls": [{"name": "query_users", "arguments": '{"id": "u_'}]},  # truncated
    {"tool_calls": [{"name": "no_such_tool", "arguments": "{}"}]},
    {"tool_calls": [{"name": "query_users; DROP TABLE users", "arguments": "{}"}]},
    {"tool_calls": [{"name": "query_users", "arguments": "[1, 2]"}]},
]


def test_a_consultant_that_sends_broken_tool_calls_does_not_crash(tmp_path: Path) -> None:
    """Each episode opens with a broken call; the explorer answers it with a structured error
    and the episode goes on."""
    bad = itertools.cycle(BAD_CALLS)

    def the_consultant(messages: list[Message]) -> Any:
        if not any(m["role"] == "tool" for m in messages):
            return next(bad)
        return consultant([m for m in messages if not _is_broken(m)])

    summary = llm_generate(
        tmp_path / "ds", ScriptedProvider(travel_script(the_consultant=the_consultant)), n=2
    )
    assert summary.tasks + sum(summary.discarded.values()) > 0


def _is_broken(message: Message) -> bool:
    """The broken opening call and the error that answered it."""
    if message["role"] == "tool":
        return '"error"' in str(message.get("content")) and "ARGUMENT" in str(message["content"])
    calls = message.get("tool_calls") or []
    return any(str(c.get("function", {}).get("arguments", "")).startswith(("[", '{"id": 9', '{"id": "u_\x00'))
               for c in calls)  # fmt: skip
