"""``veritask logic generate`` on the pipeline: one unit per family, resumable and refusing a
rerun with other settings.

``produce`` stays the pure in-memory function; this module runs the same production as a
pipeline stage whose units are the families, in order. A unit's artifact is
``OUT.parts/NNNNNN.json``: the family's summary row and its records, written atomically. Families
share one set of seen questions (a question is kept once across the file), so a unit starts from
the questions of the units before it; units therefore run in order, in-process. When every unit
is done the records are written to ``OUT`` atomically, in family order, and the parts are
removed; the run manifest stays beside the file (``OUT.run.json``), so a later run into the same
file with another family set, n, difficulty, mix, seed or split is refused.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veritask._util import atomic_write_text, read_json
from veritask.logic._family import Family, normalize
from veritask.logic._produce import (
    MAX_SKIPS,
    Mix,
    _family_schedule,
    _int_keyed,
    _produce_family,
    write_jsonl,
)
from veritask.logic._registry import all_families
from veritask.logic._sandbox import allow_unsafe_no_sandbox, unsafe_allowed
from veritask.pipeline import (
    InProcessExecutor,
    RunManifest,
    Unit,
    executor_for,
    pending,
    unit_ids,
)

FamilyParams = tuple[int, Family]
"""A family unit's parameters: its position in the run and the family."""


@dataclass(frozen=True)
class ProduceSettings:
    """What every family of a run is produced with (see ``produce``)."""

    n: int
    difficulty: int | None = None
    mix: Mix | None = None
    seed: int = 0
    split: str = "train"
    max_skips: int = MAX_SKIPS

    def config(self, families: Sequence[Family]) -> dict[str, Any]:
        """The run config: the families (id and version) and every setting."""
        return {
            "families": [f"{f.id}@{f.version}" for f in families],
            "n": self.n,
            "difficulty": self.difficulty,
            "mix": self.mix.spec if self.mix else None,
            "seed": self.seed,
            "split": self.split,
            "max_skips": self.max_skips,
        }


@dataclass
class FamilyStage:
    """Produce one family per unit into ``parts``; later units see earlier units' questions."""

    families: Sequence[Family]
    settings: ProduceSettings
    parts: Path
    name: str = "logic-generate"
    _seen: set[str] = field(default_factory=set)
    _loaded: int = 0

    def units(self) -> list[Unit[FamilyParams]]:
        """One unit per family, in order; ids are ``position:family id``."""
        return [Unit(f"{i}:{f.id}", (i, f)) for i, f in enumerate(self.families)]

    def part(self, position: int) -> Path:
        """The artifact of the unit at ``position``."""
        return self.parts / f"{position:06d}.json"

    def done(self, unit: Unit[FamilyParams]) -> bool:
        """True when the family's part exists."""
        return self.part(unit.params[0]).exists()

    def setup(self) -> None:
        """Nothing to build: earlier questions are read as units need them."""

    def read(self, position: int) -> dict[str, Any]:
        """A finished unit's part: ``family``, ``summary`` and ``records``."""
        data: dict[str, Any] = read_json(self.part(position))
        return data

    def _catch_up(self, position: int) -> None:
        for earlier in range(self._loaded, position):
            self._seen.update(normalize(str(r["question"])) for r in self.read(earlier)["records"])
        self._loaded = max(self._loaded, position)

    def run(self, unit: Unit[FamilyParams]) -> dict[str, Any]:
        """Produce one family (after the questions of the families before it); write its part."""
        position, family = unit.params
        self._catch_up(position)
        return self._write(position, family_body(family, self.settings, self._seen))

    def accept(self, unit: Unit[FamilyParams], draft: dict[str, Any] | None) -> dict[str, Any]:
        """Write a family produced elsewhere without the earlier families' questions (a
        ``DraftStage`` unit), or produce it here when that draft could differ.

        A draft equals the in-order production exactly when none of its questions is among the
        earlier families' (the questions it checked against its seen set are its own, so no
        decision of the run could have gone otherwise); else, or without a draft, the family is
        produced here with the earlier questions.
        """
        position, _ = unit.params
        self._catch_up(position)
        if draft is None:
            return self.run(unit)
        keys = [normalize(str(r["question"])) for r in draft["records"]]
        if self._seen.isdisjoint(keys):
            self._seen.update(keys)
            return self._write(position, draft)
        return self.run(unit)

    def _write(self, position: int, body: dict[str, Any]) -> dict[str, Any]:
        atomic_write_text(self.part(position), json.dumps(body, ensure_ascii=False) + "\n")
        self._loaded = position + 1
        return body


