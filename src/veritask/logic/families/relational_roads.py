"""Relational: shortest road distance between two towns in a weighted road network."""

from __future__ import annotations

import heapq
import random
from typing import Any

from veritask.logic._family import Family
from veritask.logic._textonly import Undetermined, findall

_TOWNS = [
    "Ashby",
    "Brook",
    "Carver",
    "Dale",
    "Elton",
    "Fairfax",
    "Glen",
    "Harlow",
    "Irwin",
    "Jasper",
    "Kent",
    "Linden",
    "Mill",
    "Newport",
    "Oakley",
    "Preston",
    "Quincy",
    "Rowan",
    "Selby",
    "Thorne",
    "Upton",
    "Verne",
    "Wexford",
    "Yardley",
    "Zennor",
    "Alder",
    "Bexley",
    "Corby",
    "Dunmore",
    "Eston",
]

_TOWN_COUNTS = (5, 6, 8, 10, 12, 15, 18, 21, 25, 30)
"""Per level: how many towns the map has (one count per level, so adjacent levels differ)."""
_EXTRA_ROADS = (1, 2, 3, 4, 6, 8, 10, 12, 15, 20)
"""Per level: roads beyond a spanning tree (each adds a cycle, so routes compete)."""


def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """``_TOWN_COUNTS[d-1]`` towns joined by a random spanning tree plus ``_EXTRA_ROADS[d-1]``
    more roads; the destination is drawn from the farther half of the towns (by distance from
    the start), so a shortest-path search settles most of the map before it. At level 10 (30
    towns, 49 roads) the median search lowers a town's best-known distance over 30 times."""
    n = _TOWN_COUNTS[difficulty - 1]
    towns = rng.sample(_TOWNS, n)
    edges: set[tuple[int, int]] = set()
    for i in range(1, n):
        j = rng.randrange(i)
        edges.add((j, i))
    missing = [(i, j) for i in range(n) for j in range(i + 1, n) if (i, j) not in edges]
    edges |= set(rng.sample(missing, min(_EXTRA_ROADS[difficulty - 1], len(missing))))
    roads = [[towns[i], towns[j], rng.randint(1, 9 + difficulty)] for i, j in sorted(edges)]
    rng.shuffle(roads)
    src = rng.choice(towns)
    far = _by_distance({"towns": towns, "roads": roads, "src": src})
    dst = rng.choice(far[len(far) // 2 :])
    text = " ".join(f"A road of length {w} joins {a} and {b}." for a, b, w in roads)
    return {"towns": towns, "roads": roads, "src": src, "dst": dst}, [text, src, dst]


def _by_distance(inputs: dict[str, Any]) -> list[str]:
    """The other towns, nearest to ``src`` first (ties by name)."""
    dist = dict.fromkeys(inputs["towns"], 1 << 60)
    dist[inputs["src"]] = 0
    for _ in inputs["towns"]:
        for a, b, w in inputs["roads"]:
            dist[b] = min(dist[b], dist[a] + w)
            dist[a] = min(dist[a], dist[b] + w)
    others = [t for t in inputs["towns"] if t != inputs["src"]]
    return sorted(others, key=lambda t: (dist[t], t))


def solve_dijkstra(inputs: dict[str, Any]) -> int:
    """Dijkstra with a binary heap."""
    adj: dict[str, list[tuple[str, int]]] = {t: [] for t in inputs["towns"]}
    for a, b, w in inputs["roads"]:
        adj[a].append((b, w))
        adj[b].append((a, w))
    dist = {inputs["src"]: 0}
    heap = [(0, str(inputs["src"]))]
    done: set[str] = set()
    while heap:
        d, u = heapq.heappop(heap)
        if u in done:
            continue
        if u == inputs["dst"]:
            return d
        done.add(u)
        for v, w in adj[u]:
            if d + w < dist.get(v, 1 << 60):
                dist[v] = d + w
                heapq.heappush(heap, (d + w, v))
    raise ValueError("unreachable")


def solve_bellman_ford(inputs: dict[str, Any]) -> int:
    """Relax every road in both directions until nothing changes."""
    inf = 1 << 60
    dist = dict.fromkeys(inputs["towns"], inf)
    dist[inputs["src"]] = 0
    changed = True
    while changed:
        changed = False
        for a, b, w in inputs["roads"]:
            if dist[a] + w < dist[b]:
                dist[b] = dist[a] + w
                changed = True
            if dist[b] + w < dist[a]:
                dist[a] = dist[b] + w
                changed = True
    return dist[inputs["dst"]]


def text_distance(question: str) -> int:
    """Read the roads and both towns; Dijkstra over the roads read."""
    adj: dict[str, list[tuple[str, int]]] = {}
    for w, a, b in findall(r"A road of length (\d+) joins (\w+) and (\w+)\.", question):
        adj.setdefault(a, []).append((b, int(w)))
        adj.setdefault(b, []).append((a, int(w)))
    src, dst = findall(r"drive from (\w+) to (\w+)\?", question)[0]
    heap, done = [(0, src)], set()
    while heap:
        d, town = heapq.heappop(heap)
        if town == dst:
            return d
        if town in done:
            continue
        done.add(town)
        heap.extend((d + w, nxt) for nxt, w in adj[town] if nxt not in done)
        heapq.heapify(heap)
    raise Undetermined(f"no road connects {src} and {dst}")


FAMILIES = (
    Family(
        id="road_shortest_distance",
        version="3",
        category="relational",
        title="Shortest road distance",
        template=(
            "Roads can be driven in both directions. [Input Slot 1] What is the shortest "
            "total distance to drive from [Input Slot 2] to [Input Slot 3]?"
        ),
        generate=generate,
        validators=(solve_dijkstra, solve_bellman_ford),
        answer_format="Answer with the integer only.",
        size=lambda inputs: len(inputs["towns"]) + len(inputs["roads"]),
        text_solver=text_distance,
    ),
)
