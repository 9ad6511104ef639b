"""AST complexity metrics of a family's code (SSLogic Appendix K).

``measure_source`` reads Python source with the standard ``ast`` and ``tokenize`` modules and
reports lines of code, cyclomatic complexity (per function and in total), loops, loop nesting,
functions and the algorithmic patterns it recognises. ``measure_family`` measures a built-in
family: the functions of its module that its generator, validators, checker and size measure
reach, so the five families sharing a module each get their own figures.

Pattern detection is a heuristic over the syntax tree; each pattern is documented on
``PATTERNS``.
"""

from __future__ import annotations

import ast
import inspect
import io
import tokenize
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from veritask.logic._family import Family
from veritask.logic._halstead import Halstead, cognitive_complexity, halstead

PATTERNS: dict[str, str] = {
    "recursion": "a function calls itself, directly or through other functions of the module",
    "brute_force": "itertools.product / permutations / combinations enumerate a search space",
    "bfs": "a queue: deque.popleft() or list.pop(0)",
    "dfs": "a stack: x.pop() inside a `while x:` loop that also pushes onto x",
    "backtracking": "a recursive call inside a loop of a function that also undoes state"
    " (pop / remove / discard / del)",
    "memoization": "functools.cache or functools.lru_cache on a function",
    "dynamic_programming": "a table entry assigned, inside a loop, from another entry of the"
    " same table (dp[i] = dp[i - 1] + ...)",
    "sorting": "sorted(...) or .sort(...)",
    "priority_queue": "heapq",
    "union_find": "parent links walked to a root: `while parent[x] != x`",
    "graph_adjacency": "adjacency maps: defaultdict(list | set), {k: [] for ...},"
    " .setdefault(k, [])",
}
"""The patterns ``measure_source`` detects, with how each is recognised."""

_BRUTE = {"product", "permutations", "combinations", "combinations_with_replacement"}
_CACHES = {"functools.cache", "functools.lru_cache"}
_UNDO = {"pop", "remove", "discard"}
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_NON_CODE = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class ComplexityMetrics:
    """Complexity figures of one piece of code.

    Attributes:
        name: What was measured (a family id or a file name).
        loc: Lines of code: not blank, not only a comment, not part of a docstring.
        cyclomatic: Total cyclomatic complexity: the sum over functions (decision points + 1
            each), plus the decision points outside any function.
        cyclomatic_by_function: Qualified function name (``outer.inner``) -> its complexity.
        loops: ``for`` and ``while`` statements plus comprehension ``for`` clauses.
        max_loop_depth: Deepest lexical nesting of loops inside one function.
        functions: Function definitions, nested ones included (lambdas are not counted).
        patterns: Detected algorithmic patterns (keys of ``PATTERNS``), sorted.
        scope: ``"module"`` (the whole source) or ``"family"`` (the functions reached from the
            family's callables).
        halstead: Halstead's counts over the measured code (see ``veritask.logic._halstead``).
        cognitive_by_function: Function name -> cognitive complexity (top-level functions and
            methods of the measured code).
    """

    name: str
    loc: int
    cyclomatic: int
    cyclomatic_by_function: Mapping[str, int]
    loops: int
    max_loop_depth: int
    functions: int
    patterns: tuple[str, ...]
    scope: str = "module"
    halstead: Halstead = field(default_factory=lambda: Halstead(0, 0, 0, 0))
    cognitive_by_function: Mapping[str, int] = field(default_factory=dict)

    @property
    def cognitive(self) -> int:
        """Total cognitive complexity over the measured functions."""
        return sum(self.cognitive_by_function.values())

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict with the attribute names as keys."""
        return {
            "name": self.name,
            "scope": self.scope,
            "loc": self.loc,
            "cyclomatic": self.cyclomatic,
            "cyclomatic_by_function": dict(self.cyclomatic_by_function),
            "loops": self.loops,
            "max_loop_depth": self.max_loop_depth,
            "functions": self.functions,
            "patterns": list(self.patterns),
            "cognitive": self.cognitive,
            "cognitive_by_function": dict(self.cognitive_by_function),
            "halstead": self.halstead.to_json(),
        }


# --- lines of code ---------------------------------------------------------------------------


def _code_lines(source: str) -> set[int]:
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in _NON_CODE:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return lines


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, *_FUNCS)) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def _span(node: ast.stmt) -> set[int]:
    start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return set(range(start, (node.end_lineno or node.lineno) + 1))


# --- cyclomatic complexity and loops ---------------------------------------------------------


def _decisions(node: ast.AST) -> int:
    if isinstance(node, (ast.If, ast.IfExp, *_LOOPS, ast.ExceptHandler, ast.match_case)):
        return 1
    if isinstance(node, ast.comprehension):
        return 1 + len(node.ifs)
    if isinstance(node, ast.BoolOp):
        return len(node.values) - 1
    return 0


def _own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes under ``node``, not descending into nested functions or classes."""
    for child in ast.iter_child_nodes(node):
        yield child
        if not isinstance(child, (*_FUNCS, ast.ClassDef)):
            yield from _own_nodes(child)


