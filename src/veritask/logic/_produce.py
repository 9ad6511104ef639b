"""Dataset production for logic families: difficulty mixes, dedup, JSONL files and reports.

``produce`` makes ``n`` instances per family. Each family gets a schedule of ``n`` difficulties
(fixed, or allocated from a ``Mix`` by largest remainder and shuffled with a derived seed); slot
``j`` of the schedule takes the next unused instance index. When the instance at that index asks a
question already produced (after ``normalize``), the index is skipped and the slot retries with
the next one, so every file holds exactly ``n`` distinct questions per family and the exact
difficulty counts of the mix. Everything is a pure function of the arguments: the same call
writes the same bytes.

``report`` reads such a file back: counts, duplicate questions, answer distributions with flags
for degenerate (family, difficulty) cells, and a re-generation of every line whose family is known
to check that it still gives the stored question, inputs and answer.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from veritask._util import derive_seed, loads_untrusted, write_lines_atomic
from veritask.logic._family import Family, Instance, make_instance, normalize
from veritask.logic._registry import all_families
from veritask.verify import pass_at_k

NAMED_BUCKETS: dict[str, tuple[int, int]] = {"easy": (1, 3), "medium": (4, 7), "hard": (8, 10)}
"""The named difficulty buckets a mix spec may use."""
DEFAULT_MIX_SPEC = "easy=0.3,medium=0.5,hard=0.2"
"""The default mix: 30% easy (1-3), 50% medium (4-7), 20% hard (8-10)."""
MAX_SHARE = 0.30
"""A (family, difficulty) cell is degenerate when one answer is above this share of it."""
MIN_CELL = 10
"""Cells with fewer instances are too small to flag (two equal answers in five are 40%)."""
MAX_SKIPS = 1000
"""Duplicate (or other-split) questions in a row after which ``produce`` gives up on a family."""
PARTITIONED_SPLITS = ("train", "validation", "test")
"""The splits whose questions are partitioned by hash (see ``question_split``)."""
_LISTED = 20  # how many line numbers a report lists per problem kind


class MixError(ValueError):
    """A difficulty mix spec that cannot be parsed or does not add up."""


class ProduceError(ValueError):
    """A family could not give enough distinct questions."""


# --- difficulty mixes ------------------------------------------------------------------------


@dataclass(frozen=True)
class Bucket:
    """A range of difficulties (inclusive) and its exact share of the instances."""

    name: str
    low: int
    high: int
    ratio: Fraction

    @property
    def difficulties(self) -> range:
        """The difficulties in the bucket, ascending."""
        return range(self.low, self.high + 1)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (the ratio as a float)."""
        return {"name": self.name, "low": self.low, "high": self.high, "ratio": float(self.ratio)}


def _largest_remainder(n: int, weights: list[Fraction]) -> list[int]:
    """Split ``n`` in proportion to ``weights`` (summing to 1): floors, then the leftover units
    to the largest fractional parts, ties to the earlier weight."""
    quotas = [n * w for w in weights]
    counts = [math.floor(q) for q in quotas]
    order = sorted(range(len(weights)), key=lambda i: (-(quotas[i] - counts[i]), i))
    for i in order[: n - sum(counts)]:
        counts[i] += 1
    return counts


