"""The experience playbook (SSLogic's): a bounded list of short lessons, kept as JSON.

:class:`Playbook` is the list and its eviction rule, read and written atomically;
:func:`failure_lessons` maps a failed round's problem lines to fixed lessons (no model call).
Besides :meth:`Playbook.add` (the rule-based curator's one move) the playbook takes the model
curator's moves (:meth:`Playbook.rewrite`, :meth:`Playbook.merge`, :meth:`Playbook.drop`,
see ``_curate``), and each curation is one numbered version in its history, naming the
curator that made it. The policy is described in design notes 0009 and 0063.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veritask._util import read_json
from veritask.logic._records import write_json

TEXT_LIMIT = 300
"""The longest lesson text kept (longer ones are cut by :meth:`Playbook.add`)."""
HISTORY_LIMIT = 50
"""Versions kept in a playbook's history (the oldest are dropped)."""
EVIDENCE_LIMIT = 3
"""Evidence lines kept per lesson (the most recent)."""


@dataclass
class PlaybookEntry:
    """One lesson: a stable key, its text, how often it recurred, and when it was added/used;
    the evidence it came from and the curator that last wrote it."""

    key: str
    text: str
    score: int = 1
    added: int = 0
    last: int = 0
    evidence: list[str] = field(default_factory=list)
    curator: str = "rules"


def _clean(text: str) -> str:
    return " ".join(text.split())[:TEXT_LIMIT]


def _evidence(old: list[str], new: list[str]) -> list[str]:
    merged = [e for e in old if e not in new] + [" ".join(e.split())[:300] for e in new]
    return merged[-EVIDENCE_LIMIT:]


DEFAULT_LESSONS = (
    ("rng", "Draw every random choice from the rng argument; never from module-level random."),
    (
        "degenerate",
        "Keep answers spread out: no single answer may be more than 30% of instances at any "
        "difficulty.",
    ),
    (
        "answer_format",
        "Make the answer format exact (order, separators, case) so a right answer cannot be "
        "written two ways.",
    ),
    (
        "consensus",
        "State every rule, tie-break and edge case in the question, so validators written "
        "independently from it compute the same answer.",
    ),
)


@dataclass
class Playbook:
    """A bounded list of short lessons shown to the agent (SSLogic's experience playbook).

    Adding a lesson whose key is present replaces its text and raises its score; adding a new
    key to a full playbook first drops the least useful entry: the lowest score, then the one
    least recently added or reinforced.
    """

    limit: int = 20
    entries: list[PlaybookEntry] = field(default_factory=list)
    clock: int = 0
    version: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def default(cls, limit: int = 20) -> Playbook:
        """A playbook holding the built-in starter lessons."""
        book = cls(limit=limit)
        for key, text in DEFAULT_LESSONS:
            book.add(key, text)
        return book

    def add(
        self, key: str, text: str, evidence: list[str] | None = None, curator: str = "rules"
    ) -> None:
        """Add or reinforce a lesson (see the class docstring for the eviction rule)."""
        self.clock += 1
        text, evidence = _clean(text), evidence or []
        for entry in self.entries:
            if entry.key == key:
                entry.text, entry.score, entry.last = text, entry.score + 1, self.clock
                entry.evidence, entry.curator = _evidence(entry.evidence, evidence), curator
                return
        while self.entries and len(self.entries) >= self.limit:
            worst = min(self.entries, key=lambda e: (e.score, e.last, e.added))
            self.entries.remove(worst)
        if self.limit > 0:
            entry = PlaybookEntry(key, text, 1, self.clock, self.clock, [], curator)
            entry.evidence = _evidence([], evidence)
            self.entries.append(entry)

    def get(self, key: str) -> PlaybookEntry | None:
        """The entry of ``key``, or None."""
        return next((e for e in self.entries if e.key == key), None)

    def rewrite(self, key: str, text: str, evidence: list[str], curator: str) -> None:
        """Give the lesson ``key`` a new text (its score and age are kept).

        Raises:
            KeyError: No lesson has that key.
        """
        entry = self.get(key)
        if entry is None:
            raise KeyError(key)
        self.clock += 1
        entry.text, entry.last, entry.curator = _clean(text), self.clock, curator
        entry.evidence = _evidence(entry.evidence, evidence)

    def drop(self, key: str) -> None:
        """Remove the lesson ``key``.

        Raises:
            KeyError: No lesson has that key.
        """
        entry = self.get(key)
        if entry is None:
            raise KeyError(key)
        self.entries.remove(entry)

    def merge(
        self, keys: list[str], key: str, text: str, evidence: list[str], curator: str
    ) -> None:
        """Replace the lessons ``keys`` by one lesson ``key``: their scores summed, the oldest
        one's age, their evidence joined.

        Raises:
            KeyError: One of ``keys`` is not in the playbook.
        """
        merged = [self.get(k) for k in keys]
        found = [e for e in merged if e is not None]
        if len(found) != len(keys):
            raise KeyError(next(k for k, e in zip(keys, merged, strict=True) if e is None))
        self.clock += 1
        old = [line for e in found for line in e.evidence]
        for entry in found:
            self.entries.remove(entry)
        score, added = sum(e.score for e in found), min(e.added for e in found)
        entry = PlaybookEntry(key, _clean(text), score, added, self.clock, [], curator)
        entry.evidence = _evidence(old, evidence)
        self.entries.append(entry)

    def record(
        self, curator: str, where: str, operations: list[dict[str, Any]], note: str | None = None
    ) -> None:
        """Number a new version: who curated (``rules`` or ``model:<name>``), after what
        (``where``, e.g. a round id), with which operations, and why when there is more to say
        (``note``, e.g. the model's answer was rejected). Kept in the history."""
        self.version += 1
        entry: dict[str, Any] = {"version": self.version, "curator": curator, "after": where}
        entry["operations"] = operations
        if note is not None:
            entry["note"] = note
        self.history.append(entry)
        del self.history[:-HISTORY_LIMIT]

    def lessons(self) -> list[str]:
        """The lessons, most useful first."""
        ranked = sorted(self.entries, key=lambda e: (-e.score, -e.last))
        return [e.text for e in ranked]

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "limit": self.limit,
            "clock": self.clock,
            "version": self.version,
            "curator": self.history[-1]["curator"] if self.history else None,
            "entries": [{**vars(e), "evidence": list(e.evidence)} for e in self.entries],
            "history": self.history,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Playbook:
        """Read back :meth:`to_json` (a file from before versions has version 0)."""
        entries = [
            PlaybookEntry(**{**e, "evidence": list(e.get("evidence", []))})
            for e in data.get("entries", [])
        ]
        return cls(
            limit=int(data.get("limit", 20)),
            entries=entries,
            clock=int(data.get("clock", 0)),
            version=int(data.get("version", 0)),
            history=[dict(h) for h in data.get("history", [])],
        )

    @classmethod
    def load(cls, path: str | Path, limit: int = 20) -> Playbook:
        """The playbook saved at ``path`` (its limit set to ``limit``), or the default one."""
        file = Path(path)
        if not file.exists():
            return cls.default(limit)
        book = cls.from_json(read_json(file))
        book.limit = limit
        while len(book.entries) > limit:
            book.entries.remove(min(book.entries, key=lambda e: (e.score, e.last, e.added)))
        return book

    def save(self, path: str | Path) -> None:
        """Write the playbook as indented JSON (atomically)."""
        write_json(path, self.to_json())


