"""Causal: build order for tasks with prerequisites, ties broken alphabetically."""

from __future__ import annotations

import heapq
import random
import re
from typing import Any

from veritask.logic._family import Family
from veritask.logic._text import join_and, split_and
from veritask.logic._textonly import Undetermined, between

_TASKS = [
    "audit",
    "bake",
    "clean",
    "deploy",
    "etch",
    "fuse",
    "glaze",
    "hang",
    "inspect",
    "join",
    "knead",
    "label",
    "mix",
    "nail",
    "oil",
    "paint",
    "quilt",
    "rinse",
    "sand",
    "trim",
]


def generate(difficulty: int, rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """``4 + d`` tasks; each depends on up to ``1 + d//3`` earlier tasks of a hidden order."""
    n = 4 + difficulty
    order = rng.sample(_TASKS, n)
    prereqs: list[list[Any]] = []
    for i, task in enumerate(order):
        k = rng.randint(0, min(i, 1 + difficulty // 3))
        if k:
            prereqs.append([task, sorted(rng.sample(order[:i], k))])
    rng.shuffle(prereqs)
    lines = [f"{task.capitalize()} requires {join_and(before)}." for task, before in prereqs]
    tasks = sorted(order)
    inputs = {"tasks": tasks, "prereqs": prereqs}
    return inputs, [", ".join(tasks), " ".join(lines) or "No task has prerequisites."]


def solve_heap(inputs: dict[str, Any]) -> list[str]:
    """Kahn's algorithm with a min-heap of ready tasks."""
    indeg = dict.fromkeys(inputs["tasks"], 0)
    after: dict[str, list[str]] = {t: [] for t in inputs["tasks"]}
    for task, before in inputs["prereqs"]:
        indeg[task] += len(before)
        for b in before:
            after[b].append(task)
    ready = [t for t, d in indeg.items() if d == 0]
    heapq.heapify(ready)
    out: list[str] = []
    while ready:
        t = heapq.heappop(ready)
        out.append(t)
        for u in after[t]:
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(ready, u)
    if len(out) != len(indeg):
        raise ValueError("cycle")
    return out


def solve_scan(inputs: dict[str, Any]) -> list[str]:
    """Repeatedly scan for the alphabetically first task whose prerequisites are all done."""
    need: dict[str, set[str]] = {t: set() for t in inputs["tasks"]}
    for task, before in inputs["prereqs"]:
        need[task] |= set(before)
    done: list[str] = []
    finished: set[str] = set()
    while len(done) < len(need):
        t = min(t for t in need if t not in finished and need[t] <= finished)
        done.append(t)
        finished.add(t)
    return done


def text_build_order(question: str) -> list[str]:
    """Read the tasks and their prerequisites; repeatedly do the first possible task."""
    tasks = between(question, "these tasks: ", ". ").split(", ")
    need: dict[str, set[str]] = {t: set() for t in tasks}
    for task, before in re.findall(r"(\w+) requires ([\w, ]+?)\.", question):
        need[task.lower()] |= set(split_and(before))
    done: list[str] = []
    while len(done) < len(tasks):
        ready = sorted(t for t in tasks if t not in done and need[t] <= set(done))
        if not ready:
            raise Undetermined("the prerequisites form a cycle")
        done.append(ready[0])
    return done


FAMILIES = (
    Family(
        id="build_order_alpha",
        version="3",
        category="causal",
        title="Build order with prerequisites",
        template=(
            "A worker must do these tasks: [Input Slot 1]. [Input Slot 2] The worker does one "
            "task at a time, and whenever several tasks are possible, picks the one that comes "
            "first alphabetically. In what order are the tasks done?"
        ),
        generate=generate,
        validators=(solve_heap, solve_scan),
        answer_format="List all tasks in the order done, separated by commas.",
        size=lambda inputs: len(inputs["tasks"]) + sum(len(b) for _, b in inputs["prereqs"]),
        text_solver=text_build_order,
    ),
)
