"""Environment sessions over compiled SQLite databases: tools, snapshots and state diffs."""

from veritask.env._build import PAGE_SIZE, RowError, build_image, insert_rows, sql_culprits
from veritask.env._confirm import CONFIRMATION_REQUIRED, ConfirmationGate
from veritask.env._datacalls import INTERRUPT_RETRIES, CallInterrupted, data_calls
from veritask.env._environment import (
    DEFAULT_CALL_TIME_LIMIT,
    CompiledDomain,
    DatabaseError,
    Environment,
)
from veritask.env._examples import (
    EXAMPLE_SECONDS,
    ExampleFailure,
    example_coverage,
    run_example,
    run_spec_examples,
)
from veritask.env._image import NotADatabase, check_image, read_database
from veritask.env._notebook import bind_new_old, evaluate_on_rows
from veritask.env._proximity import DEFAULT_EPS, proximity
from veritask.env._result import ToolError, ToolResult
from veritask.env._rowcheck import RowChecker
from veritask.env._state import (
    Layout,
    Snapshot,
    StateDiff,
    TableDiff,
    TableLayout,
    Tracked,
    diff,
    diff_full,
    distance,
    read_tracked,
)

__all__ = [
    "CONFIRMATION_REQUIRED",
    "DEFAULT_CALL_TIME_LIMIT",
    "DEFAULT_EPS",
    "EXAMPLE_SECONDS",
    "INTERRUPT_RETRIES",
    "PAGE_SIZE",
    "CallInterrupted",
    "CompiledDomain",
    "ConfirmationGate",
    "DatabaseError",
    "Environment",
    "ExampleFailure",
    "Layout",
    "NotADatabase",
    "RowChecker",
    "RowError",
    "Snapshot",
    "StateDiff",
    "TableDiff",
    "TableLayout",
    "ToolError",
    "ToolResult",
    "Tracked",
    "bind_new_old",
    "build_image",
    "check_image",
    "data_calls",
    "diff",
    "diff_full",
    "distance",
    "evaluate_on_rows",
    "example_coverage",
    "insert_rows",
    "proximity",
    "read_database",
    "read_tracked",
    "run_example",
    "run_spec_examples",
    "sql_culprits",
]
