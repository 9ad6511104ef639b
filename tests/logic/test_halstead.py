"""Halstead measures and cognitive complexity on hand-counted code."""

from __future__ import annotations

import math
import textwrap

import pytest

from veritask.logic import builtin_families
from veritask.logic._halstead import cognitive_complexity, halstead, solve_times


def test_halstead_counts_by_hand() -> None:
    h = halstead("def f(xs):\n    return sorted(xs)\n")
    # operators: def ( ) : return ( )  -> 5 distinct, 7 in all
    # operands:  f xs sorted xs         -> 3 distinct, 4 in all
    assert (h.distinct_operators, h.operators) == (5, 7)
    assert (h.distinct_operands, h.operands) == (3, 4)
    assert h.vocabulary == 8 and h.length == 11
    assert h.volume == pytest.approx(11 * math.log2(8))
    assert h.difficulty == pytest.approx(5 / 2 * 4 / 3)
    assert h.effort == pytest.approx(h.difficulty * h.volume)


def test_halstead_of_nothing_is_zero() -> None:
    h = halstead("")
    assert h.volume == 0.0 and h.difficulty == 0.0


COGNITIVE = textwrap.dedent(
    """
    def flat(x):
        if x > 1 and x < 5:        # +1 if, +1 boolean run
            return 1
        elif x == 7:               # +1 elif
            return 2
        else:                      # +1 else
            return 3

    def nested(rows):
        total = 0
        for row in rows:           # +1
            for x in row:          # +2 (nesting 1)
                if x:              # +3 (nesting 2)
                    total += x
        return total

    def fact(n):
        return 1 if n < 2 else n * fact(n - 1)   # +1 conditional, +1 recursion

    class Box:
        def get(self, k):
            try:
                return self.d[k]
            except KeyError:       # +1
                return None
    """
)


def test_cognitive_complexity_by_hand() -> None:
    assert cognitive_complexity(COGNITIVE) == {"Box.get": 1, "flat": 4, "nested": 6, "fact": 2}


def test_solve_times_are_per_level_and_positive() -> None:
    times = solve_times(builtin_families()["knights_and_knaves"], levels=(1, 10), per_level=2)
    assert set(times) == {1, 10} and times[10] > 0