_COMPS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


def _loop_depth(node: ast.AST, depth: int = 0) -> int:
    """Deepest loop nesting under ``node``; each ``for`` clause of a comprehension nests the
    clauses after it and the element."""
    if isinstance(node, _COMPS):
        return _comprehension_depth(node, depth)
    deepest = depth
    for child in ast.iter_child_nodes(node):
        if isinstance(child, _FUNCS):
            continue  # a nested function's loops are measured on their own
        step = 1 if isinstance(child, _LOOPS) else 0
        deepest = max(deepest, _loop_depth(child, depth + step))
    return deepest


def _comprehension_depth(
    node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp, depth: int
) -> int:
    deepest = depth
    for level, gen in enumerate(node.generators):
        deepest = max(deepest, _loop_depth(gen.iter, depth + level))
        for test in gen.ifs:
            deepest = max(deepest, _loop_depth(test, depth + level + 1))
    inner = depth + len(node.generators)
    parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
    return max([deepest, inner, *(_loop_depth(p, inner) for p in parts)])


def _functions(nodes: Iterable[ast.AST], prefix: str = "") -> Iterator[tuple[str, FunctionNode]]:
    """Every function under ``nodes`` with its qualified name, nested ones included."""
    for node in nodes:
        if isinstance(node, _FUNCS):
            name = f"{prefix}{node.name}"
            yield name, node
            yield from _functions(ast.iter_child_nodes(node), f"{name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(ast.iter_child_nodes(node), f"{prefix}{node.name}.")
        else:
            yield from _functions(ast.iter_child_nodes(node), prefix)


# --- names, imports and the call graph -------------------------------------------------------


def _imports(tree: ast.AST) -> dict[str, str]:
    """Local name -> qualified name, for every import anywhere in the tree."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _dotted(node: ast.AST, imports: Mapping[str, str]) -> str | None:
    """``itertools.product`` for ``it.product`` after ``import itertools as it``, and so on."""
    if isinstance(node, ast.Name):
        return imports.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, imports)
        return f"{base}.{node.attr}" if base else None
    return None


def _referenced(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _reachable(top: Mapping[str, FunctionNode], roots: Iterable[str]) -> list[str]:
    """Top-level function names reached from ``roots`` through name references, in order."""
    seen: set[str] = set()
    todo = [r for r in roots if r in top]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(_referenced(top[name]) & top.keys())
    return [name for name in top if name in seen]


# --- patterns --------------------------------------------------------------------------------


def _method_calls(nodes: Iterable[ast.AST]) -> Iterator[tuple[str | None, str, ast.Call]]:
    """``(receiver name or None, method, call)`` for every ``x.method(...)`` call."""
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            receiver = node.func.value.id if isinstance(node.func.value, ast.Name) else None
            yield receiver, node.func.attr, node


def _calls_self(fn: FunctionNode) -> list[ast.Call]:
    """Calls of ``fn`` by its own name, or as ``self.name`` / ``cls.name``."""
    return [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.Call)
        and (
            (isinstance(n.func, ast.Name) and n.func.id == fn.name)
            or (
                isinstance(n.func, ast.Attribute)
                and n.func.attr == fn.name
                and isinstance(n.func.value, ast.Name)
                and n.func.value.id in ("self", "cls")
            )
        )
    ]


def _in_loop(fn: FunctionNode, target: ast.AST) -> bool:
    return any(
        isinstance(loop, (*_LOOPS, *_COMPS)) and any(n is target for n in ast.walk(loop))
        for loop in ast.walk(fn)
    )


def _is_backtracking(fn: FunctionNode) -> bool:
    own = list(ast.walk(fn))
    undoes = any(m in _UNDO for _, m, _ in _method_calls(own)) or any(
        isinstance(n, ast.Delete) for n in own
    )
    return undoes and any(_in_loop(fn, call) for call in _calls_self(fn))


def _recursive(functions: Mapping[str, FunctionNode], top: Mapping[str, FunctionNode]) -> bool:
    """A measured function calls itself, or reaches itself through top-level functions."""
    if any(_calls_self(fn) for fn in functions.values()):
        return True
    return any(
        name in _reachable(top, _referenced(top[name]) & top.keys())
        for name in functions
        if name in top
    )


def _has_table_recurrence(fn: FunctionNode) -> bool:
    derived = _derived_from_tables(fn)
    return any(_is_table_recurrence(n, derived) and _in_loop(fn, n) for n in ast.walk(fn))


def _queue_or_stack(nodes: list[ast.AST]) -> set[str]:
    found: set[str] = set()
    for _, method, call in _method_calls(nodes):
        first = call.args[0] if call.args else None
        if method == "popleft" or (
            method == "pop" and isinstance(first, ast.Constant) and first.value == 0
        ):
            found.add("bfs")
    for loop in (n for n in nodes if isinstance(n, ast.While)):
        stacks = _referenced(loop.test)
        calls = list(_method_calls(ast.walk(loop)))
        popped = {r for r, m, c in calls if m == "pop" and not c.args and r in stacks}
        if popped & {r for r, m, _ in calls if m in ("append", "extend")}:
            found.add("dfs")
    return found


def _subscript_base(node: ast.AST) -> str | None:
    while isinstance(node, ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _table_reads(value: ast.AST) -> Iterator[ast.Subscript]:
    """The outermost subscripts read in ``value`` (``t[i]`` of ``t[i][j]`` is left out)."""
    inner = {id(n.value) for n in ast.walk(value) if isinstance(n, ast.Subscript)}
    for n in ast.walk(value):
        if isinstance(n, ast.Subscript) and id(n) not in inner:
            yield n


def _derived_from_tables(fn: FunctionNode) -> dict[str, set[str]]:
    """Local name -> the tables its assignments read (``cand = best[v - c] + 1`` -> best)."""
    derived: dict[str, set[str]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                reads = {_subscript_base(n) for n in _table_reads(node.value)}
                derived.setdefault(target.id, set()).update(r for r in reads if r)
    return derived


def _is_table_recurrence(node: ast.AST, derived: Mapping[str, set[str]]) -> bool:
    """``t[i] = f(t[j], ...)`` or ``t[i] += t[j]`` with ``t[j]`` another entry of ``t`` whose
    index does not itself read ``t`` (that would be union-find's ``p[a] = p[p[a]]``), or read
    through a local name computed from ``t``."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target, value = node.targets[0], node.value
    elif isinstance(node, ast.AugAssign):
        target, value = node.target, node.value
    else:
        return False
    base = _subscript_base(target)
    if base is None or not isinstance(target, ast.Subscript):
        return False
    if any(base in derived.get(name, ()) for name in _referenced(value) - _referenced(target)):
        return True
    return any(
        _subscript_base(n) == base
        and ast.unparse(n) != ast.unparse(target)
        and base not in _referenced(n.slice)
        for n in _table_reads(value)
    )


def _is_union_find(node: ast.AST) -> bool:
    """``while p[x] != x`` (or ``x != p[x]``): walking parent links to a root."""
    if not (isinstance(node, ast.While) and isinstance(node.test, ast.Compare)):
        return False
    sides = [node.test.left, *node.test.comparators]
    if len(sides) != 2 or not isinstance(node.test.ops[0], ast.NotEq):
        return False
    texts = [ast.unparse(side) for side in sides]
    return any(
        isinstance(side, ast.Subscript) and ast.unparse(side.slice) == texts[1 - i]
        for i, side in enumerate(sides)
    )


def _is_adjacency(node: ast.AST, imports: Mapping[str, str]) -> bool:
    empty = (ast.List, ast.Set)
    if isinstance(node, ast.Call):
        name = _dotted(node.func, imports)
        first = node.args[0] if node.args else None
        if name == "collections.defaultdict" and isinstance(first, ast.Name):
            return first.id in ("list", "set")
        if isinstance(node.func, ast.Attribute) and node.func.attr == "setdefault":
            second = node.args[1] if len(node.args) > 1 else None
            return (isinstance(second, empty) and not second.elts) or _is_empty_call(second)
    if isinstance(node, ast.DictComp):
        value = node.value
        return (isinstance(value, ast.List) and not value.elts) or _is_empty_call(value)
    return False


def _is_empty_call(node: ast.AST | None) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("list", "set")
        and not node.args
    )


def _call_patterns(nodes: list[ast.AST], imports: Mapping[str, str]) -> set[str]:
    found: set[str] = set()
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func, imports) or ""
        if name.startswith("itertools.") and name.split(".")[-1] in _BRUTE:
            found.add("brute_force")
        if name == "sorted" or (isinstance(node.func, ast.Attribute) and node.func.attr == "sort"):
            found.add("sorting")
        if name.startswith("heapq."):
            found.add("priority_queue")
    return found


