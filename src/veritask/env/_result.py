"""Structured results of tool calls."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from veritask.policy import ToolSpec


@dataclass(frozen=True)
class ToolError:
    """LOGIGEN's structured error: ``{code, message, violated_rule, hint}``.

    ``violated_rule`` is the id of the spec rule whose trigger rejected the write, or None for
    errors raised before the database was touched (bad arguments, unknown tool) or by the schema.
    """

    code: str
    message: str
    violated_rule: str | None = None
    hint: str = ""

    def to_json(self) -> dict[str, Any]:
        """The error as a JSON-ready dict."""
        return {
            "code": self.code,
            "message": self.message,
            "violated_rule": self.violated_rule,
            "hint": self.hint,
        }


@dataclass(frozen=True)
class ToolResult:
    """The outcome of ``Environment.call``: a result payload or a structured error."""

    tool: str
    ok: bool
    result: Any = None
    error: ToolError | None = None
    state_changed: bool = False

    @classmethod
    def accepted(cls, tool: str, result: Any, state_changed: bool) -> ToolResult:
        """A successful call's result (see ``accepted``)."""
        return accepted(tool, result, state_changed)

    def to_json(self) -> dict[str, Any]:
        """The result as a JSON-ready dict (the ``veritask call --json`` contract)."""
        return {
            "ok": self.ok,
            "result": self.result,
            "error": self.error.to_json() if self.error else None,
            "state_changed": self.state_changed,
        }


_new = object.__new__


def accepted(tool: str, result: Any, state_changed: bool) -> ToolResult:
    """A successful call's result, built without the frozen dataclass's per-field
    ``object.__setattr__`` calls (this runs on every accepted write)."""
    out: ToolResult = _new(ToolResult)
    fields = out.__dict__
    fields["tool"] = tool
    fields["ok"] = True
    fields["result"] = result
    fields["error"] = None
    fields["state_changed"] = state_changed
    return out


def failure(
    tool: str, code: str, message: str, hint: str = "", rule: str | None = None
) -> ToolResult:
    """A failed call that did not change the state."""
    return ToolResult(tool=tool, ok=False, error=ToolError(code, message, rule, hint))


_SCHEMA_ERRORS = [
    (
        "NOT NULL constraint failed",
        "NOT_NULL_VIOLATION",
        "Provide a value for the column named above.",
    ),
    ("CHECK constraint failed", "CHECK_VIOLATION", "A value is outside the allowed range or set."),
    (
        "FOREIGN KEY constraint failed",
        "FOREIGN_KEY_VIOLATION",
        "A referenced row does not exist; look it up first.",
    ),
    ("UNIQUE constraint failed", "UNIQUE_VIOLATION", "A row with these values already exists."),
    ("not authorized", "FORBIDDEN", "This operation is not allowed in this environment."),
]


def schema_error(tool: ToolSpec, exc: sqlite3.Error) -> ToolError:
    """The structured error of a write SQLite refused for its schema (not a rule)."""
    text = str(exc)
    if text == "interrupted":  # SQLITE_INTERRUPT: the progress handler hit the deadline
        return ToolError(
            "TIME_LIMIT_EXCEEDED",
            f"{tool.name}: interrupted after the time limit; the call changed nothing",
            None,
            "The call took too long; narrow it down or try again.",
        )
    for needle, code, hint in _SCHEMA_ERRORS:
        if needle in text:
            return ToolError(code, f"{tool.name}: {text}", None, hint)
    return ToolError("DATABASE_ERROR", f"{tool.name}: {text}", None, "")
