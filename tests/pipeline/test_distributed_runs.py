"""Runs handed to another executor (what ``--executor ray`` does) write the local bytes.

These use a local process pool as the other executor, so they run without Ray; the same
code paths run on Ray actors in ``test_ray_executor.py`` (``make test-ray``).
"""

from __future__ import annotations

import json
from pathlib import Path

from veritask.logic import ProduceSettings, all_families, produce_file
from veritask.logic._produce_run import FamilyStage
from veritask.pipeline import ProcessPoolExecutor, remote_executor, use_executor

FAMILIES = ["arithmetic_chain", "base_conversion", "build_order_alpha"]


def _families() -> list:  # type: ignore[type-arg]
    found = all_families(())
    return [found[f] for f in FAMILIES]


def test_drafted_families_give_the_in_order_bytes(tmp_path: Path) -> None:
    settings = ProduceSettings(12, difficulty=2, seed=3)
    produce_file(tmp_path / "local.jsonl", _families(), settings)
    with use_executor(ProcessPoolExecutor(2)):
        produce_file(tmp_path / "drafted.jsonl", _families(), settings)
    local = (tmp_path / "local.jsonl").read_bytes()
    assert local and (tmp_path / "drafted.jsonl").read_bytes() == local


def test_a_drafted_family_resumes_from_the_parts_written(tmp_path: Path) -> None:
    settings = ProduceSettings(8, difficulty=1, seed=5)
    produce_file(tmp_path / "local.jsonl", _families(), settings)
    out = tmp_path / "drafted.jsonl"
    stage = FamilyStage(_families(), settings, out.with_name(out.name + ".parts"))
    stage.run(stage.units()[0])  # as if a run was killed after its first family
    with use_executor(ProcessPoolExecutor(2)):
        produce_file(out, _families(), settings)
    assert out.read_bytes() == (tmp_path / "local.jsonl").read_bytes()


def test_a_draft_that_repeats_an_earlier_question_is_produced_again(tmp_path: Path) -> None:
    """The draft of family 1 is made to repeat family 0's questions: accepting it would keep
    duplicates, so the family is produced in order instead."""
    families = _families()[:2]
    settings = ProduceSettings(6, difficulty=1, seed=1)
    in_order = FamilyStage(families, settings, tmp_path / "a")
    expected = [in_order.run(u) for u in in_order.units()]
    stage = FamilyStage(families, settings, tmp_path / "b")
    first, second = stage.units()
    stage.accept(first, expected[0])
    clashing = {**expected[1], "records": expected[0]["records"]}
    assert stage.accept(second, clashing) == expected[1]
    assert json.loads(stage.part(1).read_text(encoding="utf-8")) == expected[1]
    failed = FamilyStage(families, settings, tmp_path / "c")  # a draft that failed: None
    assert [failed.accept(u, None) for u in (first, second)] == expected


def test_only_executors_with_map_async_take_async_stages() -> None:
    assert remote_executor() is None
    with use_executor(ProcessPoolExecutor(2)):
        assert remote_executor() is None
