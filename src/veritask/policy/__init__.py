"""Domain specs and their compilation into SQL, tool schemas and wiki policy text."""

from veritask.policy._actor import actor_table
from veritask.policy._bounds import check_bounds
from veritask.policy._dual import (
    USER_TOOL_CODE,
    escalation_tool,
    is_user_tool,
    user_tool_names,
)
from veritask.policy._dump import dump_spec
from veritask.policy._importer import import_sql
from veritask.policy._issues import SpecError, SpecIssue
from veritask.policy._load import (
    SpecLines,
    load_spec,
    load_spec_with_lines,
    parse_spec,
    parse_spec_with_lines,
    spec_from_data,
)
from veritask.policy._seed_files import copy_seed_files, write_seed_file
from veritask.policy._spec import (
    Call,
    Column,
    DomainSpec,
    Effect,
    Escalation,
    EscalationReason,
    Example,
    Lifecycle,
    RowExpectation,
    Rule,
    Service,
    Table,
    Threshold,
    Transaction,
    UserTools,
    Wiki,
)
from veritask.policy._sql import RAISE_PATTERN, CompiledSQL, compile_sql, quote_ident, table_order
from veritask.policy._tools import Param, ToolSpec, argument_schema, build_tools, openai_tools
from veritask.policy._wiki import render_wiki

__all__ = [
    "RAISE_PATTERN",
    "USER_TOOL_CODE",
    "Call",
    "Column",
    "CompiledSQL",
    "DomainSpec",
    "Effect",
    "Escalation",
    "EscalationReason",
    "Example",
    "Lifecycle",
    "Param",
    "RowExpectation",
    "Rule",
    "Service",
    "SpecError",
    "SpecIssue",
    "SpecLines",
    "Table",
    "Threshold",
    "ToolSpec",
    "Transaction",
    "UserTools",
    "Wiki",
    "actor_table",
    "argument_schema",
    "build_tools",
    "check_bounds",
    "compile_sql",
    "copy_seed_files",
    "dump_spec",
    "escalation_tool",
    "import_sql",
    "is_user_tool",
    "load_spec",
    "load_spec_with_lines",
    "openai_tools",
    "parse_spec",
    "parse_spec_with_lines",
    "quote_ident",
    "render_wiki",
    "spec_from_data",
    "table_order",
    "user_tool_names",
    "write_seed_file",
]