@dataclass(frozen=True)
class Mix:
    """Difficulty buckets with ratios; ``Mix.parse`` reads the text form.

    Ratios are exact fractions that must sum to 1; buckets must lie in 1-10 and not overlap.
    """

    buckets: tuple[Bucket, ...]

    def __post_init__(self) -> None:
        if not self.buckets:
            raise MixError("a mix needs at least one bucket")
        seen: dict[int, str] = {}
        for b in self.buckets:
            if not 1 <= b.low <= b.high <= 10:
                raise MixError(f"bucket {b.name}: range {b.low}-{b.high} is not within 1-10")
            if b.ratio < 0:
                raise MixError(f"bucket {b.name}: ratio {_ratio_text(b.ratio)} is negative")
            for d in b.difficulties:
                if d in seen:
                    raise MixError(f"buckets {seen[d]} and {b.name} both contain difficulty {d}")
                seen[d] = b.name
        total = sum((b.ratio for b in self.buckets), Fraction(0))
        if total != 1:
            raise MixError(f"mix ratios sum to {float(total):g}, not 1")

    @classmethod
    def default(cls) -> Mix:
        """easy (1-3) 0.3, medium (4-7) 0.5, hard (8-10) 0.2."""
        return cls.parse(DEFAULT_MIX_SPEC)

    @classmethod
    def parse(cls, spec: str) -> Mix:
        """Read ``easy=0.3,medium=0.5,hard=0.2`` or ``1-3:0.3,4-7:0.5,8-10:0.2``.

        Each comma-separated item is ``BUCKET=RATIO`` or ``BUCKET:RATIO`` where the bucket is a
        name (easy, medium, hard), a range ``LOW-HIGH`` or one difficulty; ratios are decimals
        or fractions (``1/3``) and must sum to exactly 1.

        Raises:
            MixError: With the offending item in the message.
        """
        if not spec.strip():
            raise MixError(f"empty mix; expected e.g. {DEFAULT_MIX_SPEC!r}")
        items = [item.strip() for item in spec.split(",")]
        if not all(items):
            raise MixError(f"empty item in mix {spec!r}; expected e.g. {DEFAULT_MIX_SPEC!r}")
        return cls(tuple(_parse_bucket(item) for item in items))

    @property
    def spec(self) -> str:
        """The canonical text form (parses back to an equal mix)."""
        return ",".join(f"{_bucket_label(b)}:{_ratio_text(b.ratio)}" for b in self.buckets)

    def difficulty_counts(self, n: int) -> dict[int, int]:
        """How many of ``n`` instances each difficulty gets (largest remainder across buckets,
        then an even split inside each bucket with the leftover to the lower difficulties)."""
        counts: dict[int, int] = {}
        for bucket, share in zip(
            self.buckets, _largest_remainder(n, [b.ratio for b in self.buckets]), strict=True
        ):
            size = len(bucket.difficulties)
            for offset, d in enumerate(bucket.difficulties):
                counts[d] = share // size + (1 if offset < share % size else 0)
        return dict(sorted(counts.items()))

    def schedule(self, n: int, seed: int) -> list[int]:
        """``n`` difficulties with exactly ``difficulty_counts(n)``, in an order fixed by ``seed``
        (bucket names do not matter: ``easy=1`` and ``1-3:1`` give the same schedule)."""
        slots = [d for d, count in self.difficulty_counts(n).items() for _ in range(count)]
        ranges = ",".join(f"{b.low}-{b.high}:{b.ratio}" for b in self.buckets)
        random.Random(derive_seed("mix", ranges, n, seed)).shuffle(slots)
        return slots

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: the canonical spec and the buckets."""
        return {"spec": self.spec, "buckets": [b.to_json() for b in self.buckets]}


def _ratio_text(ratio: Fraction) -> str:
    decimal = f"{float(ratio):.12g}"
    return decimal if Fraction(decimal) == ratio else f"{ratio.numerator}/{ratio.denominator}"


def _bucket_label(bucket: Bucket) -> str:
    if NAMED_BUCKETS.get(bucket.name) == (bucket.low, bucket.high):
        return bucket.name
    return str(bucket.low) if bucket.low == bucket.high else f"{bucket.low}-{bucket.high}"


def _parse_bucket(item: str) -> Bucket:
    cut = min((i for i in (item.find("="), item.find(":")) if i >= 0), default=-1)
    if cut < 0:
        raise MixError(f"mix item {item!r}: expected BUCKET=RATIO, e.g. easy=0.3 or 1-3:0.3")
    label, ratio_text = item[:cut].strip(), item[cut + 1 :].strip()
    try:
        ratio = Fraction(ratio_text)
    except (ValueError, ZeroDivisionError):
        raise MixError(f"mix item {item!r}: ratio {ratio_text!r} is not a number") from None
    low, high = _parse_range(item, label)
    return Bucket(label, low, high, ratio)


def _parse_range(item: str, label: str) -> tuple[int, int]:
    if label in NAMED_BUCKETS:
        return NAMED_BUCKETS[label]
    low_text, _, high_text = label.partition("-")
    try:
        low = int(low_text)
        high = int(high_text) if high_text else low
    except ValueError:
        names = ", ".join(NAMED_BUCKETS)
        raise MixError(
            f"mix item {item!r}: bucket {label!r} is neither a name ({names}) nor a range LOW-HIGH"
        ) from None
    if not 1 <= low <= high <= 10:
        raise MixError(f"mix item {item!r}: range {label!r} is not within 1-10 (low <= high)")
    return low, high


def _family_schedule(
    family: Family, n: int, *, seed: int, split: str, difficulty: int | None, mix: Mix | None
) -> list[int]:
    """The difficulty of each of the ``n`` instances a family gets (see ``produce``)."""
    if difficulty is not None:
        if not 1 <= difficulty <= 10:
            raise ValueError(f"difficulty must be 1-10, got {difficulty}")
        return [difficulty] * n
    return (mix or Mix.default()).schedule(n, derive_seed(family.id, split, seed))


# --- production ------------------------------------------------------------------------------


@dataclass
class Production:
    """What ``produce`` made: the instances in order, and per family the category and how many
    duplicate questions were skipped."""

    instances: list[Instance] = field(default_factory=list)
    categories: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    other_split: dict[str, int] = field(default_factory=dict)
    """Per family: questions skipped because they belong to another split's partition."""

    def __iter__(self) -> Iterator[Instance]:
        return iter(self.instances)

    def __len__(self) -> int:
        return len(self.instances)

    def records(self) -> Iterator[dict[str, Any]]:
        """One JSON-ready dict per instance: ``Instance.to_json()`` plus ``category``."""
        for inst in self.instances:
            yield {**inst.to_json(), "category": self.categories[inst.family]}

    def to_json(self) -> dict[str, Any]:
        """Summary: ``instances``, ``duplicates_skipped`` and per family ``instances``,
        ``duplicates_skipped`` and ``difficulties`` (difficulty -> count, keys as strings)."""
        levels: dict[str, Counter[int]] = {fid: Counter() for fid in self.categories}
        for inst in self.instances:
            levels[inst.family][inst.difficulty] += 1
        per_family = {
            fid: {
                "instances": sum(counts.values()),
                "duplicates_skipped": self.skipped.get(fid, 0),
                "other_split_skipped": self.other_split.get(fid, 0),
                "difficulties": _int_keyed(counts),
            }
            for fid, counts in levels.items()
        }
        return {
            "instances": len(self.instances),
            "duplicates_skipped": sum(self.skipped.values()),
            "other_split_skipped": sum(self.other_split.values()),
            "families": per_family,
        }


