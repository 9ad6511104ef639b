"""Domain specs and their compilation into SQL, tool schemas and wiki policy text."""

from veritask.policy._actor import actor_table
from veritask.policy._bounds import check_bounds
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
    Example,
    Lifecycle,
    RowExpectation,
    Rule,
    Service,
    Table,
    Threshold,
    Transaction,
    Wiki,
)
from veritask.policy._sql import RAISE_PATTERN, CompiledSQL, compile_sql, quote_ident, table_order
from veritask.policy._tools import Param, ToolSpec, argument_schema, build_tools, openai_tools
from veritask.policy._wiki import render_wiki

__all__ = [
    "RAISE_PATTERN",
    "Call",
    "Column",
    "CompiledSQL",
    "DomainSpec",
    "Effect",
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
    "Wiki",
    "actor_table",
    "argument_schema",
    "build_tools",
    "check_bounds",
    "compile_sql",
    "copy_seed_files",
    "dump_spec",
    "import_sql",
    "load_spec",
    "load_spec_with_lines",
    "openai_tools",
    "parse_spec",
    "parse_spec_with_lines",
    "quote_ident",
    "render_wiki",
    "spec_from_data",
    "table_order",
    "write_seed_file",
]
