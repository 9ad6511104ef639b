"""Difficulty by a measured quantity: per family, what is counted, and its target per level.

Each built-in family has a :class:`Hardness`: the quantity (``candidates``: how many answers the
answer format admits for this instance; ``steps``: dependent steps a solver must chain;
``effort``: states or cells a straightforward solver visits), a function measuring it on an
instance's inputs, the target floor per level, and the instance's *shape* (its structural
parameters: sizes, counts, rule kinds), used to check that adjacent levels differ in structure.

Level 10 should reach ``LEVEL10_CANDIDATES`` candidates or ``LEVEL10_STEPS`` dependent steps;
a family whose nature or runtime budget does not allow it says why in ``why_not``.
``benchmarks/logic_hardness.py`` measures every family against these targets.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Literal

from veritask.logic.families.logical_ordering import clue_tier

STEPS: tuple[int, ...] = (2, 3, 5, 7, 9, 12, 15, 19, 24, 30)
"""Dependent steps per level for the families whose difficulty is a chain of operations: one
count per level (levels never share a count), 30 at level 10."""
SIZES: tuple[int, ...] = (6, 7, 8, 9, 10, 12, 14, 16, 18, 20)
"""Items per level for the families whose answer is a subset of the items (events, gates,
propositions): 2^20 candidate answers at level 10, one size per level."""
LEVEL10_CANDIDATES = 10**6
LEVEL10_STEPS = 30
MAX_SHAPE_OVERLAP = 0.20
"""The largest share of level L+1's shapes that may already occur at level L."""

Kind = Literal["candidates", "steps", "effort"]
Inputs = Mapping[str, Any]


@dataclass(frozen=True)
class Hardness:
    """How one family's difficulty is measured.

    Attributes:
        kind: ``candidates``, ``steps`` or ``effort`` (see the module docstring).
        measure: ``(inputs) -> int``: the quantity on one instance.
        floors: Per level 1-10, the least the median instance should reach.
        shape: ``(inputs) -> tuple``: the instance's structural parameters.
        why_not: Why level 10 does not reach 10^6 candidates or 30 steps ("" when it does).
    """

    kind: Kind
    measure: Callable[[Inputs], int]
    floors: tuple[int, ...]
    shape: Callable[[Inputs], tuple[Any, ...]]
    why_not: str = ""

    @property
    def level10_goal(self) -> int:
        """What level 10 must reach under the issue's rule for this kind."""
        return LEVEL10_STEPS if self.kind == "steps" else LEVEL10_CANDIDATES


def _n(inputs: Inputs, key: str) -> int:
    return len(inputs[key])


def _fact(key: str) -> Callable[[Inputs], int]:
    return lambda i: math.factorial(_n(i, key))


def _pow2(key: str) -> Callable[[Inputs], int]:
    return lambda i: 2 ** _n(i, key)


def _steps_shape(key: str) -> Callable[[Inputs], tuple[Any, ...]]:
    return lambda i: (_n(i, key),)


def _grid_paths(inputs: Inputs) -> int:
    rows, cols = len(inputs["grid"]), len(inputs["grid"][0])
    return math.comb(rows + cols - 2, rows - 1)


def _letters(inputs: Inputs) -> int:
    grid = inputs["grid"]
    alphabet = len({c for row in grid for c in row})
    return int(alphabet ** max(len(grid), len(grid[0])))


def _counts(*keys: str) -> Callable[[Inputs], tuple[Any, ...]]:
    return lambda i: tuple(len(i[k]) if isinstance(i[k], (list, str)) else i[k] for k in keys)


_STEP_FLOORS = STEPS

