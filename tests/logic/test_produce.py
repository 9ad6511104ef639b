"""Dataset production: difficulty mixes, dedup, determinism, split separation, reports."""

from __future__ import annotations

import json
import random
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from veritask.logic import (
    DEFAULT_MIX_SPEC,
    Family,
    Mix,
    MixError,
    ProduceError,
    answer_stats,
    builtin_families,
    make_instance,
    pass_at_k_by_family,
    produce,
    question_split,
    read_records,
    report,
    write_jsonl,
)

SOME = ("arithmetic_chain", "grid_path_count", "weekday_shift")


def _families(*ids: str) -> list[Family]:
    return [builtin_families()[i] for i in ids]


def _bucket(difficulty: int) -> str:
    return "easy" if difficulty <= 3 else "medium" if difficulty <= 7 else "hard"


# --- tiny families that force the corner cases -----------------------------------------------


def _tiny_generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    x = rng.randint(1, 4)  # only four distinct questions
    return {"x": x}, [str(x)]


TINY = Family(
    id="tiny_increment",
    version="1",
    category="symbolic",
    title="Tiny increment",
    template="What is [Input Slot 1] plus one?",
    generate=_tiny_generate,
    validators=(lambda i: i["x"] + 1, lambda i: sum((i["x"], 1))),
    answer_format="Answer with the integer only.",
)


def _big_generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    n = rng.randint(1, 10**6)
    return {"n": n}, [str(n)]


DEGENERATE = Family(
    id="mostly_yes",
    version="1",
    category="logical",
    title="Mostly yes",
    template="Is [Input Slot 1] greater than 10?",
    generate=_big_generate,
    validators=(lambda i: i["n"] > 10, lambda i: not i["n"] <= 10),
    answer_format="Answer yes or no.",
)


# --- mixes -----------------------------------------------------------------------------------


def test_default_mix_and_both_spellings_are_equal() -> None:
    assert Mix.default() == Mix.parse(DEFAULT_MIX_SPEC)
    assert Mix.parse("1-3:0.3,4-7:0.5,8-10:0.2").difficulty_counts(
        100
    ) == Mix.default().difficulty_counts(100)
    assert Mix.parse(Mix.default().spec) == Mix.default()
    thirds = Mix.parse("1-3:1/3, 4-7 = 1/3, 8-10:1/3")
    assert [b.ratio for b in thirds.buckets] == [Fraction(1, 3)] * 3
    assert Mix.parse(thirds.spec) == thirds


@pytest.mark.parametrize(
    ("n", "expected"),
    [(100, [30, 50, 20]), (10, [3, 5, 2]), (3, [1, 1, 1]), (1, [0, 1, 0]), (0, [0, 0, 0])],
)
def test_largest_remainder_allocation(n: int, expected: list[int]) -> None:
    counts = Mix.default().difficulty_counts(n)
    per_bucket = [
        sum(c for d, c in counts.items() if _bucket(d) == b) for b in ("easy", "medium", "hard")
    ]
    assert per_bucket == expected
    assert sum(counts.values()) == n


def test_counts_inside_a_bucket_are_even() -> None:
    counts = Mix.default().difficulty_counts(100)
    assert counts == {1: 10, 2: 10, 3: 10, 4: 13, 5: 13, 6: 12, 7: 12, 8: 7, 9: 7, 10: 6}
    assert Mix.parse("1-3:1/3,4-7:1/3,8-10:1/3").difficulty_counts(7) == {
        1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 0, 7: 0, 8: 1, 9: 1, 10: 0
    }  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "empty mix"),
        ("easy=0.3,,hard=0.7", "empty item"),
        ("easy", "expected BUCKET=RATIO"),
        ("easy=lots,medium=0.5,hard=0.2", "'lots' is not a number"),
        ("huge=1", "neither a name"),
        ("0-3:1", "not within 1-10"),
        ("7-4:1", "not within 1-10"),
        ("easy=0.3,medium=0.5,hard=0.3", "sum to 1.1, not 1"),
        ("easy=0.5,1-4:0.5", "both contain difficulty 1"),
        ("easy=-0.1,medium=0.9,hard=0.2", "negative"),
    ],
)
def test_bad_mixes_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(MixError, match=message):
        Mix.parse(spec)