def produce(
    families: Iterable[Family],
    n: int,
    *,
    difficulty: int | None = None,
    mix: Mix | str | None = None,
    seed: int = 0,
    split: str = "train",
    max_skips: int = MAX_SKIPS,
) -> Production:
    """Make ``n`` instances of each family, without duplicate questions.

    Args:
        families: The families, produced in the order given.
        n: Instances per family.
        difficulty: Every instance at this difficulty (1-10); exclusive with ``mix``.
        mix: A ``Mix`` or its text form; the default mix when neither this nor ``difficulty``
            is given.
        seed: Base seed; with the split, family and index it fixes every instance.
        split: The split name, part of every instance seed. For ``train``, ``validation`` and
            ``test`` only questions of that split's hash partition are kept
            (``question_split``), so these splits never share a question.
        max_skips: Duplicates in a row after which a family is given up on.

    Returns:
        The instances (family by family, in schedule order) and the duplicates skipped.

    Raises:
        ValueError: Both ``difficulty`` and ``mix``, ``n`` below 0, or a difficulty outside 1-10.
        MixError: An unparsable ``mix``.
        ProduceError: A family repeated a question more than ``max_skips`` times in a row.
    """
    if difficulty is not None and mix is not None:
        raise ValueError("give a difficulty or a mix, not both")
    if n < 0:
        raise ValueError(f"n must be at least 0, got {n}")
    parsed = Mix.parse(mix) if isinstance(mix, str) else mix
    out = Production()
    seen: set[str] = set()
    for family in families:
        schedule = _family_schedule(
            family, n, seed=seed, split=split, difficulty=difficulty, mix=parsed
        )
        made, skipped, other = _produce_family(family, schedule, seen, seed, split, max_skips)
        out.instances.extend(made)
        out.categories[family.id] = family.category
        out.skipped[family.id] = skipped
        out.other_split[family.id] = other
    return out


