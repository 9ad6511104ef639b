"""The shape rules of the code base hold: small modules and functions (ARCHITECTURE.md, issue of
the re-floor). Complexity and unused arguments are ruff's (C901, ARG); the floors are the
import-linter contract in pyproject.toml, run by ``make lint``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "veritask"
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 60
MODULES = sorted(SRC.rglob("*.py"))


def test_the_source_tree_is_found() -> None:
    assert len(MODULES) > 100


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_modules_and_functions_stay_small(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_MODULE_LINES, (
        f"{path.name} is over {MAX_MODULE_LINES} lines"
    )
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"