def test_schedule_is_exact_and_seeded() -> None:
    mix = Mix.default()
    a, b = mix.schedule(100, seed=1), mix.schedule(100, seed=2)
    assert Counter(a) == Counter(b) == Counter(mix.difficulty_counts(100))
    assert a == mix.schedule(100, seed=1) and a != b


# --- produce ---------------------------------------------------------------------------------


def test_mix_ratios_are_honoured_exactly_per_family() -> None:
    production = produce(_families(*SOME), 100, seed=4)
    for fid in SOME:
        buckets = Counter(_bucket(i.difficulty) for i in production if i.family == fid)
        assert buckets == {"easy": 30, "medium": 50, "hard": 20}
    summary = production.to_json()
    assert summary["instances"] == 300
    assert summary["families"]["grid_path_count"]["difficulties"]["10"] == 6


def test_fixed_difficulty_and_argument_errors() -> None:
    production = produce(_families("weekday_shift"), 12, difficulty=7, seed=0)
    assert {i.difficulty for i in production} == {7} and len(production) == 12
    with pytest.raises(ValueError, match="not both"):
        produce(_families("weekday_shift"), 5, difficulty=3, mix=Mix.default())
    with pytest.raises(ValueError, match="1-10"):
        produce(_families("weekday_shift"), 5, difficulty=11)
    with pytest.raises(MixError):
        produce(_families("weekday_shift"), 5, mix="easy=1,hard=1")


def test_same_arguments_write_the_same_bytes(tmp_path: Path) -> None:
    def write(name: str, seed: int, mix: str | None = None) -> bytes:
        path = tmp_path / name
        write_jsonl(path, produce(_families(*SOME), 30, seed=seed, mix=mix).records())
        return path.read_bytes()

    first = write("a.jsonl", 5)
    assert write("b.jsonl", 5) == first
    assert write("c.jsonl", 5, DEFAULT_MIX_SPEC) == first
    assert write("d.jsonl", 6) != first
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_records_carry_the_category_and_rebuild() -> None:
    production = produce(_families("arithmetic_chain"), 5, seed=2)
    record = next(production.records())
    assert record["category"] == "symbolic"
    family = builtin_families()["arithmetic_chain"]
    rebuilt = make_instance(
        family,
        record["difficulty"],
        split=record["split"],
        seed=record["seed"],
        index=record["index"],
    )
    assert rebuilt.to_json() == {k: v for k, v in record.items() if k != "category"}


def test_train_and_test_from_one_seed_share_no_question() -> None:
    families = list(builtin_families().values())
    train = {i.question for i in produce(families, 20, seed=9, split="train")}
    test = {i.question for i in produce(families, 20, seed=9, split="test")}
    assert len(train) == len(test) == 20 * len(families)
    assert not train & test


def test_duplicates_are_skipped_and_counted() -> None:
    # a split name outside train/validation/test is not partitioned: only duplicates are skipped
    # (seed 2 repeats a question among its first four indices)
    production = produce([TINY], 4, difficulty=1, seed=2, split="scratch")
    questions = [i.question for i in production]
    assert len(questions) == len(set(questions)) == 4
    skipped = production.skipped["tiny_increment"]
    assert skipped > 0
    indexes = [i.index for i in production]
    assert indexes == sorted(indexes) and indexes[-1] == 4 + skipped - 1
    assert production.to_json()["duplicates_skipped"] == skipped
    assert production.to_json()["other_split_skipped"] == 0
    with pytest.raises(ProduceError, match="tiny_increment: 51 duplicate or other-split"):
        produce([TINY], 5, difficulty=1, seed=0, split="scratch", max_skips=50)


def test_splits_partition_even_a_tiny_question_space() -> None:
    everything = {i.question for i in produce([TINY], 4, difficulty=1, split="scratch")}
    share = Counter(question_split(q) for q in everything)
    made = {
        split: {i.question for i in produce([TINY], share[split], difficulty=1, split=split)}
        for split in ("train", "validation", "test")
    }
    assert set().union(*made.values()) == everything
    assert sum(len(q) for q in made.values()) == 4  # pairwise disjoint
    for split, questions in made.items():
        assert all(question_split(q) == split for q in questions)
    with pytest.raises(ProduceError, match="other-split"):
        produce([TINY], share["train"] + 1, difficulty=1, split="train", max_skips=50)


# --- writing and reports ---------------------------------------------------------------------


