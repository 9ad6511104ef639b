"""Temporal families: weekday shifts, interval scheduling, common free slots, event ordering and
time-zone arithmetic. Each family has two independently written validators."""

from __future__ import annotations

import bisect
import datetime as dt
import heapq
import itertools
import random
import re
from typing import Any

from veritask.logic._family import Family
from veritask.logic._hardness import STEPS
from veritask.logic._textonly import Undetermined, between, findall

Inputs = dict[str, Any]
_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _hhmm(minutes: int) -> str:
    """Minutes since midnight as ``HH:MM``."""
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


# --------------------------------------------------------------------------- weekday shift


def gen_weekday(difficulty: int, rng: random.Random) -> tuple[Inputs, list[str]]:
    """A start weekday and ``difficulty`` signed shifts in days or weeks."""
    start = rng.randrange(7)
    shifts: list[list[Any]] = []
    for _ in range(STEPS[difficulty - 1]):
        unit = "weeks" if rng.random() < 0.25 else "days"
        amount = rng.randint(1, 6 + 12 * difficulty) if unit == "days" else rng.randint(1, 9)
        shifts.append([amount if rng.random() < 0.7 else -amount, unit])
    text = ", then ".join(
        f"{abs(a)} {u if abs(a) != 1 else u[:-1]} {'later' if a > 0 else 'earlier'}"
        for a, u in shifts
    )
    return {"start": _DAYS[start], "shifts": shifts}, [_DAYS[start].capitalize(), text]


def solve_weekday_mod(inputs: Inputs) -> str:
    """Sum the shifts in days and reduce modulo 7."""
    total = _DAYS.index(inputs["start"])
    for amount, unit in inputs["shifts"]:
        total += amount * (7 if unit == "weeks" else 1)
    return _DAYS[total % 7]


def solve_weekday_calendar(inputs: Inputs) -> str:
    """Walk a real calendar with ``datetime`` from a Monday (2024-01-01)."""
    day = dt.date(2024, 1, 1) + dt.timedelta(days=_DAYS.index(inputs["start"]))
    for amount, unit in inputs["shifts"]:
        day += dt.timedelta(weeks=amount) if unit == "weeks" else dt.timedelta(days=amount)
    return _DAYS[day.weekday()]


# --------------------------------------------------------------------------- max meetings


_MEETINGS = (6, 8, 10, 12, 14, 16, 18, 20, 22, 24)
"""Per level: how many meetings are listed (one count per level; 2^24 subsets at level 10)."""


