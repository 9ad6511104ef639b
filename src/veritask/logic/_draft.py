"""Parsing the evolution agent's replies: the family file draft and the pool validators.

:func:`parse_draft` reads the agent's family file (and its optional lessons);
:func:`parse_validator` reads one independent validator and wraps it as ``solution_pool_<k>``;
:func:`assemble_family` appends the pool to the draft. Every parser raises ``ValueError`` with a
reason that goes back to the model for repair.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from veritask._util import loads_untrusted
from veritask.logic._filefamily import (
    FamilySpec,
    check_source_bounds,
    is_validator_name,
    parse_family_source,
)
from veritask.model import extract_block

POOL_PREFIX = "solution_pool_"
"""Names of the validators the validator builder writes (``solution_pool_1``, ...)."""
_POOL_ARG = "pool_inputs__"


@dataclass(frozen=True)
class Draft:
    """An agent's family file as parsed: raw reply, file text, declared spec, lessons."""

    text: str
    source: str
    spec: FamilySpec
    lessons: tuple[str, ...] = ()


def _lessons(text: str) -> tuple[str, ...]:
    block = extract_block(text, ("json",))
    if block is None:
        return ()
    try:
        data = loads_untrusted(block)
    except ValueError as exc:
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise ValueError(f"the ```json lessons block is not valid JSON: {why}") from None
    lessons = data.get("lessons") if isinstance(data, dict) else None
    if not isinstance(lessons, list) or not all(isinstance(x, str) for x in lessons):
        raise ValueError('the ```json block must be {"lessons": ["...", ...]}')
    return tuple(" ".join(x.split())[:300] for x in lessons[:3] if x.strip())


def parse_draft(text: str, taken: Iterable[str] = ()) -> Draft:
    """Parse the agent's reply: one ```python family file (one validator is enough here, the
    pool adds more) and optional lessons.

    Raises:
        ValueError: Why the reply cannot be used (sent back to the agent for repair).
    """
    code = extract_block(text, ("python", "py"))
    if code is None:
        raise ValueError("no ```python block holding the family file")
    spec = parse_family_source(code, "family file", min_validators=1)
    _compiles(code, "the family file")
    if spec.id in set(taken):
        raise ValueError(f"the id {spec.id!r} is already taken; choose a new id")
    reserved = [n for n in spec.validators if n.startswith(POOL_PREFIX)]
    if reserved:
        raise ValueError(f"the names {reserved} are reserved for the validator pool; rename them")
    return Draft(text, code, spec, _lessons(text))


def _compiles(code: str, what: str) -> None:
    try:
        compile(code, f"<{what}>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise ValueError(f"{what} does not compile (line {exc.lineno}): {exc.msg}") from None


def parse_validator(text: str, k: int = 1) -> str:
    """Parse a validator builder's reply and return it wrapped as ``solution_pool_<k>``.

    Raises:
        ValueError: No python block, source too long or too deeply nested, a syntax error, no
            ``solution(inputs)``, or a ``global`` statement.
    """
    code = extract_block(text, ("python", "py"))
    if code is None:
        raise ValueError("no ```python block holding def solution(inputs)")
    check_source_bounds(code, "the validator")  # before ast.parse: too long or too deep
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise ValueError(f"syntax error at line {exc.lineno}: {exc.msg}") from None
    _compiles(code, "the validator")
    solution = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "solution"]
    if not solution or len(solution[0].args.args) + len(solution[0].args.posonlyargs) != 1:
        raise ValueError("define exactly one top-level function `def solution(inputs):`")
    if any(isinstance(n, ast.Global | ast.Nonlocal) for n in ast.walk(tree)):
        raise ValueError("do not use global or nonlocal statements")
    wrapped = pool_function(tree, k)
    _compiles(wrapped, "the validator")
    return wrapped


def pool_function(tree: ast.Module, k: int) -> str:
    """A validator module as one function ``solution_pool_<k>(inputs)``: its statements become
    the function body (so its helpers cannot clash with the file's), then ``solution`` is
    called."""
    func = ast.parse(f"def {POOL_PREFIX}{k}({_POOL_ARG}):\n    pass").body[0]
    assert isinstance(func, ast.FunctionDef)
    doc = ast.Expr(ast.Constant(f"Independent validator {k}, written without seeing the others."))
    body = [
        node
        for node in tree.body
        if not (isinstance(node, ast.ImportFrom) and node.module == "__future__")
    ]
    call = ast.Call(ast.Name("solution", ast.Load()), [ast.Name(_POOL_ARG, ast.Load())], [])
    func.body = [doc, *body, ast.Return(call)]
    return ast.unparse(ast.fix_missing_locations(func)) + "\n"


def strip_validators(source: str) -> str:
    """The family file without its validator functions (what the validator builder sees)."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    drop: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and is_validator_name(node.name):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            drop.update(range(first - 1, (node.end_lineno or node.lineno)))
    kept = "".join(line for i, line in enumerate(lines) if i not in drop)
    return re.sub(r"\n{4,}", "\n\n\n", kept).strip() + "\n"


def assemble_family(primary: str, pool: Sequence[str]) -> str:
    """The agent's file followed by the pool validators."""
    parts = [primary.rstrip() + "\n"]
    if pool:
        parts.append("# Independent validators, each written without seeing the others.\n")
        parts.extend(pool)
    return "\n\n".join(parts)
