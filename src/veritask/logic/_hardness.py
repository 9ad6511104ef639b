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

import heapq
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


def _open_paths(inputs: Inputs) -> int:
    """Right/down paths through open cells: each one a route an enumerating solver lists."""
    grid = inputs["grid"]
    ways = [1] + [0] * (len(grid[0]) - 1)
    for row in grid:
        for c, cell in enumerate(row):
            ways[c] = 0 if cell == "#" else ways[c] + (ways[c - 1] if c else 0)
    return ways[-1]


def _coin_combinations(inputs: Inputs) -> int:
    """Multisets of coins that pay the amount exactly: the candidates fewest-coins chooses among."""
    amount = int(inputs["amount"])
    ways = [1] + [0] * amount
    for coin in inputs["coins"]:
        for value in range(coin, amount + 1):
            ways[value] += ways[value - coin]
    return ways[amount]


def _fresh_rewrites(inputs: Inputs) -> int:
    """Rewrites within the budget that give a string not seen before (a fixed point or a
    return to an earlier string ends the count: the steps after it are no-ops or repeats)."""
    s, seen = str(inputs["start"]), {str(inputs["start"])}
    for done in range(int(inputs["steps"])):
        hit = next((r for r in inputs["rules"] if r[0] in s), None)
        if hit is None or s.replace(hit[0], hit[1], 1) in seen:
            return done
        s = s.replace(hit[0], hit[1], 1)
        seen.add(s)
    return int(inputs["steps"])


def _relaxations(inputs: Inputs) -> int:
    """Times Dijkstra lowers a town's best-known distance before it settles the destination;
    each new bound is a settled town's distance plus a road, so each depends on earlier ones."""
    adj: dict[str, list[tuple[str, int]]] = {t: [] for t in inputs["towns"]}
    for a, b, w in inputs["roads"]:
        adj[a].append((b, w))
        adj[b].append((a, w))
    best, heap, done, lowered = {inputs["src"]: 0}, [(0, str(inputs["src"]))], set(), 0
    while heap:
        d, town = heapq.heappop(heap)
        if town == inputs["dst"]:
            break
        if town in done:
            continue
        done.add(town)
        for nxt, w in adj[town]:
            if nxt not in done and d + w < best.get(nxt, d + w + 1):
                best[nxt], lowered = d + w, lowered + 1
                heapq.heappush(heap, (d + w, nxt))
    return lowered


def _island_joins(inputs: Inputs) -> int:
    """Land cells minus islands: the merges union-find makes (each joins a cell to the island
    its neighbour's earlier merges decided)."""
    grid = inputs["grid"]
    land = {(r, c) for r, row in enumerate(grid) for c, cell in enumerate(row) if cell == "#"}
    islands, seen = 0, set()
    for cell in sorted(land):
        if cell in seen:
            continue
        islands, stack = islands + 1, [cell]
        seen.add(cell)
        while stack:
            r, c = stack.pop()
            for near in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
                if near in land and near not in seen:
                    seen.add(near)
                    stack.append(near)
    return len(land) - islands


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
        _fresh_rewrites,
        STEPS,
        _counts("steps", "rules", "start"),
    ),
    "shop_inventory": Hardness(
        "steps",
        lambda i: sum(e[1] == i["query"] for e in i["events"]),
        STEPS,
        _counts("events", "start"),
    ),
    "switch_lamps": Hardness(
        "candidates",
        _pow2("lamps"),
        (1,) * 10,
        _counts("presses", "lamps", "initial"),
    ),
    "kinship_ancestor": Hardness("steps", lambda i: _n(i, "path"), STEPS, _counts("path", "facts")),
    "recipe_scaling": Hardness(
        "steps",
        lambda i: sum(len(p) for name, p in i["recipe"] if name in i["asked"]),
        (1,) * 10,
        _counts("recipe", "asked"),
        why_not="the steps are unit conversions of the asked ingredients (a few each), and "
        "each ingredient converts on its own: they add up, they do not chain; a recipe of 30 "
        "asked ingredients would be a list, not a harder question",
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
        "candidates",
        _open_paths,
        (2, 3, 5, 10, 30, 150, 600, 6_000, 40_000, LEVEL10_CANDIDATES),
        lambda i: (len(i["grid"]), len(i["grid"][0])),
    ),
    "island_count": Hardness(
        "steps",
        _island_joins,
        (6, 10, 12, 14, 17, 20, 24, 27, 30, LEVEL10_STEPS),
        lambda i: (len(i["grid"]), len(i["grid"][0])),
    ),
    "cnf_model_count": Hardness(
        "effort",
        lambda i: 2 ** int(i["n"]) * len(i["clauses"]),
        tuple(2**n * (n - 1) for n in (3, 4, 5, 6, 7, 8, 10, 12, 15, 20)),
        lambda i: (i["n"], max(len(c) for c in i["clauses"])),
    ),
    "fewest_coins": Hardness(
        "candidates",
        _coin_combinations,
        (50, 200, 1_000, 5_000, 15_000, 60_000, 200_000, 300_000, 10**6, LEVEL10_CANDIDATES),
        _counts("coins"),
    ),
    "road_shortest_distance": Hardness(
        "steps",
        _relaxations,
        (3, 4, 5, 7, 9, 12, 14, 17, 21, LEVEL10_STEPS),
        _counts("towns", "roads"),
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
        why_not="the answer is a start time: a 09:00-18:00 day has 36 quarter-hour starts, "
        "a working week 180 and a year of working days about 9,000, so 10^6 candidate starts "
        "would need over a century of calendars; nor is it a chain: the earliest common gap "
        "is found by one sweep over the busy blocks sorted by start, and the sweep stops at "
        "the first gap long enough (with the day about half free, after a few blocks)",
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