def gen_meetings(difficulty: int, rng: random.Random) -> tuple[Inputs, list[str]]:
    """A hidden chain of k disjoint meetings plus decoys that each contain a chain meeting.

    Any decoy can be swapped for a chain meeting it contains, so the optimum is exactly k; k is
    drawn uniformly so the answer is spread. Times are on a 15-minute grid from 08:00 to 18:00.
    Each level lists exactly ``_MEETINGS[difficulty - 1]`` meetings.
    """
    total = _MEETINGS[difficulty - 1]
    while True:
        k = rng.randint(1 + difficulty // 3, 5 + difficulty // 2)
        points = sorted(rng.sample(range(41), 2 * k))
        chain = [[points[2 * i], points[2 * i + 1]] for i in range(k)]
        meetings = [list(m) for m in chain]
        for _ in range(40 * total):
            if len(meetings) == total:
                break
            i = rng.randrange(k)
            j = min(k - 1, i + rng.randint(0, 2))
            a = max(0, chain[i][0] - rng.randint(0, 4))
            b = min(40, chain[j][1] + rng.randint(0, 4))
            if [a, b] not in meetings:
                meetings.append([a, b])
        if len(meetings) == total:
            break
    rng.shuffle(meetings)
    meetings = [[480 + 15 * a, 480 + 15 * b] for a, b in meetings]
    text = "; ".join(f"{_hhmm(a)}-{_hhmm(b)}" for a, b in meetings)
    return {"meetings": meetings}, [text]


def solve_meetings_greedy(inputs: Inputs) -> int:
    """Earliest-finish-first greedy."""
    count, free_at = 0, -1
    for start, end in sorted(inputs["meetings"], key=lambda m: m[1]):
        if start >= free_at:
            count += 1
            free_at = end
    return count


def solve_meetings_dp(inputs: Inputs) -> int:
    """Dynamic programme over meetings sorted by end, with binary search for compatibility."""
    items = sorted((end, start) for start, end in inputs["meetings"])
    ends = [e for e, _ in items]
    best = [0] * (len(items) + 1)
    for i, (_, start) in enumerate(items, 1):
        j = bisect.bisect_right(ends, start, 0, i - 1)
        best[i] = max(best[i - 1], best[j] + 1)
    return best[-1]


# --------------------------------------------------------------------------- common free slot


_FREE_SLOT = ((2, 1), (2, 2), (2, 3), (3, 2), (3, 3), (4, 3), (4, 4), (5, 4), (5, 5), (6, 5))
"""Per level: how many calendars, and how many separate busy blocks each has (the number of
blocks plus calendars grows at every level)."""


def _busy_blocks(rng: random.Random, count: int, longest: int, first: bool) -> list[list[int]]:
    """``count`` busy blocks of 1 to ``longest`` quarter hours over 09:00-18:00 that neither
    overlap nor touch (so the calendar lists exactly ``count`` blocks); the first calendar
    starts at 09:00."""
    while True:
        busy: list[list[int]] = []
        for _ in range(count):
            a = 0 if first and not busy else rng.randrange(35)
            busy.append([a, min(a + rng.randint(1, longest), 36)])
        busy.sort()
        if all(b[0] > a[1] for a, b in itertools.pairwise(busy)):
            return busy


def gen_free_slot(difficulty: int, rng: random.Random) -> tuple[Inputs, list[str]]:
    """``people`` calendars of ``blocks`` busy blocks each (one pair per level, see
    ``_FREE_SLOT``), in 15-minute units over 09:00-18:00."""
    people, blocks = _FREE_SLOT[difficulty - 1]
    longest = max(1, min(6, 40 // (people * blocks)))  # the day stays about half free
    while True:
        duration = rng.randint(2, 6)
        calendars = [_busy_blocks(rng, blocks, longest, p == 0) for p in range(people)]
        inputs: Inputs = {"calendars": calendars, "duration": duration}
        if solve_free_merge(inputs) != "none":
            break
    text = "\n".join(
        f"Person {i + 1} is busy "
        + ", ".join(f"{_hhmm(540 + 15 * a)}-{_hhmm(540 + 15 * b)}" for a, b in cal)
        for i, cal in enumerate(calendars)
    )
    return inputs, [text, str(15 * duration)]


def solve_free_brute(inputs: Inputs) -> str:
    """Try every 15-minute start and check each unit against every calendar."""
    busy = {u for cal in inputs["calendars"] for a, b in cal for u in range(a, b)}
    d = int(inputs["duration"])
    for start in range(36 - d + 1):
        if not any(u in busy for u in range(start, start + d)):
            return _hhmm(540 + 15 * start)
    return "none"


def solve_free_merge(inputs: Inputs) -> str:
    """Sweep all busy intervals by start and return the first gap long enough."""
    d = int(inputs["duration"])
    cursor = 0
    for a, b in sorted(iv for cal in inputs["calendars"] for iv in cal):
        if a - cursor >= d:
            break
        cursor = max(cursor, b)
    if 36 - cursor < d:
        return "none"
    return _hhmm(540 + 15 * cursor)


# --------------------------------------------------------------------------- event order

_EVENTS = [
    "breakfast",
    "meeting",
    "lunch",
    "gym",
    "call",
    "shopping",
    "reading",
    "nap",
    "dinner",
    "laundry",
    "email",
    "walk",
    "cooking",
    "cleaning",
    "homework",
    "concert",
    "haircut",
    "interview",
    "dentist",
    "movie",
]


def gen_events(difficulty: int, rng: random.Random) -> tuple[Inputs, list[str]]:
    """3 + difficulty // 2 events; consecutive-pair clues plus (difficulty + 1) // 2 redundant
    ones, shuffled: 2 + difficulty clues in all."""
    n = (3, 4, 4, 5, 5, 6, 7, 8, 9, 10)[difficulty - 1]  # 10! orderings at level 10
    order = rng.sample(_EVENTS, n)
    pairs = {(i, i + 1) for i in range(n - 1)}
    extra = [(i, j) for i in range(n) for j in range(i + 2, n)]
    pairs.update(rng.sample(extra, min(len(extra), (difficulty + 1) // 2)))
    clues = [[order[i], order[j]] for i, j in sorted(pairs)]
    rng.shuffle(clues)
    text = "; ".join(
        f"the {a} happened before the {b}"
        if rng.random() < 0.5
        else f"the {b} happened after the {a}"
        for a, b in clues
    )
    names = sorted(order)
    return {"events": names, "before": clues}, [", ".join(names), text]


def solve_events_kahn(inputs: Inputs) -> list[str]:
    """Kahn's topological sort (the clues force a unique order)."""
    indeg = {e: 0 for e in inputs["events"]}
    succ: dict[str, list[str]] = {e: [] for e in inputs["events"]}
    for a, b in inputs["before"]:
        succ[a].append(b)
        indeg[b] += 1
    ready = [e for e, d in indeg.items() if d == 0]
    heapq.heapify(ready)
    out: list[str] = []
    while ready:
        e = heapq.heappop(ready)
        out.append(e)
        for f in succ[e]:
            indeg[f] -= 1
            if indeg[f] == 0:
                heapq.heappush(ready, f)
    return out


def solve_events_ancestors(inputs: Inputs) -> list[str]:
    """Rank each event by how many events must precede it (transitive closure)."""
    pred: dict[str, set[str]] = {e: set() for e in inputs["events"]}
    for a, b in inputs["before"]:
        pred[b].add(a)
    changed = True
    while changed:
        changed = False
        for e, ps in pred.items():
            closure = set(ps)
            for p in ps:
                closure |= pred[p]
            if len(closure) != len(ps):
                pred[e] = closure
                changed = True
    return sorted(inputs["events"], key=lambda e: len(pred[e]))


# --------------------------------------------------------------------------- time zones


def gen_timezone(difficulty: int, rng: random.Random) -> tuple[Inputs, list[str]]:
    """Departure time and zone, ``difficulty`` legs (flights and layovers in turn; a last leg
    after a flight is a train ride), arrival zone."""
    step = 30 if difficulty >= 6 else 60
    depart_zone = step * rng.randint(-10 * 60 // step, 12 * 60 // step)
    arrive_zone = step * rng.randint(-10 * 60 // step, 12 * 60 // step)
    depart = 5 * rng.randrange(288)
    n_legs = STEPS[difficulty - 1]
    legs = [5 * rng.randint(6, 150 if i % 2 == 0 else 50) for i in range(n_legs)]
    kinds = ["a flight" if i % 2 == 0 else "a layover" for i in range(n_legs)]
    if difficulty % 2 == 0:
        kinds[-1] = "a train ride"
    text = ", then ".join(
        f"{kind} of {m // 60} h {m % 60} min" for kind, m in zip(kinds, legs, strict=True)
    )

    def zone(offset: int) -> str:
        sign = "+" if offset >= 0 else "-"
        return f"UTC{sign}{abs(offset) // 60}:{abs(offset) % 60:02d}"

    inputs: Inputs = {
        "depart": depart,
        "depart_zone": depart_zone,
        "arrive_zone": arrive_zone,
        "legs": legs,
    }
    return inputs, [_hhmm(depart), zone(depart_zone), text, zone(arrive_zone)]


def solve_timezone_minutes(inputs: Inputs) -> str:
    """Convert to UTC minutes, add the legs, convert to the arrival zone, mod one day."""
    t = int(inputs["depart"]) - int(inputs["depart_zone"]) + sum(inputs["legs"])
    return _hhmm((t + int(inputs["arrive_zone"])) % 1440)


def solve_timezone_datetime(inputs: Inputs) -> str:
    """Use aware ``datetime`` objects and ``astimezone``."""
    src = dt.timezone(dt.timedelta(minutes=int(inputs["depart_zone"])))
    dst = dt.timezone(dt.timedelta(minutes=int(inputs["arrive_zone"])))
    when = dt.datetime(2024, 6, 1, tzinfo=src) + dt.timedelta(minutes=int(inputs["depart"]))
    for leg in inputs["legs"]:
        when += dt.timedelta(minutes=leg)
    return when.astimezone(dst).strftime("%H:%M")


# --------------------------------------------------------------------------- text-only solvers


def _clock(text: str) -> int:
    """``HH:MM`` as minutes since midnight."""
    hours, minutes = text.split(":")
    return int(hours) * 60 + int(minutes)


def text_weekday(question: str) -> str:
    """Read the start day and every shift from the question; step through the week."""
    day = _DAYS.index(between(question, "Today is ", ".").lower())
    for amount, unit, way in findall(r"(\d+) (days?|weeks?) (later|earlier)", question):
        days = int(amount) * (7 if unit.startswith("week") else 1)
        day += days if way == "later" else -days
    return _DAYS[day % 7]


def text_meetings(question: str) -> int:
    """Read the offered meetings; earliest-finish greedy on the clock times."""
    offered = findall(r"(\d\d:\d\d)-(\d\d:\d\d)", between(question, "(start-end): ", ". You"))
    count, free_at = 0, -1
    for start, end in sorted(((_clock(a), _clock(b)) for a, b in offered), key=lambda m: m[1]):
        if start >= free_at:
            count, free_at = count + 1, end
    return count


def text_free_slot(question: str) -> str:
    """Read every busy block and the meeting length; try each minute from 09:00."""
    busy = [
        (_clock(a), _clock(b))
        for a, b in findall(r"(\d\d:\d\d)-(\d\d:\d\d)", between(question, "Busy times"))
    ]
    length = int(re.findall(r"of a (\d+)-minute meeting", question)[0])
    # the earliest start is 09:00 or the end of a busy block
    for start in sorted({540, *(end for _, end in busy)}):
        fits = start + length <= 1080
        if fits and all(end <= start or begin >= start + length for begin, end in busy):
            return _hhmm(start)
    raise Undetermined("no common free slot")


def text_events(question: str) -> list[str]:
    """Read the events and the before/after clues; the order must be the only one."""
    events = between(question, "The events ", " each happened").split(", ")
    before: dict[str, set[str]] = {
        e: set() for e in events
    }  # event -> events known to come before it
    for a, word, b in findall(r"the (\w+) happened (before|after) the (\w+)", question):
        first, then = (a, b) if word == "before" else (b, a)
        before[then].add(first)
    order: list[str] = []
    while len(order) < len(events):
        ready = [e for e in events if e not in order and before[e] <= set(order)]
        if len(ready) != 1:
            raise Undetermined(f"{len(ready)} events could come next after {order}")
        order.append(ready[0])
    return order


def text_timezone(question: str) -> str:
    """Read the departure, both UTC offsets and the leg durations; add them up."""
    depart = _clock(between(question, "departs at ", " local"))
    zones = [
        (1 if sign == "+" else -1) * (int(h) * 60 + int(m))
        for sign, h, m in findall(r"UTC([+-])(\d+):(\d\d)", question)
    ]
    legs = sum(int(h) * 60 + int(m) for h, m in findall(r"(\d+) h (\d+) min", question))
    return _hhmm((depart - zones[0] + legs + zones[1]) % 1440)


FAMILIES = (
    Family(
        id="weekday_shift",
        version="3",
        category="temporal",
        title="Weekday after shifts",
        template=(
            "Today is [Input Slot 1]. Move [Input Slot 2]. Which day of the week is it then?"
        ),
        generate=gen_weekday,
        validators=(solve_weekday_mod, solve_weekday_calendar),
        answer_format="Answer with the weekday name only.",
        size=lambda inputs: len(inputs["shifts"]),
        text_solver=text_weekday,
        trivial=lambda inputs: solve_weekday_mod(inputs) == inputs["start"],
    ),
    Family(
        id="max_meetings",
        version="3",
        category="temporal",
        title="Maximum non-overlapping meetings",
        template=(
            "These meetings are offered (start-end): [Input Slot 1]. You can attend one meeting "
            "at a time, and a meeting may start exactly when the previous one ends. What is the "
            "largest number of meetings you can attend in full?"
        ),
        generate=gen_meetings,
        validators=(solve_meetings_greedy, solve_meetings_dp),
        answer_format="Answer with the integer only.",
        size=lambda inputs: len(inputs["meetings"]),
        text_solver=text_meetings,
    ),
    Family(
        id="common_free_slot",
        version="3",
        category="temporal",
        title="Earliest common free slot",
        template=(
            "The working day runs from 09:00 to 18:00. Busy times (start-end):\n[Input Slot 1]\n"
            "Outside these times everyone is free; a busy block ending at a time leaves them free "
            "from that time. What is the earliest start time of a [Input Slot 2]-minute meeting "
            "that all of them can attend, finishing by 18:00?"
        ),
        generate=gen_free_slot,
        validators=(solve_free_brute, solve_free_merge),
        answer_format="Answer with the start time as HH:MM (24-hour clock).",
        size=lambda inputs: sum(len(c) for c in inputs["calendars"]) + len(inputs["calendars"]),
        text_solver=text_free_slot,
    ),
    Family(
        id="event_order",
        version="3",
        category="temporal",
        title="Event order from before/after clues",
        template=(
            "The events [Input Slot 1] each happened once, at different times. Clues: "
            "[Input Slot 2]. List the events from earliest to latest."
        ),
        generate=gen_events,
        validators=(solve_events_kahn, solve_events_ancestors),
        answer_format="Answer with the event names in order, separated by commas.",
        size=lambda inputs: len(inputs["before"]),
        text_solver=text_events,
    ),
    Family(
        id="timezone_arrival",
        version="3",
        category="temporal",
        title="Arrival time across time zones",
        template=(
            "A trip departs at [Input Slot 1] local time in a city at [Input Slot 2]. It consists "
            "of [Input Slot 3]. The destination city is at [Input Slot 4]. What is the local "
            "time at the destination on arrival?"
        ),
        generate=gen_timezone,
        validators=(solve_timezone_minutes, solve_timezone_datetime),
        answer_format="Answer with the time as HH:MM (24-hour clock).",
        size=lambda inputs: len(inputs["legs"]),
        text_solver=text_timezone,
    ),
)
