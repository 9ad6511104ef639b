"""Gate 1's LLM review and Gate 2 (consensus, blind review) through a scripted model, and the
``gate`` command."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from veritask._cli import logic_gate_cmds
from veritask.logic import (
    Family,
    GateSettings,
    blind_review,
    builtin_families,
    check_consensus,
    review_family,
    run_gates,
)
from veritask.logic._review import extract_boxed
from veritask.model import CostLedger, ScriptedProvider, register_provider

Messages = list[dict[str, Any]]

PASS_VERDICT = {
    "well_posed": {"passed": True, "reason": "complete"},
    "unambiguous_answer_format": {"passed": True, "reason": "integer only"},
    "answer_derivable": {"passed": True, "reason": "follows from the steps"},
    "difficulty_scaling": {"passed": True, "reason": "more steps"},
    "no_leaked_answer": {"passed": True, "reason": "not stated"},
    "verdict": "pass",
    "feedback": "fine",
}


def chain() -> Family:
    return builtin_families()["arithmetic_chain"]


def solve_chain(question: str) -> int:
    """What a careful solver computes from an arithmetic_chain question."""
    match = re.search(
        r"Start with (-?\d+)\. Apply these operations in order: (.*?)\. What", question
    )
    assert match, question
    value = int(match.group(1))
    for step in match.group(2).split(", then "):
        n = int(step.split()[-1])
        value = (
            value + n
            if step.startswith("add")
            else value - n
            if step.startswith("sub")
            else value * n
        )
    return value


def model(
    *, offset: int = 0, verdict: dict[str, Any] | None = None, garbage: int = 0
) -> ScriptedProvider:
    """A reviewer (``verdict``, after ``garbage`` malformed replies) and a blind solver that
    answers ``offset`` away from the right answer."""
    state = {"garbage": garbage}

    def script(messages: Messages, tools: Any) -> str:
        if messages[0]["role"] == "system" and "You review task families" in messages[0]["content"]:
            if state["garbage"] > 0:
                state["garbage"] -= 1
                return "Looks good to me!"
            return "```json\n" + json.dumps(verdict or PASS_VERDICT) + "\n```"
        question = messages[0]["content"]
        return f"Working step by step... \\boxed{{{solve_chain(question) + offset}}}"

    return ScriptedProvider(script)


def test_extract_boxed_takes_the_last_balanced_box() -> None:
    assert extract_boxed("first \\boxed{1} then \\boxed{{a, b}}") == "{a, b}"
    assert extract_boxed("no box") is None and extract_boxed("\\boxed{open") is None


def test_blind_review_passes_with_a_correct_solver() -> None:
    ledger = CostLedger()
    report = asyncio.run(blind_review(chain(), model(), ledger=ledger))
    assert report.passed and report.required == 3
    assert all(p["confirmed"] and len(p["attempts"]) == 1 for p in report.probes)
    assert report.by_difficulty[5] == {
        "probes": 2,
        "confirmed": 2,
        "attempts": 2,
        "correct": 10,
        "asked": 10,
    }
    assert ledger.modules["blind_review"].calls == 25
    assert set(report.to_json()["by_difficulty"]) == {"1", "3", "5", "7"}


def test_blind_review_fails_with_a_wrong_solver_after_retries() -> None:
    report = asyncio.run(blind_review(chain(), model(offset=1), attempts=2))
    assert not report.passed
    assert all(len(p["attempts"]) == 2 for p in report.probes)  # a fresh instance each retry
    attempt = report.probes[0]["attempts"][0]
    assert attempt["correct"] == 0 and attempt["asked"] == 5 and "question" in attempt
    assert int(attempt["answers"][0]) == int(attempt["expected"]) + 1
    assert "not confirmed after 2 instance(s)" in report.problems[0]


def test_blind_review_confirms_at_tau_and_retries_unlucky_instances() -> None:
    calls = {"n": 0}

    def script(messages: Messages, tools: Any) -> str:
        calls["n"] += 1
        question = messages[0]["content"]
        attempt = int(re.search(r"attempt (\d+)", question).group(1))  # type: ignore[union-attr]
        first_instance = calls["n"] <= 5
        right = attempt <= 3 and not first_instance  # 3 of 5, except on the very first instance
        return f"\\boxed{{{solve_chain(question) + (0 if right else 7)}}}"

    report = asyncio.run(blind_review(chain(), ScriptedProvider(script), tau=3))
    first = report.probes[0]
    assert [a["correct"] for a in first["attempts"]] == [0, 3] and first["confirmed"]
    assert report.passed
    strict = asyncio.run(blind_review(chain(), ScriptedProvider(script), tau=4, attempts=2))
    assert not strict.passed


def test_disagreeing_validators_block_the_family_even_when_blind_review_passes() -> None:
    base = chain()

    def solve_buggy(inputs: dict[str, Any]) -> int:
        right = int(base.validators[0](inputs))
        return right + 1 if inputs["start"] % 5 == 0 else right

    family = replace(base, validators=(*base.validators, solve_buggy))
    consensus = check_consensus(family, per_level=10)
    assert not consensus.passed and consensus.disagreeing > 0
    first = consensus.disagreements[0]
    assert first["minority"] == ["solve_buggy"] and first["majority"] is not None
    settings = GateSettings(per_level=10, consensus_per_level=10, short_circuit=False)
    record = run_gates(family, model(), settings)
    assert record.blind is not None and record.blind.passed
    assert record.review is not None and record.review.passed
    assert record.consensus is not None and not record.consensus.passed
    assert not record.passed
    assert any(p.startswith("consensus: d=") and "solve_buggy" in p for p in record.problems)


def test_a_failed_gate_skips_the_model_gates_by_default() -> None:
    base = chain()
    family = replace(base, validators=(base.validators[0], lambda inputs: 0))
    provider = model()
    record = run_gates(family, provider, GateSettings(per_level=5, consensus_per_level=2))
    assert not record.passed and record.review is None and record.blind is None
    assert record.skipped["review"] == "gate1_static and consensus failed"
    assert provider.requests == []


def test_quality_review_passes_fails_and_repairs_malformed_output() -> None:
    ledger = CostLedger()
    passed = asyncio.run(review_family(chain(), model(garbage=1), ledger=ledger))
    assert passed.passed and passed.samples[0] == {"difficulty": 1, "index": 0}
    assert (ledger.modules["review"].calls, ledger.modules["review"].successes) == (2, 1)
    verdict = {**PASS_VERDICT, "verdict": "fail", "feedback": "say the order"}
    verdict["unambiguous_answer_format"] = {"passed": False, "reason": "order unclear"}
    failed = asyncio.run(review_family(chain(), model(verdict=verdict)))
    assert not failed.passed and failed.problems == ["unambiguous_answer_format: order unclear"]
    rejected = asyncio.run(review_family(chain(), model(garbage=10), max_repairs=1))
    assert not rejected.passed and rejected.error is not None
    assert "rejected after 2 attempt(s)" in rejected.error and "no JSON value" in rejected.error


def test_review_prompt_shows_template_samples_and_source() -> None:
    provider = model()
    asyncio.run(review_family(chain(), provider))
    prompt = provider.requests[0]["messages"][1]["content"]
    assert chain().template in prompt and "Official answer:" in prompt
    assert "def solve_fold" in prompt and '"no_leaked_answer"' in prompt


def test_full_gates_pass_and_the_record_is_deterministic(tmp_path: Path) -> None:
    records = []
    for name in ("a.json", "b.json"):
        record = run_gates(
            chain(),
            model(),
            GateSettings(per_level=10, consensus_per_level=5),
            record_path=tmp_path / name,
        )
        assert record.passed and record.mode == "full", record.problems
        records.append((tmp_path / name).read_bytes())
    assert records[0] == records[1]
    data = json.loads(records[0])
    assert set(data) == {
        "family",
        "version",
        "mode",
        "passed",
        "problems",
        "gates",
        "skipped",
        "settings",
        "costs",
    }
    assert set(data["gates"]) == {"gate1_static", "consensus", "review", "blind_review"}
    assert set(data["costs"]) == {"review", "blind_review", "total"}
    assert data["settings"]["difficulties"] == [1, 3, 5, 5, 7]


# --- the gate command --------------------------------------------------------------------------


def _cli() -> click.Group:
    group = click.Group("logic")
    logic_gate_cmds.register(group)
    return group


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(_cli(), list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_gate_command_static_and_full(tmp_path: Path) -> None:
    code, out = _invoke("gate", "arithmetic_chain", "--per-level", "10", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["mode"] == "static" and data["passed"] and data["gates"]["review"] is None
    register_provider("reviewtest", lambda argument, **options: model())
    record = tmp_path / "gates.json"
    code, out = _invoke(
        "gate", "arithmetic_chain", "--model", "reviewtest", "--per-level", "10",
        "--consensus-per-level", "5", "--record", str(record),
    )  # fmt: skip
    assert code == 0, out
    assert "(full gates): PASSED" in out and "blind_review  passed" in out
    assert json.loads(record.read_text())["passed"] is True


def test_gate_command_fails_with_status_1_and_reports_problems() -> None:
    register_provider("wrongsolver", lambda argument, **options: model(offset=3))
    code, out = _invoke(
        "gate", "arithmetic_chain", "--model", "wrongsolver", "--per-level", "5",
        "--consensus-per-level", "2", "--attempts", "1", "--json",
    )  # fmt: skip
    data = json.loads(out)
    assert code == 1 and not data["passed"]
    assert data["problems"][0].startswith("blind_review: probe 0 (d=1) not confirmed")
    code, out = _invoke("gate", "no_such_family")
    assert code != 0 and "unknown family 'no_such_family'" in out


def test_gate_all_gates_every_family_and_records_each(tmp_path: Path) -> None:
    from veritask.logic import builtin_families

    records = tmp_path / "records"
    code, out = _invoke(
        "gate", "all", "--per-level", "100", "--consensus-per-level", "2",
        "--record", str(records), "--json",
    )  # fmt: skip
    data = json.loads(out)
    assert code == 0 and data["passed"] is True
    assert [f["family"] for f in data["families"]] == sorted(builtin_families())
    assert sorted(p.stem for p in records.glob("*.json")) == sorted(builtin_families())


@pytest.fixture(autouse=True)
def _no_family_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VERITASK_FAMILY_PATH", raising=False)
