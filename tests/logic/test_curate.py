"""The playbook curated by the model: checks, repairs, fallback to the rules, versions, and
the next round's prompt showing the curated lessons."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_evolve import GATES, PARITY_FILE, SUM_FILE, _block, agent

from veritask.logic import EvolveSettings, Playbook, evolve, get_family
from veritask.logic._curate import (
    Curation,
    LessonOp,
    check_curation,
    curate_with_model,
    round_evidence,
)
from veritask.logic._evolve_round import Run, curate_round
from veritask.logic._records import RoundRecord
from veritask.model import CostLedger, GenerateConfig, ModelOutput, ScriptedProvider

CURATOR_SYSTEM = "You maintain the experience playbook"
ZETA = "Spread answers over a wide range so no value dominates any difficulty."


def _ops(*ops: dict[str, Any]) -> str:
    return json.dumps({"operations": list(ops)})


def _book() -> Playbook:
    book = Playbook(limit=5)
    book.add("a", "lesson a")
    book.add("b", "lesson b")
    book.add("c", "lesson c")
    return book


EVIDENCE = {"E1": "round 1 (propose): rejected", "E2": "problem: gate1_static: degenerate"}


def _curation(*ops: dict[str, Any]) -> Curation:
    return Curation(operations=[LessonOp(**op) for op in ops])


@pytest.mark.parametrize(
    ("op", "reason"),
    [
        ({"action": "drop", "keys": ["zz"], "evidence": ["E1"]}, "no lesson 'zz'"),
        ({"action": "add", "text": "x", "evidence": ["E9"]}, "evidence 'E9' is not one of"),
        ({"action": "add", "key": "a", "text": "x", "evidence": ["E1"]}, "key 'a' is taken"),
        ({"action": "rewrite", "keys": ["a"], "evidence": ["E1"]}, "'text' must be the lesson"),
        ({"action": "merge", "keys": ["a"], "text": "x", "evidence": ["E1"]}, "needs 2-40"),
        ({"action": "add", "key": "Bad Key", "text": "x", "evidence": ["E1"]}, "must match"),
        ({"action": "add", "text": "x" * 301, "evidence": ["E1"]}, "over 300 characters"),
    ],
)
def test_a_curation_that_cannot_apply_is_rejected_with_its_reason(
    op: dict[str, Any], reason: str
) -> None:
    with pytest.raises(ValueError, match=reason):
        check_curation(_curation(op), _book(), EVIDENCE)


def test_a_lesson_touched_twice_or_a_playbook_over_its_limit_is_rejected() -> None:
    twice = _curation(
        {"action": "drop", "keys": ["a"], "evidence": ["E1"]},
        {"action": "rewrite", "keys": ["a"], "text": "y", "evidence": ["E1"]},
    )
    with pytest.raises(ValueError, match="used by two operations"):
        check_curation(twice, _book(), EVIDENCE)
    adds = [
        {"action": "add", "key": f"n{i}", "text": f"t{i}", "evidence": ["E2"]} for i in range(3)
    ]
    with pytest.raises(ValueError, match="would hold 6 lessons, over its limit of 5"):
        check_curation(_curation(*adds), _book(), EVIDENCE)
    LessonOp(action="add", text="x", evidence=["E1"])  # a well-formed one is accepted
    with pytest.raises(ValueError):
        LessonOp(action="add", text="x", evidence=[])


def _run_curator(book: Playbook, answers: list[str]) -> tuple[str | None, ScriptedProvider]:
    provider = ScriptedProvider(answers)
    ledger = CostLedger()
    rejected = asyncio.run(
        curate_with_model(book, provider, EVIDENCE, "seed.round1", ledger=ledger)
    )
    assert ledger.modules["curate"].calls == len(provider.requests)
    return rejected, provider


def test_the_model_adds_merges_rewrites_and_drops_with_evidence_after_a_repair() -> None:
    book = _book()
    answer = _ops(
        {"action": "add", "key": "zeta", "text": ZETA, "evidence": ["E2"]},
        {"action": "merge", "keys": ["a", "b"], "key": "ab", "text": "a and b", "evidence": ["E1"]},
        {"action": "rewrite", "keys": ["c"], "text": "lesson c, general", "evidence": ["E1"]},
    )
    rejected, provider = _run_curator(book, ["Here is my curation: none.", answer])
    assert rejected is None and len(provider.requests) == 2
    assert "Reason: no JSON value found" in provider.requests[1]["messages"][-1]["content"]
    assert [e.key for e in book.entries] == ["c", "zeta", "ab"]
    merged = book.get("ab")
    assert merged is not None and merged.score == 2 and merged.curator == "model:scripted"
    zeta = book.get("zeta")
    assert zeta is not None and zeta.evidence == ["seed.round1: problem: gate1_static: degenerate"]
    assert book.version == 1 and book.history[-1]["curator"] == "model:scripted"
    assert [op["action"] for op in book.history[-1]["operations"]] == ["add", "merge", "rewrite"]
    data = book.to_json()
    assert data["curator"] == "model:scripted" and data["version"] == 1
    assert Playbook.from_json(json.loads(json.dumps(data))) == book
    # the same answers give the same playbook, byte for byte
    again = _book()
    _run_curator(again, ["Here is my curation: none.", answer])
    assert json.dumps(again.to_json()) == json.dumps(data)


def test_drop_then_unusable_answers_leave_the_playbook_untouched() -> None:
    book = _book()
    drop = _ops({"action": "drop", "keys": ["b"], "evidence": ["E1"]})
    assert _run_curator(book, [drop])[0] is None
    assert [e.key for e in book.entries] == ["a", "c"]
    before = book.to_json()
    bad = _ops({"action": "drop", "keys": ["nope"], "evidence": ["E1"]})
    rejected, provider = _run_curator(book, [bad, bad, bad])
    assert rejected is not None and "no lesson 'nope'" in rejected
    assert len(provider.requests) == 3 and book.to_json() == before


def _run(provider: ScriptedProvider, tmp_path: Path, curator: str = "model") -> Run:
    settings = EvolveSettings(out_dir=tmp_path, curator=curator)  # type: ignore[arg-type]
    return Run(
        seed=get_family("arithmetic_chain"),
        provider=provider,
        settings=settings,
        playbook=Playbook.default(),
        taken=frozenset(),
        ledger=CostLedger(),
    )


def test_an_unusable_model_curation_falls_back_to_the_rules_and_says_so(tmp_path: Path) -> None:
    run = _run(ScriptedProvider(["no json"] * 3), tmp_path)
    record = RoundRecord(1, "propose", "error", None, ["consensus: d=1 #0: disagree"])
    asyncio.run(curate_round(run, record, None, ("agent lesson",)))
    last = run.playbook.history[-1]
    assert last["curator"] == "rules" and last["note"].startswith("model curation rejected")
    assert [op["key"] for op in last["operations"]] == ["consensus"]  # not credited: rejected
    assert run.spent.modules["curate"].calls == 3


def test_the_rules_curator_records_its_version_without_a_model(tmp_path: Path) -> None:
    run = _run(ScriptedProvider([]), tmp_path, curator="rules")
    record = RoundRecord(2, "refine", "accepted", "fam", [])
    asyncio.run(curate_round(run, record, None, ("Keep answers exact.",)))
    assert run.playbook.history[-1]["curator"] == "rules"
    assert run.playbook.history[-1]["after"] == "arithmetic_chain.round2"
    assert any(e.key.startswith("agent:") for e in run.playbook.entries)
    assert not run.spent.modules


def test_settings_refuse_an_unknown_curator_or_a_negative_budget(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="curator must be 'rules' or 'model'"):
        EvolveSettings(out_dir=tmp_path, curator="oracle")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must be 0 or more"):
        replace(GATES, blind_code_calls=-1)


def test_evidence_names_the_round_its_problems_and_candidates() -> None:
    record = RoundRecord(3, "refine", "error", "fam", ["agent: no ```python block"])
    evidence = round_evidence(record, None, [("rng", "Draw from rng.")])
    assert evidence == {
        "E1": "round 3 (refine): error, family fam",
        "E2": "problem: agent: no ```python block",
        "E3": "candidate lesson [rng]: Draw from rng.",
    }


class _Curating:
    """The scripted evolve agent, with the curator's answers scripted apart."""

    name = "scripted"
    model = "scripted"

    def __init__(self, answers: list[str]) -> None:
        self.inner = agent([_block(PARITY_FILE)], refinement=_block(SUM_FILE))
        self.curator = ScriptedProvider(answers)

    async def generate(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        config: GenerateConfig | None = None,
        sample_index: int = 0,
    ) -> ModelOutput:
        target = self.curator if messages[0]["content"].startswith(CURATOR_SYSTEM) else self.inner
        return await target.generate(messages, tools, config, sample_index)


