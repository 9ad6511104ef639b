"""Straight-line functions generated per tool and argument shape for ``Environment.call``.

The call path checks a tool's arguments and turns a stored row into a dict on every call. Written
as loops (over the checks, over ``zip(columns, row)``) they cost about as much as the SQLite work
they wrap, so the fast path generates one straight-line function per argument shape and per
table, the way ``dataclasses`` and ``collections.namedtuple`` generate their methods. Only names
the generator makes up (``a0``, ``c0``) and ``repr`` of column names reach the source; values
(enum sets) are bound through the namespace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from veritask.env._args import MAX_STRING_CHARS, FastCheck


def _check_expr(i: int, check: FastCheck, namespace: dict[str, Any]) -> str:
    kind, allowed = check
    value = f"a{i}"
    head = f"type({value}) is {kind.__name__}"
    if allowed is None:
        if kind is str:
            return f"{head} and len({value}) <= {MAX_STRING_CHARS} and {value}.isascii()"
        return head
    if isinstance(allowed, range) and allowed.step == 1:
        return f"{head} and {allowed.start} <= {value} <= {allowed.stop - 1}"
    namespace[f"c{i}"] = allowed
    return f"{head} and {value} in c{i}"


def compile_checks(checks: tuple[FastCheck, ...]) -> Callable[[dict[str, Any]], bool]:
    """A function telling whether a dict's values, in order, pass ``checks`` (from
    ``fast_checks``). The dict must have one entry per check: the fast path keys its plans by
    the argument names, so it does.
    """
    if not checks:
        return lambda _args: True
    namespace: dict[str, Any] = {}
    values = ", ".join(f"a{i}" for i in range(len(checks)))
    tests = "\n        and ".join(_check_expr(i, c, namespace) for i, c in enumerate(checks))
    source = f"def accepts(args):\n    ({values},) = args.values()\n    return (\n        {tests}\n    )\n"
    exec(source, namespace)  # made-up names and literal ints; enum sets are bound by name
    accepts: Callable[[dict[str, Any]], bool] = namespace["accepts"]
    return accepts


def compile_row(columns: tuple[str, ...]) -> Callable[[tuple[Any, ...]], dict[str, Any]]:
    """A function turning a row of ``columns`` into ``dict(zip(columns, row))``.

    The row is unpacked once into made-up local names rather than indexed per column (about
    10% less time for a 12-column row)."""
    if not columns:
        return lambda _row: {}
    names = ", ".join(f"v{i}" for i in range(len(columns)))
    items = ", ".join(f"{c!r}: v{i}" for i, c in enumerate(columns))
    namespace: dict[str, Any] = {}
    source = f"def as_dict(row):\n    ({names},) = row\n    return {{{items}}}\n"
    exec(source, namespace)  # keys are repr'd strings, values made-up names
    as_dict: Callable[[tuple[Any, ...]], dict[str, Any]] = namespace["as_dict"]
    return as_dict