def question_split(question: str) -> str:
    """The split whose partition a question belongs to: a hash of the normalized question picks
    one of ``train``, ``validation`` and ``test``. ``produce`` keeps only questions of the split
    it makes, so the three splits can never share a question, however small a family's question
    space is (distinct seed streams alone only make a repeat unlikely)."""
    digest = hashlib.sha256(normalize(question).encode()).digest()
    return PARTITIONED_SPLITS[int.from_bytes(digest[:8], "big") % len(PARTITIONED_SPLITS)]


def _produce_family(
    family: Family, schedule: list[int], seen: set[str], seed: int, split: str, max_skips: int
) -> tuple[list[Instance], int, int]:
    made: list[Instance] = []
    index = skipped = other = 0
    partitioned = split in PARTITIONED_SPLITS
    for difficulty in schedule:
        for _ in range(max_skips + 1):
            inst = make_instance(family, difficulty, split=split, seed=seed, index=index)
            index += 1
            key = normalize(inst.question)
            if partitioned and question_split(key) != split:
                other += 1
                continue
            if key not in seen:
                seen.add(key)
                made.append(inst)
                break
            skipped += 1
        else:
            raise ProduceError(
                f"{family.id}: {max_skips + 1} duplicate or other-split questions in a row at"
                f" difficulty {difficulty}; it has too few distinct questions for"
                f" {len(schedule)} instances"
            )
    return made, skipped, other


def dump_record(record: Mapping[str, Any]) -> str:
    """One JSONL line (no newline): compact, UTF-8, keys in the order built."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def write_jsonl(path: str | os.PathLike[str], records: Iterable[Mapping[str, Any]]) -> int:
    """Write records as JSONL atomically (a temporary file in the same folder, then
    ``os.replace``); a reader never sees a half-written file. Returns the number of lines."""
    lines = ((dump_record(record) + "\n").encode("utf-8") for record in records)
    return write_lines_atomic(Path(path), lines, durable=True)


# --- reports ---------------------------------------------------------------------------------


def _int_keyed(counts: Mapping[int, Any]) -> dict[str, Any]:
    return {str(k): counts[k] for k in sorted(counts)}


def answer_stats(answers: Counter[str]) -> dict[str, Any]:
    """Distribution figures of one set of answers.

    Returns:
        ``instances``, ``distinct``, ``top_answer``, ``top_share`` (share of the most common
        answer) and ``entropy``: Shannon entropy divided by ``log(distinct)`` (Pielou's
        evenness; 1.0 when the distinct answers are equally common, 0.0 with one answer).
    """
    total = sum(answers.values())
    if not total:
        return {"instances": 0, "distinct": 0, "top_answer": None, "top_share": 0.0, "entropy": 0.0}
    top, count = min(answers.items(), key=lambda kv: (-kv[1], kv[0]))
    entropy = -sum(c / total * math.log(c / total) for c in answers.values())
    evenness = entropy / math.log(len(answers)) if len(answers) > 1 else 0.0
    return {
        "instances": total,
        "distinct": len(answers),
        "top_answer": top,
        "top_share": round(count / total, 4),
        "entropy": round(evenness, 4),
    }


def read_records(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, record)`` for every non-blank line of a JSONL file.

    Raises:
        ValueError: A line that is not a JSON object with the instance fields.
    """
    required = {"family", "version", "split", "seed", "index", "difficulty", "question", "answer"}
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = loads_untrusted(line)
            except ValueError as exc:
                why = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                raise ValueError(f"{path}:{number}: not JSON: {why}") from None
            if not isinstance(record, dict) or not required <= record.keys():
                missing = sorted(required - record.keys()) if isinstance(record, dict) else []
                raise ValueError(f"{path}:{number}: not an instance record (missing {missing})")
            yield number, record