TABLE: dict[str, Hardness] = {
    "arithmetic_chain": Hardness("steps", lambda i: _n(i, "steps"), STEPS, _steps_shape("steps")),
    "weekday_shift": Hardness("steps", lambda i: _n(i, "shifts"), STEPS, _steps_shape("shifts")),
    "timezone_arrival": Hardness("steps", lambda i: _n(i, "legs"), STEPS, _steps_shape("legs")),
    "turtle_manhattan": Hardness(
        "steps",
        lambda i: sum(s[0] == "F" for s in i["steps"]),
        STEPS,
        lambda i: (sum(s[0] == "F" for s in i["steps"]),),
    ),
    "robot_walls": Hardness(
        "steps", lambda i: _n(i, "moves"), STEPS, lambda i: (_n(i, "moves"), i["width"])
    ),
    "stack_machine": Hardness(
        "steps", lambda i: _n(i, "program"), tuple(s + 2 for s in STEPS), _steps_shape("program")
    ),
    "string_rewrite": Hardness(
        "steps",
        lambda i: int(i["steps"]),
        (3, 4, 5, 6, 7, 8, 9, 10, 11, 12),
        _counts("steps", "rules", "start"),
        why_not="a rewrite chain of 30 steps over a 3-4 letter alphabet falls into a fixed "
        "point or cycle early (most steps would be no-ops); the step budget stays at 12",
    ),
    "shop_inventory": Hardness(
        "steps",
        lambda i: _n(i, "events"),
        (3, 4, 6, 8, 10, 12, 14, 16, 18, 20),
        _counts("events", "start"),
        why_not="events on one queried item are the dependent steps; events on other items "
        "are distractors, so dependent steps stay below 30",
    ),
    "switch_lamps": Hardness(
        "candidates",
        _pow2("lamps"),
        (1,) * 10,
        _counts("presses", "lamps", "initial"),
    ),
    "kinship_ancestor": Hardness(
        "steps",
        lambda i: _n(i, "path"),
        (1,) * 10,
        _counts("path", "facts"),
        why_not="each step climbs one generation of a full ancestor tree, which doubles per "
        "generation: 30 steps would need 2^30 people in the text",
    ),
    "recipe_scaling": Hardness(
        "steps",
        lambda i: sum(len(p) for _, p in i["recipe"]),
        (1,) * 10,
        _counts("recipe", "asked"),
        why_not="each asked ingredient is an independent conversion, not a chain",
    ),
    "causal_chain_events": Hardness("candidates", _pow2("events"), (1,) * 10, _counts("events")),
    "horn_entailment": Hardness(
        "candidates",
        lambda i: 2 ** len({s for p, h in i["rules"] for s in (*p, h)}),
        (1,) * 10,
        _counts("rules", "facts"),
    ),
    "boolean_circuit_gates": Hardness(
        "candidates", _pow2("gates"), (1,) * 10, _counts("gates", "values")
    ),
    "knights_and_knaves": Hardness(
        "candidates",
        lambda i: 2 ** int(i["k"]),
        tuple(2**k for k in (3, 4, 5, 6, 8, 10, 12, 14, 17, 20)),
        lambda i: (i["k"], tuple(sorted({s[0] for s in i["statements"]}))),
    ),
    "row_ordering": Hardness(
        "candidates",
        _fact("names"),
        tuple(math.factorial(n) for n in (3, 3, 4, 4, 5, 5, 6, 7, 8, 10)),
        lambda i: (_n(i, "names"), clue_tier(i["clues"])),
    ),
    "build_order_alpha": Hardness("candidates", _fact("tasks"), (1,) * 10, _counts("tasks")),
    "event_order": Hardness("candidates", _fact("events"), (1,) * 10, _counts("events", "before")),
    "custom_sort": Hardness(
        "candidates", _fact("numbers"), (1,) * 10, lambda i: (_n(i, "numbers"), i["rule"])
    ),
    "ranking_kth": Hardness(
        "candidates",
        lambda i: math.factorial(len({n for c in i["comparisons"] for n in c})),
        (1,) * 10,
        lambda i: (len({n for c in i["comparisons"] for n in c}),),
    ),
    "max_meetings": Hardness("candidates", _pow2("meetings"), (1,) * 10, _counts("meetings")),
    "vigenere_decode": Hardness(
        "candidates",
        lambda i: 26 ** len(i["key"]),
        (1,) * 10,
        lambda i: (len(i["key"]), len(str(i["ciphertext"]).split())),
    ),
    "base_conversion": Hardness(
        "candidates",
        lambda i: int(str(i["number"]), int(i["from"])),
        (1,) * 10,
        lambda i: (int(str(i["number"]), int(i["from"])).bit_length(), i["from"], i["to"]),
    ),
    "pattern_transform_row": Hardness(
        "candidates",
        _letters,
        (1,) * 10,
        lambda i: (len(i["grid"]), len(i["grid"][0]), len(i["ops"])),
    ),
    "grid_path_count": Hardness(
        "effort",
        _grid_paths,
        (1,) * 10,
        lambda i: (len(i["grid"]), len(i["grid"][0])),
        why_not="monotone paths through a grid whose text a model must read; 10^6 paths "
        "needs a 12 x 12 grid",
    ),
    "island_count": Hardness(
        "effort",
        lambda i: len(i["grid"]) * len(i["grid"][0]),
        (1,) * 10,
        lambda i: (len(i["grid"]), len(i["grid"][0])),
        why_not="a flood fill visits each cell once; the effort is the grid's area",
    ),
    "cnf_model_count": Hardness(
        "effort",
        lambda i: 2 ** int(i["n"]) * len(i["clauses"]),
        tuple(2**n * (n - 1) for n in (3, 4, 5, 6, 7, 8, 10, 12, 15, 20)),
        lambda i: (i["n"], max(len(c) for c in i["clauses"])),
    ),
    "fewest_coins": Hardness(
        "effort",
        lambda i: int(i["amount"]) * len(i["coins"]),
        (1,) * 10,
        _counts("coins"),
        why_not="the dynamic programme fills amount x coins cells; the answer is a small count",
    ),
    "road_shortest_distance": Hardness(
        "effort",
        lambda i: _n(i, "towns") * _n(i, "roads"),
        (1,) * 10,
        _counts("towns", "roads"),
        why_not="Dijkstra's effort grows with towns x roads; a map a model reads has tens of "
        "towns, not thousands",
    ),
    "venn_region_count": Hardness(
        "candidates",
        lambda i: 2 ** _n(i, "counts"),
        (1,) * 10,
        lambda i: (_n(i, "clubs"), i["query"][0]),
    ),
    "common_free_slot": Hardness(
        "candidates",
        lambda i: 37 - int(i["duration"]),
        (1,) * 10,
        lambda i: (_n(i, "calendars"), max(len(c) for c in i["calendars"])),
        why_not="a working day has 36 quarter-hour starts: the answer space is fixed by nature",
    ),
}
"""The built-in families' difficulty measures (kept beside the family ids they describe)."""


def hardness_of(family_id: str) -> Hardness | None:
    """The difficulty measure of a built-in family, or None."""
    return TABLE.get(family_id)


def median(values: Sequence[int]) -> int:
    """The lower median (an int, so large counts stay exact)."""
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2] if ordered else 0


def shape_overlap(shapes: Mapping[int, Iterable[tuple[Any, ...]]]) -> dict[int, float]:
    """For each level L with L+1 present: the share of level L+1's instances whose shape
    already occurs at level L."""
    out: dict[int, float] = {}
    by_level = {d: list(s) for d, s in shapes.items()}
    for low, high in pairwise(sorted(by_level)):
        if high == low + 1 and by_level[high]:
            seen = set(by_level[low])
            out[low] = sum(s in seen for s in by_level[high]) / len(by_level[high])
    return out


def meets_level10(hardness: Hardness, value: int) -> bool:
    """Whether a level-10 median reaches the issue's goal for this kind."""
    return value >= hardness.level10_goal
