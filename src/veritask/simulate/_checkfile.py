"""Checking whole trajectory files: counts per error class, the repaired file, the rejects.

A clean row is written back byte for byte; a repaired row is rebuilt in its own format; a
rejected row goes to ``OUT.rejected.jsonl`` with its reasons. Every row with an issue is logged
to ``OUT.issues.jsonl`` (row number, status, each issue), so every repair is on record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veritask._util import atomic_write_text, repair_untrusted
from veritask.simulate._catalog import ToolCatalog, catalog_from_json
from veritask.simulate._check import ERROR_CLASSES, CheckOptions, CheckResult, Issue, check_turns
from veritask.simulate._formats import (
    FormatError,
    Row,
    dump_record,
    iter_records,
    read_row,
    write_row,
)


@dataclass
class ClassCount:
    """Issues of one class: found, repaired, left unrepaired (rows rejected for them)."""

    found: int = 0
    repaired: int = 0
    rejected: int = 0


@dataclass
class CheckSummary:
    """What a file check found, per row and per error class."""

    rows: int = 0
    clean: int = 0
    repaired: int = 0
    rejected: int = 0
    formats: dict[str, int] = field(default_factory=dict)
    classes: dict[str, ClassCount] = field(
        default_factory=lambda: {c: ClassCount() for c in (*ERROR_CLASSES, "format")}
    )

    def add(self, status: str, issues: list[Issue], fmt: str | None) -> None:
        """Count one row."""
        self.rows += 1
        setattr(self, status, getattr(self, status) + 1)
        if fmt is not None:
            self.formats[fmt] = self.formats.get(fmt, 0) + 1
        for issue in issues:
            count = self.classes[issue.cls]
            count.found += 1
            if issue.repaired:
                count.repaired += 1
            else:
                count.rejected += 1

    def to_json(self) -> dict[str, Any]:
        """The ``simulate check --json`` document (without the output paths)."""
        return {
            "rows": self.rows,
            "clean": self.clean,
            "repaired": self.repaired,
            "rejected": self.rejected,
            "formats": dict(sorted(self.formats.items())),
            "classes": {
                name: {"found": c.found, "repaired": c.repaired, "rejected": c.rejected}
                for name, c in self.classes.items()
            },
        }


@dataclass
class RowOutcome:
    """One row after checking: status, issues, the record to write (None when rejected)."""

    status: str
    issues: list[Issue]
    format: str | None
    output: str | None


def _row_catalog(row: Row, catalog: ToolCatalog | None) -> ToolCatalog:
    if catalog is not None:
        return catalog
    return catalog_from_json(row.tools, "row") if row.tools else ToolCatalog()


def _reparse(source: str) -> tuple[Any, Issue | None]:
    """A line that is not JSON: repaired when json-repair makes a trajectory row of it."""
    fixed = repair_untrusted(source)
    try:
        read_row(fixed)
    except FormatError:
        return None, Issue("format", 0, "the line is not JSON and cannot be repaired", False)
    return fixed, Issue("json_syntax", 0, "the line's JSON was repaired", True)


def check_record(
    source: str,
    record: Any,
    catalog: ToolCatalog | None,
    options: CheckOptions | None = None,
    *,
    text_file: bool = False,
) -> RowOutcome:
    """Check one row of a file (its source text and parsed record)."""
    head: list[Issue] = []
    if record is None:
        record, issue = _reparse(source)
        head = [issue] if issue is not None else []
        if record is None:
            return RowOutcome("rejected", head, None, None)
    try:
        row = read_row(record)
    except FormatError as exc:
        return RowOutcome("rejected", [Issue("format", 0, str(exc), False)], None, None)
    result: CheckResult = check_turns(row.turns, _row_catalog(row, catalog), options)
    issues = head + result.issues
    if any(not i.repaired for i in issues):
        return RowOutcome("rejected", issues, row.format, None)
    if not issues:
        return RowOutcome("clean", [], row.format, source)
    return RowOutcome(
        "repaired", issues, row.format, dump_record(write_row(row, result.turns), text_file)
    )


def check_file(
    path: Path, catalog: ToolCatalog | None, out: Path, options: CheckOptions | None = None
) -> CheckSummary:
    """Check every row of a trajectory file and write the repaired file and its sidecars.

    Args:
        path: The input (JSONL in any supported format, or a ``.txt`` file of text-format
            trajectories separated by ``===`` lines).
        catalog: The tools the trajectories may use; None uses each row's own ``tools``.
        out: The repaired file (clean and repaired rows, in input order). Rejected rows go to
            ``OUT.rejected.jsonl``; every row with issues is logged to ``OUT.issues.jsonl``.
        options: Checker settings.

    Returns:
        Counts per row status, per format and per error class.
    """
    text_file = path.suffix == ".txt"
    summary = CheckSummary()
    kept: list[str] = []
    rejected: list[str] = []
    log: list[str] = []
    for number, (source, record) in enumerate(iter_records(path)):
        outcome = check_record(source, record, catalog, options, text_file=text_file)
        summary.add(outcome.status, outcome.issues, outcome.format)
        if outcome.output is not None:
            kept.append(outcome.output)
        if outcome.issues:
            issues = [i.to_json() for i in outcome.issues]
            log.append(json.dumps({"row": number, "status": outcome.status, "issues": issues}))
        if outcome.status == "rejected":
            reasons = [f"{i.cls}: {i.detail}" for i in outcome.issues if not i.repaired]
            rejected.append(json.dumps({"row": number, "reasons": reasons, "source": source}))
    joiner = f"\n{'==='}\n" if text_file else "\n"
    atomic_write_text(out, joiner.join(kept) + ("\n" if kept else ""))
    atomic_write_text(sidecar(out, "rejected"), "".join(f"{r}\n" for r in rejected))
    atomic_write_text(sidecar(out, "issues"), "".join(f"{r}\n" for r in log))
    return summary


def sidecar(out: Path, kind: str) -> Path:
    """``OUT.<kind>.jsonl`` beside the repaired file."""
    return out.with_name(f"{out.name}.{kind}.jsonl")
