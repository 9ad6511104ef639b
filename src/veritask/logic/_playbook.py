"""The experience playbook (SSLogic's): a bounded list of short lessons, kept as JSON.

:class:`Playbook` is the list and its eviction rule, read and written atomically;
:func:`failure_lessons` maps a failed round's problem lines to fixed lessons (no model call).
The policy is described in design note 0009.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veritask._util import read_json
from veritask.logic._records import write_json


@dataclass
class PlaybookEntry:
    """One lesson: a stable key, its text, how often it recurred, and when it was added/used."""

    key: str
    text: str
    score: int = 1
    added: int = 0
    last: int = 0


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

    @classmethod
    def default(cls, limit: int = 20) -> Playbook:
        """A playbook holding the built-in starter lessons."""
        book = cls(limit=limit)
        for key, text in DEFAULT_LESSONS:
            book.add(key, text)
        return book

    def add(self, key: str, text: str) -> None:
        """Add or reinforce a lesson (see the class docstring for the eviction rule)."""
        self.clock += 1
        text = " ".join(text.split())[:300]
        for entry in self.entries:
            if entry.key == key:
                entry.text, entry.score, entry.last = text, entry.score + 1, self.clock
                return
        while self.entries and len(self.entries) >= self.limit:
            worst = min(self.entries, key=lambda e: (e.score, e.last, e.added))
            self.entries.remove(worst)
        if self.limit > 0:
            self.entries.append(PlaybookEntry(key, text, 1, self.clock, self.clock))

    def lessons(self) -> list[str]:
        """The lessons, most useful first."""
        ranked = sorted(self.entries, key=lambda e: (-e.score, -e.last))
        return [e.text for e in ranked]

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "limit": self.limit,
            "clock": self.clock,
            "entries": [vars(e).copy() for e in self.entries],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Playbook:
        """Read back :meth:`to_json`."""
        entries = [PlaybookEntry(**e) for e in data.get("entries", [])]
        return cls(
            limit=int(data.get("limit", 20)), entries=entries, clock=int(data.get("clock", 0))
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
    out: dict[str, str] = {}
    for line in problems:
        for key, needle, text in _FAILURE_LESSONS:
            if needle in line:
                out.setdefault(key, text)
        for criterion, text in _REVIEW_LESSONS.items():
            if line.startswith(f"review: {criterion}:"):
                out.setdefault(f"review.{criterion}", text)
    return list(out.items())