def _regenerate(record: Mapping[str, Any], family: Family) -> Instance:
    return make_instance(
        family,
        int(record["difficulty"]),
        split=str(record["split"]),
        seed=int(record["seed"]),
        index=int(record["index"]),
    )


def _mismatched_fields(record: Mapping[str, Any], inst: Instance) -> list[str]:
    fields = [name for name in ("question", "answer") if record[name] != getattr(inst, name)]
    if "inputs" in record and record["inputs"] != json.loads(json.dumps(dict(inst.inputs))):
        fields.append("inputs")
    return fields


@dataclass
class _Validation:
    checked: int = 0
    unverified: int = 0
    mismatches: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)

    def check(self, number: int, record: Mapping[str, Any], family: Family | None) -> None:
        if family is None or family.version != record["version"]:
            self.unverified += 1
            return
        self.checked += 1
        try:
            fields = _mismatched_fields(record, _regenerate(record, family))
        except Exception as exc:  # a family that fails to rebuild is reported, not raised
            self.errors.append({"line": number, "family": family.id, "error": str(exc)})
            return
        if fields:
            self.mismatches.append({"line": number, "family": family.id, "fields": fields})

    def to_json(self) -> dict[str, Any]:
        return {
            "checked": self.checked,
            "unverified": self.unverified,
            "mismatches": len(self.mismatches),
            "errors": len(self.errors),
            "mismatched": self.mismatches[:_LISTED],
            "errored": self.errors[:_LISTED],
        }


@dataclass
class _Tally:
    instances: int = 0
    difficulties: Counter[int] = field(default_factory=Counter)
    splits: Counter[str] = field(default_factory=Counter)
    categories: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    versions: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    cells: dict[str, dict[int, Counter[str]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(Counter))
    )
    questions: set[str] = field(default_factory=set)
    duplicate_lines: list[int] = field(default_factory=list)

    def add(self, number: int, record: Mapping[str, Any]) -> None:
        fid, difficulty = str(record["family"]), int(record["difficulty"])
        self.instances += 1
        self.difficulties[difficulty] += 1
        self.splits[str(record["split"])] += 1
        self.versions[fid][str(record["version"])] += 1
        if "category" in record:
            self.categories[fid][str(record["category"])] += 1
        self.cells[fid][difficulty][normalize(str(record["answer"]))] += 1
        key = normalize(str(record["question"]))
        if key in self.questions:
            self.duplicate_lines.append(number)
        self.questions.add(key)


def _family_report(tally: _Tally, fid: str) -> dict[str, Any]:
    cells = tally.cells[fid]
    overall: Counter[str] = sum(cells.values(), Counter())
    categories = tally.categories.get(fid)
    return {
        "category": categories.most_common(1)[0][0] if categories else None,
        "versions": sorted(tally.versions[fid]),
        "instances": sum(overall.values()),
        "difficulties": _int_keyed({d: sum(c.values()) for d, c in cells.items()}),
        "answers": answer_stats(overall),
        "answers_by_difficulty": _int_keyed({d: answer_stats(c) for d, c in cells.items()}),
    }


def _wilson_low(count: int, total: int, z: float = 1.96) -> float:
    """Lower end of the 95% Wilson interval of a share: above ``max_share`` means the cell is
    degenerate beyond sampling noise."""
    p = count / total
    centre = p + z * z / (2 * total)
    spread = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total))
    return (centre - spread) / (1 + z * z / total)


