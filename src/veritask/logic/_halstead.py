"""Halstead measures, cognitive complexity and measured solve time of a family's code.

These complement :mod:`veritask.logic._complexity` (lines, cyclomatic complexity, loops,
patterns). Both static measures are computed from the standard ``ast`` and ``tokenize``
modules, the same way the rest of the metrics are: the well-known libraries for them (radon,
cognitive-complexity) are not dependencies of the project, and each measure is a short,
documented walk over the syntax tree.

- **Halstead** (per the 1977 definitions): operators are operator and keyword tokens and
  punctuation, operands are names, numbers and strings; ``n1``/``n2`` distinct and
  ``N1``/``N2`` total counts give vocabulary ``n1 + n2``, length ``N1 + N2``, volume
  ``N log2 n``, difficulty ``n1 / 2 * N2 / n2`` and effort ``difficulty * volume``.
- **Cognitive complexity** (G. Ann Campbell, SonarSource, 2017): +1 for each ``if``,
  ``elif``, ``else``, conditional expression, loop, ``except``, ``match`` and each run of
  a boolean operator; the structures that nest (``if``, conditional expressions, loops,
  ``except``, ``match``, nested functions and lambdas) add their nesting depth too;
  recursion (a function calling itself) adds 1.
- **Solve time**: CPU time of each validator on instances generated at levels 1, 5 and 10.
"""

from __future__ import annotations

import ast
import io
import keyword
import math
import time
import tokenize
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from veritask.logic._family import Family

_OPERAND_TOKENS = {tokenize.NUMBER, tokenize.STRING}
_SKIP_TOKENS = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}
_NESTING = (ast.If, ast.IfExp, ast.For, ast.AsyncFor, ast.While, ast.ExceptHandler, ast.Match)
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


@dataclass(frozen=True)
class Halstead:
    """Halstead's measures of one piece of code.

    Attributes:
        distinct_operators: n1.
        distinct_operands: n2.
        operators: N1.
        operands: N2.
    """

    distinct_operators: int
    distinct_operands: int
    operators: int
    operands: int

    @property
    def vocabulary(self) -> int:
        """n1 + n2."""
        return self.distinct_operators + self.distinct_operands

    @property
    def length(self) -> int:
        """N1 + N2."""
        return self.operators + self.operands

    @property
    def volume(self) -> float:
        """length * log2(vocabulary)."""
        return self.length * math.log2(self.vocabulary) if self.vocabulary > 1 else 0.0

    @property
    def difficulty(self) -> float:
        """n1 / 2 * N2 / n2."""
        if not self.distinct_operands:
            return 0.0
        return self.distinct_operators / 2 * self.operands / self.distinct_operands

    @property
    def effort(self) -> float:
        """difficulty * volume."""
        return self.difficulty * self.volume

    def to_json(self) -> dict[str, Any]:
        """Counts and derived measures, rounded to two decimals."""
        return {
            "n1": self.distinct_operators,
            "n2": self.distinct_operands,
            "N1": self.operators,
            "N2": self.operands,
            "vocabulary": self.vocabulary,
            "length": self.length,
            "volume": round(self.volume, 2),
            "difficulty": round(self.difficulty, 2),
            "effort": round(self.effort, 2),
        }


def halstead(source: str) -> Halstead:
    """Halstead's counts over the tokens of ``source`` (docstrings count as operands).

    Raises:
        tokenize.TokenError / SyntaxError: When the source does not tokenize.
    """
    operators: Counter[str] = Counter()
    operands: Counter[str] = Counter()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in _SKIP_TOKENS:
            continue
        name = tok.type == tokenize.NAME and not keyword.iskeyword(tok.string)
        if name or tok.type in _OPERAND_TOKENS:
            operands[tok.string] += 1
        else:
            operators[tok.string] += 1
    return Halstead(len(operators), len(operands), sum(operators.values()), sum(operands.values()))


# --- cognitive complexity --------------------------------------------------------------------


def _bool_runs(node: ast.AST) -> int:
    """Runs of one boolean operator in an expression: ``a and b and c`` is 1, ``a and b or c``
    is 2 (each BoolOp node is one run; nested BoolOps of another operator start a new one)."""
    runs = 0
    for child in ast.walk(node):
        if isinstance(child, ast.BoolOp):
            runs += 1
    return runs


def _own_bool_runs(node: ast.AST) -> int:
    """Boolean runs in the expressions directly on ``node`` (its test or iterator)."""
    parts = [getattr(node, name, None) for name in ("test", "iter", "subject")]
    return sum(_bool_runs(p) for p in parts if isinstance(p, ast.AST))


def _walk_cognitive(nodes: Iterable[ast.AST], nesting: int, name: str) -> int:
    score = 0
    for node in nodes:
        score += _node_cognitive(node, nesting, name)
    return score


def _node_cognitive(node: ast.AST, nesting: int, name: str) -> int:
    if isinstance(node, _FUNCS):
        # a nested function or lambda nests what it contains
        body = node.body if isinstance(node.body, list) else [node.body]
        return _walk_cognitive(body, nesting + 1, name)
    if isinstance(node, ast.If):
        score = 1 + nesting + _own_bool_runs(node)
        score += _walk_cognitive(node.body, nesting + 1, name)
        orelse = node.orelse
        if len(orelse) == 1 and isinstance(orelse[0], ast.If):  # elif: +1, no nesting bonus
            return score + _elif_cognitive(orelse[0], nesting, name)
        if orelse:
            score += 1 + _walk_cognitive(orelse, nesting + 1, name)
        return score
    if isinstance(node, _NESTING):
        score = 1 + nesting + _own_bool_runs(node)
        children = [c for c in ast.iter_child_nodes(node) if c is not getattr(node, "test", None)]
        return score + _walk_cognitive(children, nesting + 1, name)
    score = 0
    if isinstance(node, ast.BoolOp):
        return _bool_runs(node)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
        score += 1  # recursion
    return score + _walk_cognitive(ast.iter_child_nodes(node), nesting, name)


def _elif_cognitive(node: ast.If, nesting: int, name: str) -> int:
    score = 1 + _own_bool_runs(node) + _walk_cognitive(node.body, nesting + 1, name)
    orelse = node.orelse
    if len(orelse) == 1 and isinstance(orelse[0], ast.If):
        return score + _elif_cognitive(orelse[0], nesting, name)
    if orelse:
        score += 1 + _walk_cognitive(orelse, nesting + 1, name)
    return score


def cognitive_complexity(source: str) -> dict[str, int]:
    """Cognitive complexity of each top-level function (and method) of ``source``.

    Raises:
        SyntaxError: When the source does not parse.
    """
    tree = ast.parse(source)
    out: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    out[f"{node.name}.{item.name}"] = _walk_cognitive(item.body, 0, item.name)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = _walk_cognitive(node.body, 0, node.name)
    return out


# --- measured solve time ---------------------------------------------------------------------


def solve_times(
    family: Family, levels: Iterable[int] = (1, 5, 10), per_level: int = 5
) -> dict[int, float]:
    """Mean CPU milliseconds of one validator call, per level (over every validator and
    ``per_level`` instances). Instances are drawn with split ``metrics``, so the figures are
    for the same instances on every run."""
    from veritask.logic import make_instance  # the package imports this module

    out: dict[int, float] = {}
    for level in levels:
        insts = [make_instance(family, level, split="metrics", index=i) for i in range(per_level)]
        start = time.process_time()
        calls = 0
        for inst in insts:
            for validator in family.validators:
                validator(dict(inst.inputs))
                calls += 1
        out[level] = round((time.process_time() - start) * 1000 / max(calls, 1), 3)
    return out
