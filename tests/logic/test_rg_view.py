"""The reasoning-gym-compatible view: the dataset protocol, metadata, strict scoring."""

from __future__ import annotations

import random
from typing import Any

import pytest

from veritask.logic import Family, builtin_families, make_instance
from veritask.logic.rg import create_dataset, list_datasets, score_entry

METADATA = {
    "source_dataset",
    "source_index",
    "family",
    "version",
    "category",
    "split",
    "seed",
    "index",
    "difficulty",
    "inputs",
}


def test_dataset_protocol() -> None:
    ds = create_dataset("arithmetic_chain", size=20, seed=1)
    assert len(ds) == ds.size == ds.config.size == 20 and ds.seed == ds.config.seed == 1
    entries = list(ds)
    assert entries == [ds[i] for i in range(20)]
    assert ds[-1] == entries[-1]
    entry = entries[0]
    assert set(entry) == {"question", "answer", "metadata"}
    assert isinstance(entry["question"], str) and isinstance(entry["answer"], str)
    assert set(entry["metadata"]) == METADATA
    assert entry["metadata"]["category"] == "symbolic"
    assert len({e["question"] for e in entries}) == 20
    with pytest.raises(IndexError):
        ds[20]


def test_metadata_rebuilds_the_instance() -> None:
    ds = create_dataset("grid_path_count", size=10, seed=3, difficulty=6)
    family = builtin_families()["grid_path_count"]
    for entry in ds:
        meta = entry["metadata"]
        assert meta["difficulty"] == 6
        inst = make_instance(
            family, meta["difficulty"], split=meta["split"], seed=meta["seed"], index=meta["index"]
        )
        assert (inst.question, inst.answer, dict(inst.inputs)) == (
            entry["question"],
            entry["answer"],
            meta["inputs"],
        )


def test_entries_are_copies() -> None:
    ds = create_dataset("weekday_shift", size=3, seed=0)
    ds[0]["metadata"]["inputs"]["tampered"] = True
    assert "tampered" not in ds[0]["metadata"]["inputs"]


def test_same_arguments_same_entries_and_splits_are_disjoint() -> None:
    a = create_dataset("custom_sort", size=50, seed=7)
    assert list(a) == list(create_dataset("custom_sort", size=50, seed=7))
    assert list(a) != list(create_dataset("custom_sort", size=50, seed=8))
    test = create_dataset("custom_sort", size=50, seed=7, split="test")
    assert not {e["question"] for e in a} & {e["question"] for e in test}


def test_mix_is_honoured() -> None:
    ds = create_dataset("weekday_shift", size=10, seed=0, mix="1:0.5,10:0.5")
    assert sorted(e["metadata"]["difficulty"] for e in ds) == [1] * 5 + [10] * 5
    with pytest.raises(ValueError, match="not both"):
        create_dataset("weekday_shift", size=10, difficulty=3, mix="easy=1")
    with pytest.raises(KeyError):
        create_dataset("no_such_family")


def test_scoring_is_strict() -> None:
    ds = create_dataset("arithmetic_chain", size=5, seed=2)
    for entry in ds:
        answer = entry["answer"]
        assert ds.score_answer(answer, entry) == 1.0
        assert ds.score_answer(f"  {answer}. ", entry) == 1.0
        assert ds.score_answer(f"{answer} because I added", entry) == 0.0
        assert ds.score_answer(f"The answer is {answer}", entry) == 0.0
        assert ds.score_answer(str(int(answer) + 1), entry) == 0.0
        assert ds.score_answer(None, entry) == 0.0
        assert ds.score_answer("", entry) == 0.0
        assert score_entry(answer, entry) == 1.0  # the family from metadata


def _pair_generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    total = rng.randint(10, 10**6)
    return {"total": total}, [str(total)]


PAIRS = Family(
    id="pair_sum",
    version="1",
    category="symbolic",
    title="Two positive integers with a given sum",
    template="Name two positive integers that add up to [Input Slot 1].",
    generate=_pair_generate,
    validators=(lambda i: [1, i["total"] - 1], lambda i: [1, i["total"] - 1]),
    answer_format="Answer as 'a, b'.",
    checker=lambda inputs, text: _pair_ok(inputs["total"], text),
)


def _pair_ok(total: int, text: str) -> bool:
    parts = text.split(", ")
    return (
        len(parts) == 2
        and all(p.isdigit() and int(p) > 0 for p in parts)
        and sum(map(int, parts)) == total
    )


def test_the_family_checker_decides_when_there_is_one() -> None:
    ds = create_dataset(PAIRS, size=5, seed=0, difficulty=1)
    entry = ds[0]
    total = entry["metadata"]["inputs"]["total"]
    assert ds.score_answer(entry["answer"], entry) == 1.0
    assert ds.score_answer(f"2, {total - 2}", entry) == 1.0  # another right answer
    assert ds.score_answer(f"2,{total - 2}", entry) == 1.0  # comma spacing is normalized
    assert ds.score_answer(f"2, {total - 2} done", entry) == 0.0
    assert ds.score_answer(f"2, {total - 1}", entry) == 0.0


def test_list_datasets() -> None:
    assert list_datasets() == sorted(builtin_families())
