"""Environment benchmark: Environment.call vs raw SQLite, restore, snapshot and diff.

Run: ``.venv/bin/python benchmarks/env_bench.py [--rows 10000 100000] [--calls 2000] [--json]``

Everything is measured in one run on one machine so ratios are meaningful:

- raw: the same parameterized INSERT into flight_bookings against the same policy triggers, on a
  database without veritask's change tracking (the strictest baseline), through Python's sqlite3;
- call: ``Environment.call("insert_flight_bookings", ...)`` (argument validation, savepoint,
  authorizer, change tracking, structured result with the stored row), under the default
  per-call time limit and, separately, with ``call_time_limit=None``;
- restore / snapshot of the whole state;
- diff of a 10-row change between two states reached from a common origin (the RL case), on the
  tracked fast path and on the full-scan fallback, at each database size.

Both write columns record one success flag per write (the raw insert's row count, the call's
``ok``) and keep nothing else, so neither side pays for holding results the other drops.
"""

from __future__ import annotations

import argparse
import json
import platform
import sqlite3
import statistics
import time
from collections.abc import Callable
from typing import Any

from veritask.domains import load_domain
from veritask.env import (
    PAGE_SIZE,
    CompiledDomain,
    Environment,
    build_image,
    diff,
    diff_full,
    insert_rows,
)
from veritask.policy import DomainSpec, compile_sql, quote_ident


