"""AST complexity metrics: exact counts on hand-written code, patterns, built-in families."""

from __future__ import annotations

import textwrap

import pytest

from veritask.logic import PATTERNS, builtin_families, family_roots, measure_family, measure_source

SAMPLE = '''\
"""A module docstring
over two lines."""

import itertools
from collections import deque
from functools import lru_cache


def search(items):
    """Docstring.

    Three lines.
    """
    # a comment line
    best = None
    for combo in itertools.permutations(items):
        for x in combo:  # a trailing comment
            if x > 3 and x < 9:
                best = x
    return best


def bfs(graph, start):
    seen = {start}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in graph[node]:
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return seen


@lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def grid(n):
    total = 0
    for i in range(n):
        total += sum(j for j in range(i) for _ in range(j) if j % 2)
    return total
'''


def test_exact_counts_on_a_known_source() -> None:
    m = measure_source(SAMPLE, name="sample")
    # 3 imports + search 7 + bfs 10 + fib 3 + grid 5 (docstrings, comments, blanks left out)
    assert m.loc == 28
    assert dict(m.cyclomatic_by_function) == {
        "search": 5,  # 1 + for + for + if + `and`
        "bfs": 4,  # 1 + while + for + if
        "fib": 2,  # 1 + conditional expression
        "grid": 5,  # 1 + for + two comprehension clauses + one comprehension `if`
    }
    assert m.cyclomatic == 16
    assert m.loops == 7  # 2 + 2 + 0 + (1 + 2 comprehension clauses)
    assert m.max_loop_depth == 3  # grid: for > for-clause > for-clause
    assert m.functions == 4
    assert m.patterns == ("bfs", "brute_force", "memoization", "recursion")
    assert m.scope == "module"
    assert set(m.to_json()) == {
        "name",
        "scope",
        "loc",
        "cyclomatic",
        "cyclomatic_by_function",
        "loops",
        "max_loop_depth",
        "functions",
        "patterns",
        "cognitive",
        "cognitive_by_function",
        "halstead",
    }


def test_roots_restrict_to_reachable_functions() -> None:
    m = measure_source(SAMPLE, name="fib only", roots=["fib"])
    assert m.scope == "family"
    assert (m.loc, m.functions, m.cyclomatic, m.loops) == (3, 1, 2, 0)
    assert m.patterns == ("memoization", "recursion")
    assert measure_source(SAMPLE, roots=["missing"]).scope == "module"


def _patterns(code: str) -> tuple[str, ...]:
    return measure_source(textwrap.dedent(code)).patterns


@pytest.mark.parametrize(
    ("code", "pattern"),
    [
        (
            """
            def walk(graph, start):
                stack = [start]
                while stack:
                    node = stack.pop()
                    stack.extend(graph[node])
            """,
            "dfs",
        ),
        (
            """
            def queue(items):
                while items:
                    items.pop(0)
            """,
            "bfs",
        ),
        (
            """
            def perms(path, left, out):
                if not left:
                    out.append(list(path))
                for x in sorted(left):
                    path.append(x)
                    perms(path, left - {x}, out)
                    path.pop()
            """,
            "backtracking",
        ),
        (
            """
            def even(n):
                return n == 0 or odd(n - 1)

            def odd(n):
                return n != 0 and even(n - 1)
            """,
            "recursion",
        ),
        (
            """
            def coins(values, amount):
                best = [0] + [amount + 1] * amount
                for c in values:
                    for v in range(c, amount + 1):
                        cand = best[v - c] + 1
                        if cand < best[v]:
                            best[v] = cand
                return best[amount]
            """,
            "dynamic_programming",
        ),
        (
            """
            import functools

            @functools.cache
            def f(n):
                return n
            """,
            "memoization",
        ),
        ("x = sorted([3, 1])", "sorting"),
        ("import itertools as it\nfor p in it.product('ab', repeat=3):\n    pass", "brute_force"),
        ("import heapq\nh = []\nheapq.heappush(h, 1)", "priority_queue"),
        ("from collections import defaultdict\nadj = defaultdict(list)", "graph_adjacency"),
        ("adj = {n: [] for n in 'abc'}", "graph_adjacency"),
        (
            """
            def find(parent, a):
                while parent[a] != a:
                    a = parent[a]
                return a
            """,
            "union_find",
        ),
    ],
)
def test_each_pattern_is_detected(code: str, pattern: str) -> None:
    assert pattern in PATTERNS
    assert pattern in _patterns(code)


@pytest.mark.parametrize(
    "code",
    [
        # A counter and a swap are not dynamic programming; a list pop is not a stack search.
        "def f(xs, c):\n    for x in xs:\n        c[x] += 1\n        xs[0], xs[1] = xs[1], xs[0]",
        "def f(xs):\n    last = xs.pop()\n    return last",
        # Path compression reads the table in its own index: union-find, not a recurrence.
        "def f(p, a):\n    for _ in range(3):\n        p[a] = p[p[a]]",
        # An attribute call with the function's name is not recursion.
        "def pop(xs):\n    return xs.pop()",
    ],
)
def test_no_false_patterns(code: str) -> None:
    assert _patterns(code) == ()


def test_families_sharing_a_module_are_measured_apart() -> None:
    families = builtin_families()
    paths, islands = families["grid_path_count"], families["island_count"]
    assert family_roots(paths) == ["generate_paths", "paths_dp", "paths_exclusion"]
    a, b = measure_family(paths), measure_family(islands)
    assert a.scope == b.scope == "family"
    assert set(a.cyclomatic_by_function) == {
        "generate_paths",
        "paths_dp",
        "paths_exclusion",
        "paths_exclusion.between",
    }
    assert {"dynamic_programming", "sorting"} <= set(a.patterns)
    assert "union_find" in b.patterns
    assert a.loc != b.loc


def test_every_builtin_family_can_be_measured() -> None:
    for family in builtin_families().values():
        m = measure_family(family)
        assert m.loc > 0 and m.functions >= 3 and m.cyclomatic >= m.functions