def _degenerate(tally: _Tally, max_share: float, min_cell: int) -> dict[str, Any]:
    flagged: list[dict[str, Any]] = []
    suspect: list[dict[str, Any]] = []
    small = 0
    for fid in sorted(tally.cells):
        for difficulty in sorted(tally.cells[fid]):
            answers = tally.cells[fid][difficulty]
            total = sum(answers.values())
            if total < min_cell:
                small += 1
                continue
            top, count = min(answers.items(), key=lambda kv: (-kv[1], kv[0]))
            if count / total <= max_share:
                continue
            share_low = round(_wilson_low(count, total), 4)
            cell: dict[str, Any] = {
                "family": fid,
                "difficulty": difficulty,
                "answer": top,
                "count": count,
                "instances": total,
                "share": round(count / total, 4),
                "share_low": share_low,
            }
            (flagged if share_low > max_share else suspect).append(cell)
    return {
        "max_share": max_share,
        "min_cell": min_cell,
        "small_cells": small,
        "cells": flagged,
        "suspect": suspect,
    }


def report(
    path: str | os.PathLike[str],
    *,
    families: Mapping[str, Family] | None = None,
    max_share: float = MAX_SHARE,
    min_cell: int = MIN_CELL,
) -> dict[str, Any]:
    """Figures and checks for a JSONL file written by ``produce`` / ``write_jsonl``.

    Args:
        path: The JSONL file.
        families: Families to re-generate from, by id (default: built-in and file families
            on ``VERITASK_FAMILY_PATH``).
        max_share: An answer above this share of a (family, difficulty) cell, beyond sampling
            noise, flags the cell.
        min_cell: Cells with fewer instances are counted in ``small_cells``, never flagged.

    Returns:
        A dict with these keys (a stable contract; digit keys are difficulties):

        - ``path``, ``instances``;
        - ``difficulties`` (difficulty -> count) and ``splits`` (split -> count);
        - ``families``: id -> ``category``, ``versions``, ``instances``, ``difficulties``,
          ``answers`` and ``answers_by_difficulty`` (difficulty -> the same figures), where the
          answer figures are those of ``answer_stats``;
        - ``duplicates``: ``questions`` (lines repeating an earlier normalized question) and
          ``lines`` (the first 20 such line numbers);
        - ``degenerate``: ``max_share``, ``min_cell``, ``small_cells``, ``cells`` and
          ``suspect``. A judged cell whose top answer is above ``max_share`` goes to ``cells``
          when the lower end of the 95% Wilson interval of its share (``share_low``) is still
          above ``max_share`` (degenerate beyond sampling noise), else to ``suspect`` (sample
          it again with more instances). Entries: ``family``, ``difficulty``, ``answer``,
          ``count``, ``instances``, ``share``, ``share_low``;
        - ``validation``: ``checked`` (lines re-generated), ``unverified`` (unknown family or
          another version), ``mismatches`` and ``errors`` (counts), ``mismatched`` (the first 20:
          ``line``, ``family``, ``fields``) and ``errored`` (the first 20: ``line``, ``family``,
          ``error``).

    Raises:
        ValueError: A line that is not an instance record.
    """
    known = all_families() if families is None else families
    tally, validation = _Tally(), _Validation()
    for number, record in read_records(path):
        tally.add(number, record)
        validation.check(number, record, known.get(str(record["family"])))
    return {
        "path": str(path),
        "instances": tally.instances,
        "difficulties": _int_keyed(tally.difficulties),
        "splits": dict(sorted(tally.splits.items())),
        "families": {fid: _family_report(tally, fid) for fid in sorted(tally.cells)},
        "duplicates": {
            "questions": len(tally.duplicate_lines),
            "lines": tally.duplicate_lines[:_LISTED],
        },
        "degenerate": _degenerate(tally, max_share, min_cell),
        "validation": validation.to_json(),
    }


# --- pass@k ----------------------------------------------------------------------------------


def pass_at_k_by_family(results: Iterable[tuple[str, int, int]], k: int) -> dict[str, float]:
    """Mean unbiased pass@k per family.

    Args:
        results: One ``(family, n, c)`` per instance: ``n`` attempts, ``c`` of them correct.
        k: Attempts drawn (at most every instance's ``n``).

    Returns:
        Family id -> the mean of ``pass_at_k(n, c, k)`` over its instances, sorted by id.
    """
    per_family: dict[str, list[float]] = defaultdict(list)
    for family, n, c in results:
        per_family[family].append(pass_at_k(n, c, k))
    return {fid: sum(v) / len(v) for fid, v in sorted(per_family.items())}
