"""A JSONL file as a unit store: one line per finished unit, appended as the unit finishes.

A line is a unit's artifact. A run killed mid-write leaves at most one torn last line; opening
the store drops it (and any line that does not parse), so a rerun sees whole units only. When a
run completes, ``finish`` rewrites the file atomically in unit order, so an interrupted and
resumed run ends with the same bytes as an uninterrupted one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from veritask._util import write_lines_atomic

KeyOf = Callable[[str], str | None]
"""The unit id of a line, or None when the line is not a whole record."""


class JsonlUnits:
    """The finished units of a JSONL output file, by unit id (the first line of an id wins)."""

    def __init__(self, path: Path, key_of: KeyOf) -> None:
        self.path = Path(path)
        self.key_of = key_of
        self.lines: dict[str, str] = {}
        self._load()

    def _load(self) -> None:
        if not self.path.exists():
            return
        raw = self.path.read_text(encoding="utf-8").splitlines(keepends=True)
        kept: list[str] = []
        for line in raw:
            key = self.key_of(line)
            if key is None or key in self.lines:
                continue
            self.lines[key] = line if line.endswith("\n") else line + "\n"
            kept.append(self.lines[key])
        if kept != raw:
            write_lines_atomic(self.path, (line.encode("utf-8") for line in kept))

    def __contains__(self, unit_id: object) -> bool:
        return unit_id in self.lines

    def append(self, unit_id: str, line: str) -> None:
        """Record one finished unit (one line, flushed before returning)."""
        text = line if line.endswith("\n") else line + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(text)
        self.lines.setdefault(unit_id, text)

    def finish(self, order: Sequence[str]) -> None:
        """Rewrite the file atomically with its lines in ``order`` (ids not in ``order`` keep
        their place after them)."""
        rank = {unit_id: i for i, unit_id in enumerate(order)}
        seen = {unit_id: i for i, unit_id in enumerate(self.lines)}
        ids = sorted(self.lines, key=lambda u: (rank.get(u, len(rank)), seen[u]))
        write_lines_atomic(self.path, (self.lines[u].encode("utf-8") for u in ids), durable=True)