def family_body(family: Family, s: ProduceSettings, seen: set[str]) -> dict[str, Any]:
    """One family's part (``family``, ``summary``, ``records``), skipping ``seen`` questions
    (and adding the new ones to it)."""
    schedule = _family_schedule(
        family, s.n, seed=s.seed, split=s.split, difficulty=s.difficulty, mix=s.mix
    )
    made, skipped, other = _produce_family(family, schedule, seen, s.seed, s.split, s.max_skips)
    summary = {
        "instances": len(made),
        "duplicates_skipped": skipped,
        "other_split_skipped": other,
        "difficulties": _int_keyed(Counter(inst.difficulty for inst in made)),
    }
    records = [{**inst.to_json(), "category": family.category} for inst in made]
    return {"family": family.id, "summary": summary, "records": records}


@dataclass
class DraftStage:
    """Each family produced on its own (seen questions: its own only), writing nothing: the
    units a distributed run (``use_executor(RayExecutor(...))``) sends to its workers.

    Workers find the families by id (built-in ones, and file families from ``families_dirs``),
    so nothing but ids and settings is pickled. A unit whose production fails returns None; the
    caller then produces that family itself and reports the error as a local run would.
    """

    family_ids: tuple[str, ...]
    families_dirs: tuple[str, ...]
    settings: ProduceSettings
    unsafe_no_sandbox: bool = False
    name: str = "logic-generate-draft"
    _families: dict[str, Family] = field(default_factory=dict)

    def units(self) -> list[Unit[int]]:
        """One unit per family position."""
        return [Unit(f"{i}:{f}", i) for i, f in enumerate(self.family_ids)]

    def done(self, unit: Unit[int]) -> bool:  # noqa: ARG002 (the Stage interface)
        """Drafts are never stored."""
        return False

    def setup(self) -> None:
        """Load the families in the worker."""
        self._families = all_families(self.families_dirs)

    def run(self, unit: Unit[int]) -> dict[str, Any] | None:
        """The family's part as produced on its own, or None when production failed."""
        family = self._families[self.family_ids[unit.params]]
        try:
            with allow_unsafe_no_sandbox(self.unsafe_no_sandbox):
                return family_body(family, self.settings, set())
        except Exception:  # the caller produces the family itself and reports the error
            return None


def produce_file(
    out: str | Path,
    families: Sequence[Family],
    settings: ProduceSettings,
    families_dirs: Sequence[str | Path] = (),
) -> dict[str, Any]:
    """Produce ``settings.n`` instances of each family into the JSONL file ``out``.

    The file's bytes are those of ``write_jsonl(out, produce(...).records())``. A run killed
    midway resumes from its finished families.

    Inside ``use_executor(...)`` (e.g. a ``RayExecutor``) the families are drafted in parallel
    on that executor and accepted here in order (``FamilyStage.accept``): the same bytes and
    the same resume. Its workers load file families from ``families_dirs``.

    Returns:
        The production summary (``Production.to_json()``).

    Raises:
        RunConflict: ``out`` was made by a run with other settings.
        ProduceError: A family ran out of distinct questions.
    """
    out = Path(out)
    if settings.difficulty is not None and settings.mix is not None:
        raise ValueError("give a difficulty or a mix, not both")
    stage = FamilyStage(families, settings, out.with_name(out.name + ".parts"))
    manifest = RunManifest("logic-generate", settings.config(families), unit_ids(stage))
    manifest.open(out.with_name(out.name + ".run.json"), where=str(out))
    todo = pending(stage)
    chosen = executor_for(1)
    if isinstance(chosen, InProcessExecutor) or not todo:
        for _ in chosen.map(stage, todo):
            pass
    else:  # drafts on the chosen executor, accepted (or redone) here in family order
        drafts = DraftStage(
            tuple(f.id for f in families),
            tuple(map(str, families_dirs)),
            settings,
            unsafe_allowed(),
        )
        draft_units = [Unit(u.id, u.params[0]) for u in todo]
        for unit, draft in zip(todo, chosen.map(drafts, draft_units), strict=True):
            stage.accept(unit, draft)
    parts = [stage.read(i) for i in range(len(families))]
    write_jsonl(out, (r for part in parts for r in part["records"]))
    shutil.rmtree(stage.parts, ignore_errors=True)
    rows = {part["family"]: part["summary"] for part in parts}
    return {
        "instances": sum(r["instances"] for r in rows.values()),
        "duplicates_skipped": sum(r["duplicates_skipped"] for r in rows.values()),
        "other_split_skipped": sum(r["other_split_skipped"] for r in rows.values()),
        "families": rows,
    }