def _patterns(
    nodes: list[ast.AST],
    functions: Mapping[str, FunctionNode],
    top: Mapping[str, FunctionNode],
    imports: Mapping[str, str],
) -> tuple[str, ...]:
    """Patterns in ``nodes`` (every measured node) and ``functions`` (the measured ones)."""
    found = _call_patterns(nodes, imports) | _queue_or_stack(nodes)
    if _recursive(functions, top):
        found.add("recursion")
    if any(_is_backtracking(fn) for fn in functions.values()):
        found.add("backtracking")
    decorators = [
        d.func if isinstance(d, ast.Call) else d
        for fn in functions.values()
        for d in fn.decorator_list
    ]
    if any(_dotted(d, imports) in _CACHES for d in decorators):
        found.add("memoization")
    if any(_has_table_recurrence(fn) for fn in functions.values()):
        found.add("dynamic_programming")
    if any(_is_union_find(n) for n in nodes):
        found.add("union_find")
    if any(_is_adjacency(n, imports) for n in nodes):
        found.add("graph_adjacency")
    return tuple(sorted(found))


# --- entry points ----------------------------------------------------------------------------


def measure_source(
    source: str, *, name: str = "<source>", roots: Iterable[str] | None = None
) -> ComplexityMetrics:
    """Measure Python source.

    Args:
        source: The code, for example a family module stored as a file.
        name: What to call it in the result.
        roots: When given, only the top-level functions these names reach (through any
            reference to a top-level function's name) are measured, and the scope is
            ``"family"``; module-level code outside them is left out. Unknown names are
            ignored; when none is known the whole source is measured.

    Returns:
        The metrics.

    Raises:
        SyntaxError: When the source does not parse.
    """
    tree = ast.parse(source)
    top = {n.name: n for n in tree.body if isinstance(n, _FUNCS)}
    chosen = _reachable(top, roots) if roots is not None else []
    nodes: list[ast.stmt] = [top[n] for n in chosen] if chosen else list(tree.body)
    functions = dict(_functions(nodes))
    code = _code_lines(source) - _docstring_lines(tree)
    if chosen:
        code &= set().union(*(_span(n) for n in nodes))
    outside = 0 if chosen else sum(_decisions(n) for n in _own_nodes(tree))
    by_function = {q: 1 + sum(_decisions(n) for n in _own_nodes(fn)) for q, fn in functions.items()}
    walked = [n for root in nodes for n in ast.walk(root)]
    measured = (
        "\n\n".join(ast.get_source_segment(source, n) or "" for n in nodes) if chosen else source
    )
    return ComplexityMetrics(
        name=name,
        loc=len(code),
        cyclomatic=sum(by_function.values()) + outside,
        cyclomatic_by_function=by_function,
        loops=sum(isinstance(n, (*_LOOPS, ast.comprehension)) for n in walked),
        max_loop_depth=max(
            _loop_depth(n) for n in [*functions.values(), *([] if chosen else [tree])]
        ),
        functions=len(functions),
        patterns=_patterns(walked, functions, top, _imports(tree)),
        scope="family" if chosen else "module",
        halstead=halstead(measured),
        cognitive_by_function=cognitive_complexity(measured),
    )


def family_roots(family: Family) -> list[str]:
    """Names of the family's generator, validators, checker and size measure that are
    module-level functions of the generator's module (lambdas and foreign functions are left
    out)."""
    module = inspect.getmodule(family.generate)
    candidates: list[Callable[..., Any]] = [family.generate, *family.validators]
    candidates += [fn for fn in (family.checker, family.size) if fn is not None]
    return [
        fn.__name__
        for fn in candidates
        if inspect.getmodule(fn) is module and getattr(module, fn.__name__, None) is fn
    ]


def measure_family(family: Family) -> ComplexityMetrics:
    """Measure a family: for a built-in, the functions of its module reached from its generator,
    validators, checker and size measure (the whole module when none of them is a module-level
    function); for a family file, the whole file.

    Raises:
        OSError / TypeError: When the module's source cannot be found.
    """
    source = getattr(family, "source", None)
    if isinstance(source, str):  # a family file: its code is measured, never imported
        return measure_source(source, name=family.id)
    module = inspect.getmodule(family.generate)
    if module is None:
        raise TypeError(f"{family.id}: cannot find the module of its generator")
    return measure_source(
        inspect.getsource(module), name=family.id, roots=family_roots(family) or None
    )