def bulk_rows(spec: DomainSpec, n_rows: int) -> dict[str, list[dict[str, Any]]]:
    """The seed plus about ``n_rows`` consistent rows: users, requests, one flight and hotel each."""
    rows: dict[str, list[dict[str, Any]]] = {k: list(v) for k, v in spec.seed.items()}
    n_req = max(1, n_rows // 3)
    n_users = max(1, n_req // 4)
    levels = ["STAFF", "MANAGER", "DIRECTOR", "VP"]
    rows["users"] += [
        {
            "id": f"u_bulk_{i}",
            "name": f"Bulk User {i}",
            "company_id": "comp_alpha",
            "user_level": levels[i % 4],
            "active": 1,
        }
        for i in range(n_users)
    ]
    first_req = 1 + max(r["id"] for r in rows["travel_requests"])
    first_fb = 1 + max(r["id"] for r in rows["flight_bookings"])
    first_hb = 1 + max(r["id"] for r in rows["hotel_bookings"])
    for i in range(n_req):
        req = first_req + i
        rows["travel_requests"].append(
            {
                "id": req,
                "user_id": f"u_bulk_{i % n_users}",
                "trip_purpose": f"Trip {i}",
                "status": "DRAFT",
                "current_step": 10,
                "flight_booking_count": 1,
                "hotel_booking_count": 1,
            }
        )
        rows["flight_bookings"].append(
            {
                "id": first_fb + i,
                "travel_request_id": req,
                "flight_code": f"BK{i}",
                "cost": 300,
                "class": "ECONOMY",
                "departure_step": 30,
                "booking_step": 10,
                "status": "PENDING",
                "approval_status": "NOT_REQUIRED",
                "policy_violation_flag": 0,
            }
        )
        rows["hotel_bookings"].append(
            {
                "id": first_hb + i,
                "travel_request_id": req,
                "hotel_vendor_id": "hv_marriott_01",
                "cost": 200,
                "booking_step": 10,
                "status": "PENDING",
                "reimbursable": 1,
            }
        )
    return rows


def policy_only_image(spec: DomainSpec, rows: dict[str, list[dict[str, Any]]]) -> bytes:
    """The same tables, rows and policy triggers, without veritask's change tracking."""
    compiled = compile_sql(spec)
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.executescript(compiled.tables)
    conn.execute("BEGIN")
    insert_rows(conn, spec, rows)
    conn.execute("COMMIT")
    conn.executescript(compiled.triggers)
    return conn.serialize()


def booking(req: int, i: int) -> dict[str, Any]:
    return {
        "travel_request_id": req,
        "flight_code": f"NEW{i}",
        "cost": 250,
        "class": "ECONOMY",
        "departure_step": 40,
        "booking_step": 20,
        "approval_status": "NOT_REQUIRED",
    }


def timed(fn: Callable[[], Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        fn()
        out.append((time.perf_counter_ns() - t0) / 1000.0)
    return out


def stats(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)
    return {
        "p50_us": round(statistics.median(s), 2),
        "p90_us": round(s[int(0.9 * (len(s) - 1))], 2),
        "n": len(s),
    }


def bench_writes(
    domain: CompiledDomain, rows: dict[str, list[dict[str, Any]]], image: bytes, calls: int
) -> dict[str, Any]:
    spec = domain.spec
    reqs = [r["id"] for r in rows["travel_requests"] if str(r["user_id"]).startswith("u_bulk_")][
        :calls
    ]
    args = [booking(req, i) for i, req in enumerate(reqs)]
    cols = list(args[0])
    sql = (
        f"INSERT INTO flight_bookings ({', '.join(quote_ident(c) for c in cols)}) "
        f"VALUES ({', '.join('?' for _ in cols)})"
    )
    raw = sqlite3.connect(":memory:", isolation_level=None)
    raw.execute("PRAGMA foreign_keys = ON")
    raw.deserialize(policy_only_image(spec, rows))
    # Each side records one success flag per write and keeps nothing else: holding thousands of
    # result objects alive on one side only would time the garbage collector, not the write.
    it = iter(args)
    raw_ok: list[bool] = []
    raw_t = timed(
        lambda: raw_ok.append(
            raw.execute(sql, [a[c] for a in (next(it),) for c in cols]).rowcount == 1
        ),
        len(args),
    )
    env = Environment(domain, image)
    it2 = iter(args)
    call_ok: list[bool] = []
    call_t = timed(
        lambda: call_ok.append(env.call("insert_flight_bookings", next(it2)).ok), len(args)
    )
    unlimited = Environment(domain, image, call_time_limit=None)
    it4 = iter(args)
    unlimited_t = timed(
        lambda: call_ok.append(unlimited.call("insert_flight_bookings", next(it4)).ok), len(args)
    )
    assert all(raw_ok) and all(call_ok), "a benchmark write was refused"
    raw_same = sqlite3.connect(":memory:", isolation_level=None)
    raw_same.execute("PRAGMA foreign_keys = ON")
    raw_same.deserialize(image)
    it3 = iter(args)
    raw_same_t = timed(
        lambda: raw_ok.append(
            raw_same.execute(sql, [a[c] for a in (next(it3),) for c in cols]).rowcount == 1
        ),
        len(args),
    )
    assert all(raw_ok), "a raw benchmark insert was refused"
    return {
        "raw_sqlite": stats(raw_t),
        "raw_sqlite_with_tracking": stats(raw_same_t),
        "env_call": stats(call_t),
        "env_call_no_time_limit": stats(unlimited_t),
    }


def bench_state(domain: CompiledDomain, image: bytes, reps: int) -> dict[str, Any]:
    env = Environment(domain, image)
    origin = env.snapshot()
    reqs = [
        r["id"]
        for r in env.call("query_travel_requests", {"status": "DRAFT", "limit": 100}).result["rows"]
    ]
    for i in range(10):  # a 10-row change: 5 new bookings, each bumping its request's counter
        if i % 2 == 0:
            assert env.call("insert_flight_bookings", booking(reqs[-1 - i], i)).ok
    target = env.snapshot()
    assert target.tracked.count() == 10, target.tracked.count()
    env.restore(origin)
    for i in range(4):
        env.call("insert_flight_bookings", booking(reqs[-1 - 2 * i], i))
    agent = env.snapshot()
    assert diff(agent, target) == diff_full(agent.data, target.data, agent.layout)
    return {
        "db_bytes": len(image),
        "restore": stats(timed(lambda: env.restore(origin), reps)),
        "snapshot": stats(timed(env.snapshot, reps)),
        "diff_tracked_snapshots": stats(timed(lambda: diff(agent, target), reps)),
        "diff_live_env_vs_target": stats(timed(lambda: env.diff(target), reps)),
        "diff_full_scan": stats(
            timed(lambda: diff_full(agent.data, target.data, agent.layout), max(5, reps // 20))
        ),
    }


def run(sizes: list[int], calls: int, reps: int) -> dict[str, Any]:
    spec = load_domain("travel")
    domain = CompiledDomain.from_spec(spec)
    out: dict[str, Any] = {
        "machine": f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}",
        "sizes": {},
    }
    for n in sizes:
        rows = bulk_rows(spec, n)
        image = build_image(spec, rows)
        total = sum(len(v) for v in rows.values())
        entry: dict[str, Any] = {"rows": total}
        entry.update(bench_writes(domain, rows, image, calls))
        entry.update(bench_state(domain, image, reps))
        entry["call_over_raw_p50"] = round(
            entry["env_call"]["p50_us"] / entry["raw_sqlite"]["p50_us"], 2
        )
        out["sizes"][str(n)] = entry
    return out


def markdown(res: dict[str, Any]) -> str:
    lines = [
        f"Machine: {res['machine']}",
        "",
        "| rows | raw insert p50 | raw + tracking p50 | call p50 | call / raw | call, no time limit p50 | restore p50 | snapshot p50 | diff 10-row (tracked) p50 | diff live env p50 | diff full scan p50 |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for e in res["sizes"].values():
        lines.append(
            f"| {e['rows']:,} | {e['raw_sqlite']['p50_us']} us | {e['raw_sqlite_with_tracking']['p50_us']} us | "
            f"{e['env_call']['p50_us']} us | {e['call_over_raw_p50']}x | "
            f"{e['env_call_no_time_limit']['p50_us']} us | "
            f"{e['restore']['p50_us']} us | {e['snapshot']['p50_us']} us | {e['diff_tracked_snapshots']['p50_us']} us | "
            f"{e['diff_live_env_vs_target']['p50_us']} us | {e['diff_full_scan']['p50_us']} us |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    res = run(args.rows, args.calls, args.reps)
    print(json.dumps(res, indent=2) if args.json else markdown(res))


if __name__ == "__main__":
    main()