def test_write_is_atomic_on_failure(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text("old\n")
    with pytest.raises(TypeError):
        write_jsonl(path, [{"ok": 1}, {"bad": object()}])
    assert path.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_report_counts_and_validates(tmp_path: Path) -> None:
    path = tmp_path / "ds.jsonl"
    write_jsonl(path, produce(_families(*SOME), 20, seed=1).records())
    data = report(path)
    assert set(data) == {
        "path",
        "instances",
        "difficulties",
        "splits",
        "families",
        "duplicates",
        "degenerate",
        "validation",
    }
    assert data["instances"] == 60 and data["splits"] == {"train": 60}
    assert sum(data["difficulties"].values()) == 60
    fam = data["families"]["weekday_shift"]
    assert set(fam) == {
        "category",
        "versions",
        "instances",
        "difficulties",
        "answers",
        "answers_by_difficulty",
    }
    assert fam["category"] == "temporal" and fam["instances"] == 20
    assert set(fam["answers"]) == {"instances", "distinct", "top_answer", "top_share", "entropy"}
    assert data["duplicates"] == {"questions": 0, "lines": []}
    assert data["validation"]["checked"] == 60
    assert data["validation"]["mismatches"] == 0


def test_report_counts_tampered_lines(tmp_path: Path) -> None:
    path = tmp_path / "ds.jsonl"
    write_jsonl(path, produce(_families("arithmetic_chain"), 10, seed=3).records())
    lines = path.read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    rows[2]["answer"] = str(int(rows[2]["answer"]) + 1)
    rows[5]["question"] = rows[5]["question"].replace("Start with", "Begin with")
    rows[7]["family"] = "not_a_family"
    rows.append(rows[0])  # a duplicate question, line 11
    write_jsonl(path, rows)
    data = report(path)
    validation = data["validation"]
    assert validation["mismatches"] == 2  # the repeated line still re-generates
    assert [(m["line"], m["fields"]) for m in validation["mismatched"]][:2] == [
        (3, ["answer"]),
        (6, ["question"]),
    ]
    assert validation["unverified"] == 1 and validation["checked"] == 10
    assert data["duplicates"] == {"questions": 1, "lines": [11]}


def test_report_flags_a_degenerate_cell(tmp_path: Path) -> None:
    path = tmp_path / "ds.jsonl"
    production = produce([DEGENERATE], 20, difficulty=2, seed=0)
    write_jsonl(path, production.records())
    data = report(path, families={"mostly_yes": DEGENERATE})
    cells = data["degenerate"]["cells"]
    assert cells == [
        {
            "family": "mostly_yes",
            "difficulty": 2,
            "answer": "yes",
            "count": 20,
            "instances": 20,
            "share": 1.0,
            "share_low": 0.8389,
        }
    ]
    stats = data["families"]["mostly_yes"]["answers_by_difficulty"]["2"]
    assert stats["distinct"] == 1 and stats["top_share"] == 1.0 and stats["entropy"] == 0.0
    assert data["validation"] == {
        "checked": 20,
        "unverified": 0,
        "mismatches": 0,
        "errors": 0,
        "mismatched": [],
        "errored": [],
    }
    # The same cell is too small to judge under a higher threshold.
    assert report(path, families={}, min_cell=21)["degenerate"]["cells"] == []


def test_answer_stats() -> None:
    stats = answer_stats(Counter({"a": 2, "b": 1, "c": 1}))
    assert stats["top_answer"] == "a" and stats["top_share"] == 0.5 and stats["distinct"] == 3
    assert 0.9 < stats["entropy"] < 1.0
    assert answer_stats(Counter({"x": 1, "y": 1}))["entropy"] == 1.0
    assert answer_stats(Counter())["instances"] == 0


def test_read_records_rejects_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"family": "x"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:1: not an instance record"):
        list(read_records(path))
    path.write_text("\nnot json\n")
    with pytest.raises(ValueError, match=r"bad.jsonl:2: not JSON"):
        list(read_records(path))


def test_pass_at_k_by_family() -> None:
    results = [("b", 3, 3), ("a", 4, 2), ("a", 4, 0)]
    assert pass_at_k_by_family(results, 1) == {"a": 0.25, "b": 1.0}
    assert pass_at_k_by_family(results, 2)["a"] == pytest.approx((1 - 1 / 6) / 2)
    with pytest.raises(ValueError):
        pass_at_k_by_family([("a", 2, 1)], 3)