def test_evolve_with_the_model_curator_shows_the_curated_playbook_next_round(
    tmp_path: Path,
) -> None:
    first = _ops(
        {"action": "add", "key": "zeta", "text": ZETA, "evidence": ["E1", "E2"]},
        {"action": "drop", "keys": ["rng"], "evidence": ["E1"]},
    )
    gates = replace(GATES, review_code_calls=2)  # offered; this reviewer reads only
    settings = EvolveSettings(out_dir=tmp_path, gates=gates, curator="model", t_max=1)
    evolve("arithmetic_chain", _Curating([first]), settings)  # round 1, then the run stops
    # more rounds continue the run: round 1 is restored with its curated playbook, and the
    # curator is asked only about round 2
    provider = _Curating([_ops()])
    ledger = CostLedger()
    settings = replace(settings, t_max=2)
    result = evolve("arithmetic_chain", provider, settings, ledger=ledger)
    assert [r.outcome for r in result.rounds] == ["rejected", "accepted"]
    assert ledger.modules["curate"].calls == 2  # the restored round's cost is counted too
    assert len(provider.curator.requests) == 1
    shown = provider.curator.requests[0]["messages"][1]["content"]
    assert "E1: round 2 (refine): accepted, family evolved_sum" in shown
    assert "gate blind_review: passed" in shown and "solvability d=7: 1/1 probes" in shown
    assert len(provider.inner.requests[0]["messages"]) == 4  # round 2 answers the refine prompt
    prompt = provider.inner.requests[0]["messages"][-1]["content"]
    assert prompt.startswith("Round 1: the candidate failed.")
    assert ZETA in prompt and "Draw every random choice" not in prompt
    book = json.loads((tmp_path / "playbook.json").read_text())
    assert book["version"] == 2 and book["curator"] == "model:scripted"
    assert [h["after"] for h in book["history"]] == [
        "arithmetic_chain.round1",
        "arithmetic_chain.round2",
    ]
    zeta = next(e for e in book["entries"] if e["key"] == "zeta")
    assert zeta["curator"] == "model:scripted"
    assert (
        zeta["evidence"][0]
        == "arithmetic_chain.round1: round 1 (propose): rejected, family evolved_sum"
    )
    manifest = json.loads(
        (tmp_path / "runs" / "arithmetic_chain" / "run-manifest.json").read_text()
    )
    assert manifest["config"]["curator"] == "model"
    assert manifest["config"]["gates"]["review_code_calls"] == 2
    review = result.rounds[1].gates["gates"]["review"]
    assert (
        review["passed"] and review["tool_calls"] == []
    )  # a rerun with the rules curator is refused