_FAILURE_LESSONS: tuple[tuple[str, str, str], ...] = (
    # (key, substring of a problem line, lesson)
    ("slots", "slots", "Return exactly one slot text per [Input Slot N] in the template, in order."),
    ("rng", "not deterministic", DEFAULT_LESSONS[0][1]),
    ("degenerate", "of instances", DEFAULT_LESSONS[1][1]),
    ("runtime", "budget", "Keep generation plus every validator within a few milliseconds: "
     "bound brute force by the instance size."),
    ("sandbox", "forbidden", "Use only the allowed standard-library imports; never touch files, "
     "sockets or processes."),
    ("consensus", "consensus:", DEFAULT_LESSONS[3][1]),
    ("blind", "blind_review:", "When blind solvers fail, make rules, tie-breaks and the answer "
     "format explicit, and check the validator itself, before blaming the solver."),
    ("code", "failed in the sandbox", "Smoke-test the generator and validator at difficulties "
     "1 and 10 mentally: no exceptions, JSON-only inputs."),
)  # fmt: skip
_REVIEW_LESSONS = {
    "well_posed": "Make every question complete and consistent, with exactly one right answer.",
    "unambiguous_answer_format": DEFAULT_LESSONS[2][1],
    "answer_derivable": "Put every fact the answer depends on into the question text.",
    "difficulty_scaling": "Grow difficulty through size, constraints or steps, not wording.",
    "no_leaked_answer": "Never state or trivially reveal the answer in the question.",
}


def failure_lessons(problems: Iterable[str]) -> list[tuple[str, str]]:
    """The playbook lessons (key, text) that a failed round's problem lines point to."""
    return [(key, text) for key, text, _ in lesson_evidence(problems)]


def lesson_evidence(problems: Iterable[str]) -> list[tuple[str, str, str]]:
    """:func:`failure_lessons` with, for each lesson, the first problem line it came from."""
    out: dict[str, tuple[str, str]] = {}
    for line in problems:
        for key, needle, text in _FAILURE_LESSONS:
            if needle in line:
                out.setdefault(key, (text, line))
        for criterion, text in _REVIEW_LESSONS.items():
            if line.startswith(f"review: {criterion}:"):
                out.setdefault(f"review.{criterion}", (text, line))
    return [(key, text, line) for key, (text, line) in out.items()]
