"""Spatial: grid paths, robot moves, pattern rotation, islands and turtle walks."""

from __future__ import annotations

import math
import random
from typing import Any

from veritask.logic._family import Family
from veritask.logic._hardness import STEPS
from veritask.logic._text import number
from veritask.logic._textonly import between, findall

# --- monotone path counting with obstacles -------------------------------------------------


_PATH_ROWS = (3, 3, 4, 5, 6, 7, 8, 10, 11, 13)
"""Per level: the grid's rows (columns are 1-4 more, see :func:`generate_paths`)."""
_PATH_EXTRA_COLS = (1, 3, 2, 2, 2, 2, 2, 2, 2, 2)
_PATH_DENSITY = (0.16, 0.17, 0.18, 0.17, 0.16, 0.15, 0.13, 0.11, 0.09, 0.06)
"""Per level: the share of blocked cells; large grids are sparser so that millions of paths
stay open (level 10: 13 rows, 15-16 columns, about a dozen blocked cells)."""


def generate_paths(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """An R x C grid (3-13 rows, one row count per level pair, see ``_PATH_ROWS``) with blocked
    cells; at least one path exists. The area grows at every level and level 10's median grid
    has over 10^6 open paths, which a solver counts by dynamic programming, not by listing."""
    rows = _PATH_ROWS[difficulty - 1]
    cols = rows + _PATH_EXTRA_COLS[difficulty - 1] + rng.randint(0, 1)
    density = _PATH_DENSITY[difficulty - 1]
    cells = [(r, c) for r in range(rows) for c in range(cols)][1:-1]
    # version 2: up to 3 extra columns, one obstacle allowed at d=1 (answer 1 was 32% there)
    n_blocked = max(1 if difficulty == 1 else 2, round(rows * cols * density) + rng.randint(-1, 2))
    while True:
        blocked = set(rng.sample(cells, n_blocked))
        grid = [
            "".join("#" if (r, c) in blocked else "." for c in range(cols)) for r in range(rows)
        ]
        inputs = {"grid": grid}
        if paths_dp(inputs) > 0:
            return inputs, [str(rows), str(cols), "\n".join(grid)]


def paths_dp(inputs: dict[str, Any]) -> int:
    """Dynamic programming row by row."""
    grid = inputs["grid"]
    ways = [0] * len(grid[0])
    ways[0] = 1
    for row in grid:
        for c, cell in enumerate(row):
            if cell == "#":
                ways[c] = 0
            elif c > 0:
                ways[c] += ways[c - 1]
    return ways[-1]


def paths_exclusion(inputs: dict[str, Any]) -> int:
    """Count by binomials and inclusion-exclusion over the blocked cells: all monotone paths,
    minus those whose first blocked cell is each blocked cell (no cell-by-cell table)."""
    grid = inputs["grid"]
    rows, cols = len(grid), len(grid[0])
    blocked = sorted((r, c) for r in range(rows) for c in range(cols) if grid[r][c] == "#")

    def between(a: tuple[int, int], b: tuple[int, int]) -> int:
        down, right = b[0] - a[0], b[1] - a[1]
        return math.comb(down + right, down) if down >= 0 and right >= 0 else 0

    first_hit: list[int] = []  # paths from the start whose first blocked cell is blocked[i]
    for i, cell in enumerate(blocked):
        earlier = sum(first_hit[j] * between(blocked[j], cell) for j in range(i))
        first_hit.append(between((0, 0), cell) - earlier)
    end = (rows - 1, cols - 1)
    return between((0, 0), end) - sum(
        f * between(cell, end) for f, cell in zip(first_hit, blocked, strict=True)
    )


# --- robot moves clamped by walls ----------------------------------------------------------

_DIRS = {"N": (0, 1), "S": (0, -1), "E": (1, 0), "W": (-1, 0)}
_DIR_WORDS = {"N": "north", "S": "south", "E": "east", "W": "west"}


def generate_robot(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """A W x H room, a start cell and 2 + difficulty moves of 1-6 steps each."""
    width = 5 + difficulty // 2
    height = 5 + (difficulty + 1) // 2
    start = [rng.randrange(width), rng.randrange(height)]
    moves: list[list[Any]] = [
        [rng.choice("NSEW"), rng.randint(1, 3 + difficulty // 3)]
        for _ in range(STEPS[difficulty - 1])
    ]
    text = ", then ".join(f"{n} {_DIR_WORDS[d]}" for d, n in moves)
    inputs = {"width": width, "height": height, "start": start, "moves": moves}
    return inputs, [str(width), str(height), f"({start[0]}, {start[1]})", text]


def robot_steps(inputs: dict[str, Any]) -> list[int]:
    """Walk one step at a time, staying put when a wall is in the way."""
    x, y = inputs["start"]
    for d, n in inputs["moves"]:
        dx, dy = _DIRS[d]
        for _ in range(n):
            if 0 <= x + dx < inputs["width"] and 0 <= y + dy < inputs["height"]:
                x, y = x + dx, y + dy
    return [x, y]


def robot_clamp(inputs: dict[str, Any]) -> list[int]:
    """Move a whole segment at once and clamp to the room."""
    x, y = inputs["start"]
    w, h = inputs["width"] - 1, inputs["height"] - 1
    for d, n in inputs["moves"]:
        if d == "E":
            x = min(w, x + n)
        elif d == "W":
            x = max(0, x - n)
        elif d == "N":
            y = min(h, y + n)
        else:
            y = max(0, y - n)
    return [x, y]


# --- rotating and reflecting a pattern -----------------------------------------------------

_OPS_TEXT = {
    "cw": "rotate 90 degrees clockwise",
    "ccw": "rotate 90 degrees counterclockwise",
    "r180": "rotate 180 degrees",
    "fliph": "mirror left-to-right (reverse each row)",
    "flipv": "mirror top-to-bottom (reverse the order of the rows)",
    "transpose": "transpose (row i becomes column i)",
}


_TRANSFORM_SIZES = ((2, 2), (2, 3), (3, 3), (3, 4), (4, 4), (4, 5), (5, 5), (5, 6), (6, 6), (6, 6))
"""Per level: the grid's rows and columns (levels 9 and 10 differ in the number of operations)."""
_TRANSFORM_LETTERS = (3, 4, 4, 5, 5, 6, 7, 8, 9, 10)
_TRANSFORM_OPS = (1, 2, 2, 3, 3, 4, 4, 5, 5, 6)


def generate_transform(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """A grid of letters (2x2 to 6x6, one size per level) and 1-6 transformations; ask one row.

    Adjacent levels differ in the grid's shape or the number of operations, and level 10 draws
    from 10 letters over rows of 6 (10^6 possible rows)."""
    rows, cols = _TRANSFORM_SIZES[difficulty - 1]
    letters = "ABCDEFGHIJ"[: _TRANSFORM_LETTERS[difficulty - 1]]
    grid = ["".join(rng.choice(letters) for _ in range(cols)) for _ in range(rows)]
    ops = [rng.choice(tuple(_OPS_TEXT)) for _ in range(_TRANSFORM_OPS[difficulty - 1])]
    swaps = sum(op in ("cw", "ccw", "transpose") for op in ops) % 2
    out_rows = cols if swaps else rows
    row = rng.randint(1, out_rows)
    inputs = {"grid": grid, "ops": ops, "row": row}
    ops_text = "; then ".join(_OPS_TEXT[op] for op in ops)
    return inputs, ["\n".join(grid), ops_text, str(row)]


def transform_lists(inputs: dict[str, Any]) -> list[str]:
    """Apply each operation to a list of lists."""
    g = [list(r) for r in inputs["grid"]]
    for op in inputs["ops"]:
        if op == "cw":
            g = [list(r) for r in zip(*g[::-1], strict=True)]
        elif op == "ccw":
            g = [list(r) for r in zip(*g, strict=True)][::-1]
        elif op == "r180":
            g = [r[::-1] for r in g[::-1]]
        elif op == "fliph":
            g = [r[::-1] for r in g]
        elif op == "flipv":
            g = g[::-1]
        else:
            g = [list(r) for r in zip(*g, strict=True)]
    return g[inputs["row"] - 1]


def transform_coords(inputs: dict[str, Any]) -> list[str]:
    """Track where each output cell comes from: compose coordinate maps backwards."""
    grid = inputs["grid"]
    h, w = len(grid), len(grid[0])
    dims = [(h, w)]
    for op in inputs["ops"]:
        a, b = dims[-1]
        dims.append((b, a) if op in ("cw", "ccw", "transpose") else (a, b))
    out_h, out_w = dims[-1]
    r0 = inputs["row"] - 1
    result = []
    for c0 in range(out_w):
        r, c = r0, c0
        for op, (a, b) in zip(reversed(inputs["ops"]), reversed(dims[:-1]), strict=True):
            # (r, c) is in the grid after op; (a, b) is the shape before op
            if op == "cw":
                r, c = a - 1 - c, r
            elif op == "ccw":
                r, c = c, b - 1 - r
            elif op == "r180":
                r, c = a - 1 - r, b - 1 - c
            elif op == "fliph":
                c = b - 1 - c
            elif op == "flipv":
                r = a - 1 - r
            else:
                r, c = c, r
        result.append(grid[r][c])
    del out_h
    return result


# --- counting islands --------------------------------------------------------------------


_ISLAND_SHAPES = (
    (5, 5),
    (5, 7),
    (6, 7),
    (6, 8),
    (7, 8),
    (7, 9),
    (8, 9),
    (8, 10),
    (9, 10),
    (10, 11),
)
"""Per level: the map's rows and columns (one shape per level; the area grows at every level)."""


def generate_islands(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """A grid of land (#) and water (.) from 5x5 to 10x11, one shape per level. The land share
    is drawn from 35-65%, around where islands are neither single cells nor one continent, so
    at level 10 the median map has over 30 land cells that join an island already found."""
    rows, cols = _ISLAND_SHAPES[difficulty - 1]
    p = rng.uniform(0.35, 0.65)
    grid = ["".join("#" if rng.random() < p else "." for _ in range(cols)) for _ in range(rows)]
    return {"grid": grid}, [str(rows), str(cols), "\n".join(grid)]


def islands_flood(inputs: dict[str, Any]) -> int:
    """Flood fill from each unvisited land cell."""
    grid = inputs["grid"]
    rows, cols = len(grid), len(grid[0])
    seen = [[False] * cols for _ in range(rows)]
    count = 0
    for r in range(rows):
        for c in range(cols):
            if grid[r][c] != "#" or seen[r][c]:
                continue
            count += 1
            stack = [(r, c)]
            seen[r][c] = True
            while stack:
                y, x = stack.pop()
                for ny, nx in ((y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)):
                    if (
                        0 <= ny < rows
                        and 0 <= nx < cols
                        and grid[ny][nx] == "#"
                        and not seen[ny][nx]
                    ):
                        seen[ny][nx] = True
                        stack.append((ny, nx))
    return count


def islands_union_find(inputs: dict[str, Any]) -> int:
    """Union-find over land cells, joining right and lower neighbours."""
    grid = inputs["grid"]
    parent: dict[tuple[int, int], tuple[int, int]] = {}

    def find(a: tuple[int, int]) -> tuple[int, int]:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for r, row in enumerate(grid):
        for c, cell in enumerate(row):
            if cell == "#":
                parent[(r, c)] = (r, c)
    for r, c in list(parent):
        for other in ((r + 1, c), (r, c + 1)):
            if other in parent:
                ra, rb = find((r, c)), find(other)
                if ra != rb:
                    parent[ra] = rb
    return len({find(a) for a in parent})


# --- turtle walk with relative turns -----------------------------------------------------

_TURN_TEXT = {"L": "turn left", "R": "turn right", "U": "turn around"}


def generate_turtle(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """2 + difficulty forward moves of 1-9 steps, with turns between them."""
    steps: list[list[Any]] = []
    for i in range(STEPS[difficulty - 1]):
        if i:
            steps.append([rng.choice("LLRRU")])
        steps.append(["F", rng.randint(1, 9)])
    text = ", ".join(
        f"walk forward {s[1]} {'step' if s[1] == 1 else 'steps'}"
        if s[0] == "F"
        else _TURN_TEXT[s[0]]
        for s in steps
    )
    return {"steps": steps}, [text]


def turtle_table(inputs: dict[str, Any]) -> int:
    """Heading index into a table of unit vectors."""
    heading, x, y = 0, 0, 0
    vectors = ((0, 1), (1, 0), (0, -1), (-1, 0))  # north, east, south, west
    for step in inputs["steps"]:
        if step[0] == "F":
            x += vectors[heading][0] * step[1]
            y += vectors[heading][1] * step[1]
        else:
            heading = (heading + {"L": 3, "R": 1, "U": 2}[step[0]]) % 4
    return abs(x) + abs(y)


def turtle_complex(inputs: dict[str, Any]) -> int:
    """Position and heading as complex numbers; turns multiply by i, -i or -1."""
    pos, heading = 0j, 1j
    turn = {"L": 1j, "R": -1j, "U": -1}
    for step in inputs["steps"]:
        if step[0] == "F":
            pos += heading * step[1]
        else:
            heading *= turn[step[0]]
    return round(abs(pos.real) + abs(pos.imag))


# --- text-only solvers ---------------------------------------------------------------------


def _text_grid(question: str, start: str, end: str) -> list[str]:
    return between(question, start, end).strip().split("\n")


def text_paths(question: str) -> int:
    """Read the grid; count right/down paths cell by cell from the top-left."""
    grid = _text_grid(question, "an open one:\n", "\nMoving")
    rows, cols = len(grid), len(grid[0])
    ways = [[0] * (cols + 1) for _ in range(rows + 1)]
    for r in range(rows):
        for c in range(cols):
            if grid[r][c] == "#":
                continue
            ways[r + 1][c + 1] = 1 if r == c == 0 else ways[r][c + 1] + ways[r + 1][c]
    return ways[rows][cols]


def text_robot(question: str) -> list[int]:
    """Read the room, the start and the moves; walk, clamping at the walls."""
    width = number(between(question, "room of "))
    height = number(between(question, "wall) and "))
    x, y = (int(v) for v in findall(r"= \((\d+), (\d+)\)", question)[0])
    unit = {"north": (0, 1), "south": (0, -1), "east": (1, 0), "west": (-1, 0)}
    for n, way in findall(r"(\d+) (north|south|east|west)", question):
        dx, dy = unit[way]
        x = min(width - 1, max(0, x + dx * int(n)))
        y = min(height - 1, max(0, y + dy * int(n)))
    return [x, y]


def text_transform(question: str) -> list[str]:
    """Read the grid, the transformations and the row; apply them to a list of rows."""
    grid = [list(r) for r in _text_grid(question, "letters:\n", "\nApply")]
    by_text = {text: op for op, text in _OPS_TEXT.items()}
    ops = [by_text[t] for t in between(question, "in order: ", ". What is row").split("; then ")]
    row = number(between(question, "What is row "))
    return transform_lists({"grid": ["".join(r) for r in grid], "ops": ops, "row": row})


def text_islands(question: str) -> int:
    """Read the map; count islands by flood fill."""
    return islands_flood({"grid": _text_grid(question, "as '.':\n", "\nLand cells")})


def text_turtle(question: str) -> int:
    """Read the walk; track position and heading."""
    x, y, dx, dy = 0, 0, 0, 1
    walk = between(question, "facing north. You ", ". How far")
    for part in walk.split(", "):
        if part.startswith("walk forward"):
            steps = number(part[len("walk forward") :])
            x, y = x + dx * steps, y + dy * steps
        elif part == "turn left":
            dx, dy = -dy, dx
        elif part == "turn right":
            dx, dy = dy, -dx
        elif part == "turn around":
            dx, dy = -dx, -dy
        else:
            raise ValueError(f"unknown step {part!r}")
    return abs(x) + abs(y)


FAMILIES = (
    Family(
        id="grid_path_count",
        version="4",
        category="spatial",
        title="Grid paths around obstacles",
        template=(
            "A grid has [Input Slot 1] rows and [Input Slot 2] columns; '#' marks a blocked cell "
            "and '.' an open one:\n[Input Slot 3]\nMoving only right or down through open cells, "
            "how many different paths lead from the top-left cell to the bottom-right cell?"
        ),
        generate=generate_paths,
        validators=(paths_dp, paths_exclusion),
        answer_format="Answer with the integer only.",
        size=lambda inputs: (
            len(inputs["grid"]) * len(inputs["grid"][0]) + sum(r.count("#") for r in inputs["grid"])
        ),
        text_solver=text_paths,
    ),
    Family(
        id="robot_walls",
        version="3",
        category="spatial",
        title="Robot in a walled room",
        template=(
            "A robot is in a room of [Input Slot 1] columns (x from 0 on the west to the east "
            "wall) and [Input Slot 2] rows (y from 0 on the south to the north wall). It starts "
            "at (x, y) = [Input Slot 3] and moves [Input Slot 4], one cell per step. A step that "
            "would leave the room is not taken (the robot stays where it is). Where does it end?"
        ),
        generate=generate_robot,
        validators=(robot_steps, robot_clamp),
        answer_format="Answer with the final x and y separated by a comma, e.g. 3, 4.",
        size=lambda inputs: len(inputs["moves"]),
        text_solver=text_robot,
    ),
    Family(
        id="pattern_transform_row",
        version="4",
        category="spatial",
        title="Rotating and mirroring a pattern",
        template=(
            "Here is a grid of letters:\n[Input Slot 1]\nApply these transformations in order: "
            "[Input Slot 2]. What is row [Input Slot 3] (counting from the top, starting at 1) "
            "of the result?"
        ),
        generate=generate_transform,
        validators=(transform_lists, transform_coords),
        answer_format="Answer with the letters of that row from left to right, separated by commas.",
        size=lambda inputs: (
            len(inputs["ops"]) * 4 + len(inputs["grid"]) * len(inputs["grid"][0]) // 4
        ),
        text_solver=text_transform,
    ),
    Family(
        id="island_count",
        version="4",
        category="spatial",
        title="Counting islands",
        template=(
            "A map of [Input Slot 1] rows and [Input Slot 2] columns shows land as '#' and water "
            "as '.':\n[Input Slot 3]\nLand cells that touch horizontally or vertically (not "
            "diagonally) belong to the same island. How many islands are there?"
        ),
        generate=generate_islands,
        validators=(islands_flood, islands_union_find),
        answer_format="Answer with the integer only.",
        size=lambda inputs: len(inputs["grid"]) * len(inputs["grid"][0]),
        text_solver=text_islands,
    ),
    Family(
        id="turtle_manhattan",
        version="3",
        category="spatial",
        title="Walk with turns: Manhattan distance",
        template=(
            "You stand on a square grid facing north. You [Input Slot 1]. How far are you now "
            "from where you started, measured in Manhattan distance (horizontal steps plus "
            "vertical steps)?"
        ),
        generate=generate_turtle,
        validators=(turtle_table, turtle_complex),
        answer_format="Answer with the integer only.",
        size=lambda inputs: len(inputs["steps"]),
        text_solver=text_turtle,
    ),
)
