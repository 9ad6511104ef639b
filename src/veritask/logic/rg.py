"""A reasoning-gym-compatible view of the logic families.

``create_dataset(name, size=..., seed=...)`` mirrors ``reasoning_gym.create_dataset``: the result
has ``len``, integer indexing and iteration over entries ``{"question", "answer", "metadata"}``,
``score_answer(answer, entry) -> float`` and ``config.size`` / ``config.seed``; training code
written against reasoning-gym can take it without change and without reasoning-gym installed.

Two deliberate differences:

- Scoring is strict: the normalized answer must equal the canonical one (or satisfy the family's
  checker). reasoning-gym's default gives partial credit when the answer merely contains it.
- Entries come from ``produce``, so a dataset never repeats a question, and train and test
  datasets from the same seed share none.

Two datasets of one split that differ only in seed are not disjoint: a family with a small
question space repeats questions across seeds (the reasoning-gym habit of a train seed and a
test seed). ``create_dataset`` warns (``SeedOnlySplitWarning``) when it makes such a pair;
take the held-out set from another split instead.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from veritask.logic._family import Family, Instance, score_answer
from veritask.logic._produce import Mix, produce
from veritask.logic._registry import all_families, get_family


@dataclass(frozen=True)
class LogicDatasetConfig:
    """The arguments a ``LogicDataset`` was made with (``size`` and ``seed`` as in
    reasoning-gym's configs)."""

    name: str
    size: int = 500
    seed: int = 42
    difficulty: int | None = None
    mix: str | None = None
    split: str = "train"


class SeedOnlySplitWarning(UserWarning):
    """Two datasets of the same family and split differ only in seed, so they may share
    questions; use different splits for sets that must be disjoint."""


_SEEDS: dict[tuple[str, str, str, int | None, str | None], set[int]] = {}
_SEEDS_LOCK = threading.Lock()
_SEEDS_LIMIT = 10_000


def _warn_seed_only(family: Family, config: LogicDatasetConfig) -> None:
    """Warn when a dataset of this family, split and difficulty settings was already made with
    another seed in this process."""
    key = (family.id, family.version, config.split, config.difficulty, config.mix)
    with _SEEDS_LOCK:
        seen = _SEEDS.setdefault(key, set())
        others = sorted(seen - {config.seed})
        if len(_SEEDS) < _SEEDS_LIMIT:
            seen.add(config.seed)
    if others:
        warnings.warn(
            f"{family.id}: a {config.split!r} dataset was already made with seed "
            f"{others[0]}; datasets that differ only in seed may share questions. For a "
            "held-out set use another split (split='test'), whose questions never occur in "
            "'train'.",
            SeedOnlySplitWarning,
            stacklevel=3,
        )


def _entry(inst: Instance, category: str) -> dict[str, Any]:
    return {
        "question": inst.question,
        "answer": inst.answer,
        "metadata": {
            "source_dataset": inst.family,
            "source_index": inst.index,
            "family": inst.family,
            "version": inst.version,
            "category": category,
            "split": inst.split,
            "seed": inst.seed,
            "index": inst.index,
            "difficulty": inst.difficulty,
            "inputs": dict(inst.inputs),
        },
    }


class LogicDataset:
    """``size`` distinct instances of one family, indexable like reasoning-gym's
    ``ProceduralDataset``.

    ``metadata`` of each entry holds ``family``, ``version``, ``split``, ``seed``, ``index``
    and ``difficulty`` (``make_instance`` rebuilds the instance from them), ``category``, the
    hidden ``inputs``, and reasoning-gym's ``source_dataset`` / ``source_index``.
    """

    def __init__(self, family: Family, config: LogicDatasetConfig) -> None:
        self.family = family
        self.config = config
        production = produce(
            [family],
            config.size,
            difficulty=config.difficulty,
            mix=config.mix,
            seed=config.seed,
            split=config.split,
        )
        self._entries = [_entry(inst, family.category) for inst in production]

    @property
    def size(self) -> int:
        """How many entries the dataset has."""
        return self.config.size

    @property
    def seed(self) -> int:
        """The base seed."""
        return self.config.seed

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, idx: int) -> dict[str, Any]:
        """Entry ``idx`` (a fresh copy: changing it does not change the dataset)."""
        entry = self._entries[idx]
        return {
            **entry,
            "metadata": {**entry["metadata"], "inputs": dict(entry["metadata"]["inputs"])},
        }

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for idx in range(len(self)):
            yield self[idx]

    def score_answer(self, answer: str | None, entry: Mapping[str, Any]) -> float:
        """1.0 for a right answer, else 0.0: ``veritask.logic.score_answer`` on the instance the
        entry describes (strict; the family's checker decides when it has one)."""
        return score_entry(answer, entry, self.family)


def _family_for(metadata: Mapping[str, Any], default: Family | None) -> Family | None:
    fid = metadata.get("family")
    if default is not None and (fid is None or fid == default.id):
        return default
    return all_families().get(str(fid)) if fid is not None else None


def score_entry(
    answer: str | None, entry: Mapping[str, Any], family: Family | None = None
) -> float:
    """Strictly score ``answer`` against a reasoning-gym-style entry.

    Args:
        answer: The model's final answer (None scores 0).
        entry: ``{"question", "answer", "metadata"}`` as a ``LogicDataset`` gives it.
        family: The family; by default the built-in named by ``metadata["family"]``.

    Returns:
        1.0 or 0.0.
    """
    metadata: Mapping[str, Any] = entry.get("metadata") or {}
    inst = Instance(
        family=str(metadata.get("family", "")),
        version=str(metadata.get("version", "")),
        split=str(metadata.get("split", "")),
        seed=int(metadata.get("seed", 0)),
        index=int(metadata.get("index", 0)),
        difficulty=int(metadata.get("difficulty", 1)),
        question=str(entry.get("question", "")),
        inputs=dict(metadata.get("inputs") or {}),
        answer=str(entry["answer"]),
    )
    return score_answer(answer, inst, _family_for(metadata, family))


def create_dataset(
    name: str | Family,
    *,
    size: int = 500,
    seed: int = 42,
    difficulty: int | None = None,
    mix: Mix | str | None = None,
    split: str = "train",
) -> LogicDataset:
    """A dataset of one family, like ``reasoning_gym.create_dataset(name, size=, seed=)``.

    Args:
        name: A built-in family id, or a ``Family``.
        size: Entries (all with distinct questions).
        seed: Base seed.
        difficulty: Every entry at this difficulty; exclusive with ``mix``.
        mix: A difficulty mix or its text form; the default mix when neither is given.
        split: The split (train and test share no question, whatever their seeds). A second
            dataset of the same split that differs only in seed warns
            (``SeedOnlySplitWarning``): it may share questions with the first.

    Raises:
        KeyError: An unknown family id.
        ValueError: Both ``difficulty`` and ``mix``, or a bad value of either.
    """
    family = name if isinstance(name, Family) else get_family(name)
    spec = mix.spec if isinstance(mix, Mix) else mix
    config = LogicDatasetConfig(family.id, size, seed, difficulty, spec, split)
    _warn_seed_only(family, config)
    return LogicDataset(family, config)


def list_datasets() -> list[str]:
    """The names ``create_dataset`` accepts (built-in and file family ids), sorted."""
    return sorted(all_families())
