"""The error a spec raises: every problem named by file, line and field."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SpecIssue:
    """One problem in a spec: where it is and what is wrong."""

    path: str
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.field}: {self.message}"


class SpecError(ValueError):
    """A spec failed to parse or validate; ``issues`` lists every problem found."""

    def __init__(self, issues: list[SpecIssue]) -> None:
        self.issues = issues
        super().__init__("invalid domain spec:\n" + "\n".join(f"  {i}" for i in issues))
