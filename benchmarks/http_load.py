"""HTTP server load benchmark: many concurrent sessions of seeded tool calls over loopback.

Run: ``.venv/bin/python benchmarks/http_load.py [--sessions 200] [--calls 5] [--rounds 3] [--json]
[--baseline-src OLD/src] [--latency-episodes 30] [--only-latency]``

Each round starts ``--sessions`` client threads at once; each thread opens one keep-alive
connection and runs one episode: ``POST /reset``, ``--calls`` seeded ``POST /step`` calls (lends,
returns and reads on ``mock``; some pass, some are rejected by the policy), ``GET /state`` and
``DELETE /session/ID``. The server is ``EnvHTTPServer`` (the Starlette app on uvicorn) and runs
in its own process (``--server subprocess``, the default) so that the client threads do not
compete with it for the GIL; ``--server thread`` runs it in a background thread of this process.

Reported: requests per second over the round (first request sent to last answer received), and
p50 / p95 / p99 request latency as the client sees it. Every round also checks isolation: each
session's final ``state_sha256`` and rows must equal those of the same calls run alone on a fresh
``Environment``.

Baseline, measured in the same run: the same operations in-process, one thread, no HTTP
(``Environment(...)`` for reset, ``Environment.call`` for step, ``state_digest`` for state,
``close`` for delete). With ``--baseline-src``, a second server runs from that source tree (an
earlier checkout's ``src``), the two servers take turns round by round, and the table gets a row
for each and their throughput ratio.

Sequential latency (``--latency-episodes``, 0 to skip): one client, one request at a time, the way
an RL worker drives one episode: ``POST /reset``, ``--calls`` ``POST /step`` calls and ``DELETE``,
timed per round trip. Two servers of this tree run side by side, one as shipped and one with
``TCP_NODELAY`` left off (``nagle``: the behaviour before the fix, when each answer's body waited
for the client's delayed acknowledgement of its head), and two clients take turns on each:
``EnvClient`` and a plain keep-alive ``httpx.Client``. Reported: median and p95 per round trip
for ``/reset`` and ``/step``, and the ratio nagle / shipped. The in-process baseline is the same
calls on an ``Environment`` in this thread.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sqlite3
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from veritask.domains import load_domain
from veritask.env import CompiledDomain, Environment
from veritask.serve import DomainSource, state_digest, state_rows
from veritask.serve.client import EnvClient
from veritask.serve.server import EnvHTTPServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "serve"))
from test_http_server import random_calls  # the workload of the isolation test, not a copy

Call = tuple[str, dict[str, Any]]

_SERVER = """
import sys
from veritask.serve import open_source
from veritask.serve import server as server_module
from veritask.serve.server import EnvHTTPServer
if sys.argv[3:] == ["nagle"]:
    server_module._GuardedH11.tcp_nodelay = False
server = EnvHTTPServer(open_source(sys.argv[1]), port=0, max_sessions=int(sys.argv[2]))
print(server.url, flush=True)
server.serve_forever()
"""


def percentile(values: list[float], q: float) -> float:
    """The ``q``-quantile (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def load_round(url: str, plans: list[list[Call]]) -> dict[str, Any]:
    """One round: every plan as one session in its own thread, all started together."""
    n = len(plans)
    latencies: list[list[float]] = [[] for _ in range(n)]
    finals: list[dict[str, Any] | None] = [None] * n
    ends: list[float] = [0.0] * n
    errors: list[BaseException] = []
    barrier = threading.Barrier(n + 1, timeout=120)

    def run(i: int) -> None:
        lat = latencies[i]
        try:
            with EnvClient(url, timeout=120) as client:
                client.health()  # connect before the clock starts
                barrier.wait()
                t = time.perf_counter()
                sid = client.reset()["session_id"]
                lat.append(time.perf_counter() - t)
                for tool, args in plans[i]:
                    t = time.perf_counter()
                    client.step(sid, tool, args)
                    lat.append(time.perf_counter() - t)
                t = time.perf_counter()
                finals[i] = client.state(sid, rows=True)
                lat.append(time.perf_counter() - t)
                t = time.perf_counter()
                client.delete(sid)
                ends[i] = time.perf_counter()
                lat.append(ends[i] - t)
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
    for th in threads:
        th.start()
    barrier.wait()
    start = time.perf_counter()
    for th in threads:
        th.join()
    if errors:
        raise RuntimeError(f"{len(errors)} session(s) failed: {errors[0]!r}")
    wall = max(ends) - start
    flat = [x for lat in latencies for x in lat]
    return {"wall_s": wall, "requests": len(flat), "latencies": flat, "finals": finals}


def isolated(domain: CompiledDomain, plans: list[list[Call]], finals: list[Any]) -> int:
    """How many sessions ended exactly where the same calls run alone end."""
    good = 0
    for plan, final in zip(plans, finals, strict=True):
        with Environment(domain) as env:
            for tool, args in plan:
                env.call(tool, args)
            rows = json.loads(json.dumps(state_rows(env)))
            if final["state_sha256"] == state_digest(env) and final["rows"] == rows:
                good += 1
    return good


def in_process(domain: CompiledDomain, plans: list[list[Call]]) -> dict[str, Any]:
    """The same operations without HTTP, one after another in this thread."""
    latencies: list[float] = []
    start = time.perf_counter()
    for plan in plans:
        t = time.perf_counter()
        env = Environment(domain)
        latencies.append(time.perf_counter() - t)
        for tool, args in plan:
            t = time.perf_counter()
            env.call(tool, args)
            latencies.append(time.perf_counter() - t)
        t = time.perf_counter()
        state_digest(env)
        latencies.append(time.perf_counter() - t)
        t = time.perf_counter()
        env.close()
        latencies.append(time.perf_counter() - t)
    wall = time.perf_counter() - start
    return {"wall_s": wall, "requests": len(latencies), "latencies": latencies}


def start_server(
    mode: str, domain: str, max_sessions: int, src: str | None = None, nagle: bool = False
) -> tuple[str, Any]:
    """The server's URL and a handle to stop it (``src``: run the server from that tree;
    ``nagle``: a subprocess server that leaves ``TCP_NODELAY`` off)."""
    if mode == "thread" and src is None and not nagle:
        server = EnvHTTPServer(
            DomainSource(load_domain(domain)), port=0, max_sessions=max_sessions
        ).start()
        return server.url, server
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVER, domain, str(max_sessions), *(["nagle"] if nagle else [])],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http://"):
        proc.kill()
        raise RuntimeError("the server did not start")
    return url, proc


def stop_server(handle: Any) -> None:
    """Stop what ``start_server`` started."""
    if isinstance(handle, EnvHTTPServer):
        handle.shutdown()
        return
    handle.terminate()
    handle.wait(timeout=10)


def summarize(args: argparse.Namespace, rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The median round's figures (and the in-process baseline's) as one record."""
    by_wall = sorted(rounds, key=lambda r: r["wall_s"])
    median = by_wall[len(by_wall) // 2]
    base = sorted((r["baseline"] for r in rounds), key=lambda b: b["wall_s"])[len(rounds) // 2]
    http_rps = median["requests"] / median["wall_s"]
    base_rps = base["requests"] / base["wall_s"]
    return {
        "sessions": args.sessions,
        "calls_per_session": args.calls,
        "requests_per_round": median["requests"],
        "rounds": args.rounds,
        "server": args.server,
        "http_rps": http_rps,
        "http_p50_ms": 1e3 * percentile(median["latencies"], 0.50),
        "http_p95_ms": 1e3 * percentile(median["latencies"], 0.95),
        "http_p99_ms": 1e3 * percentile(median["latencies"], 0.99),
        "inprocess_ops_per_s": base_rps,
        "inprocess_p50_us": 1e6 * percentile(base["latencies"], 0.50),
        "inprocess_p95_us": 1e6 * percentile(base["latencies"], 0.95),
        "isolated": [r["isolated"] for r in rounds],
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}",
    }


def print_table(args: argparse.Namespace, summaries: dict[str, dict[str, Any]]) -> bool:
    """Print the summaries as markdown rows; True when every session stayed isolated."""
    first = next(iter(summaries.values()))
    print(f"machine: {first['machine']}; server: {args.server}; median of {args.rounds} rounds")
    print()
    print(
        "| server | sessions | calls/session | requests | HTTP req/s | HTTP p50 | HTTP p95 "
        "| HTTP p99 | in-process ops/s | in-process p50 | isolated |"
    )
    print("|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---|")
    ok = True
    for label, s in summaries.items():
        isolated_ok = all(n == args.sessions for n in s["isolated"])
        ok = ok and isolated_ok
        print(
            f"| {label} | {args.sessions} | {args.calls} | {s['requests_per_round']:,} "
            f"| {s['http_rps']:,.0f} | {s['http_p50_ms']:.1f} ms | {s['http_p95_ms']:.1f} ms "
            f"| {s['http_p99_ms']:.1f} ms | {s['inprocess_ops_per_s']:,.0f} "
            f"| {s['inprocess_p50_us']:.0f} us "
            f"| {'yes' if isolated_ok else 'NO'} ({min(s['isolated'])}/{args.sessions}) |"
        )
    if "baseline" in summaries:
        ratio = summaries["this tree"]["http_rps"] / summaries["baseline"]["http_rps"]
        print(f"\nthroughput, this tree / baseline: {ratio:.2f}")
    return ok


def run_rounds(
    args: argparse.Namespace, urls: dict[str, str], domain: CompiledDomain
) -> dict[str, list[dict[str, Any]]]:
    """``args.rounds`` rounds on each server, the servers taking turns round by round."""
    rounds: dict[str, list[dict[str, Any]]] = {label: [] for label in urls}
    for url in urls.values():
        load_round(url, [random_calls(random.Random(-1 - i), args.calls) for i in range(20)])
    for r in range(args.rounds):
        rng = random.Random(f"{args.seed}-{r}")
        plans = [
            random_calls(random.Random(rng.random()), args.calls) for _ in range(args.sessions)
        ]
        baseline = in_process(domain, plans)
        for label, url in urls.items():
            result = load_round(url, plans)
            result["isolated"] = isolated(domain, plans, result.pop("finals"))
            result["baseline"] = baseline
            rounds[label].append(result)
    return rounds


class _PlainHttpx:
    """The same endpoints over a plain keep-alive ``httpx.Client`` (the library's defaults)."""

    def __init__(self, url: str) -> None:
        self.http = httpx.Client(base_url=url, timeout=60)

    def _json(self, response: httpx.Response) -> dict[str, Any]:
        response.raise_for_status()
        value: dict[str, Any] = response.json()
        return value

    def health(self) -> dict[str, Any]:
        return self._json(self.http.get("/health"))

    def reset(self) -> dict[str, Any]:
        return self._json(self.http.post("/reset", json={}))

    def step(self, sid: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        action = {"tool": tool, "arguments": args}
        return self._json(self.http.post("/step", json={"session_id": sid, "action": action}))

    def delete(self, sid: str) -> dict[str, Any]:
        return self._json(self.http.delete(f"/session/{sid}"))

    def close(self) -> None:
        self.http.close()


CLIENTS: dict[str, Callable[[str], Any]] = {"EnvClient": EnvClient, "httpx.Client": _PlainHttpx}


def sequential(url: str, kind: str, plans: list[list[Call]]) -> dict[str, list[float]]:
    """Each plan as one episode, one request at a time over one keep-alive connection of
    client ``kind``; seconds per round trip, by endpoint."""
    lat: dict[str, list[float]] = defaultdict(list)
    client = CLIENTS[kind](url)
    try:
        client.health()  # connect before the clock starts
        for plan in plans:
            t = time.perf_counter()
            sid = client.reset()["session_id"]
            lat["reset"].append(time.perf_counter() - t)
            for tool, args in plan:
                t = time.perf_counter()
                client.step(sid, tool, args)
                lat["step"].append(time.perf_counter() - t)
            client.delete(sid)
    finally:
        client.close()
    return lat


def sequential_in_process(domain: CompiledDomain, plans: list[list[Call]]) -> dict[str, Any]:
    """The same resets and calls on an ``Environment`` in this thread (seconds each)."""
    lat: dict[str, list[float]] = defaultdict(list)
    for plan in plans:
        t = time.perf_counter()
        env = Environment(domain)
        lat["reset"].append(time.perf_counter() - t)
        for tool, args in plan:
            t = time.perf_counter()
            env.call(tool, args)
            lat["step"].append(time.perf_counter() - t)
        env.close()
    return lat


def run_latency(args: argparse.Namespace, domain: CompiledDomain) -> dict[str, Any]:
    """Sequential round trips on a shipped and a ``nagle`` server, taking turns round by round;
    median and p95 per (server, client, endpoint) in milliseconds."""
    plans = [
        random_calls(random.Random(f"{args.seed}-seq-{i}"), args.calls)
        for i in range(args.latency_episodes)
    ]
    handles: list[Any] = []
    urls: dict[str, str] = {}
    lat: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    try:
        for label in ("shipped", "nagle"):
            url, handle = start_server("subprocess", "mock", 64, nagle=label == "nagle")
            urls[label] = url
            handles.append(handle)
        for _ in range(args.rounds):
            for label, url in urls.items():
                for kind in CLIENTS:
                    for endpoint, xs in sequential(url, kind, plans).items():
                        lat[(label, kind, endpoint)].extend(xs)
    finally:
        for handle in handles:
            stop_server(handle)
    for endpoint, xs in sequential_in_process(domain, plans).items():
        lat[("in-process", "-", endpoint)].extend(xs)
    return {
        "/".join(key): {
            "n": len(xs),
            "p50_ms": 1e3 * percentile(xs, 0.50),
            "p95_ms": 1e3 * percentile(xs, 0.95),
        }
        for key, xs in lat.items()
    }


def print_latency(args: argparse.Namespace, figures: dict[str, Any]) -> None:
    """The sequential latencies as a markdown table, one row per client and endpoint."""
    print(
        f"\nsequential round trips: {args.latency_episodes} episodes x (reset + {args.calls} "
        f"steps) per client and server, {args.rounds} rounds"
    )
    print()
    print(
        "| client | endpoint | p50 | p95 | p50, nagle | p95, nagle | p50 nagle / p50 "
        "| in-process p50 |"
    )
    print("|:---|:---|---:|---:|---:|---:|---:|---:|")
    for kind in CLIENTS:
        for endpoint in ("reset", "step"):
            new = figures[f"shipped/{kind}/{endpoint}"]
            old = figures[f"nagle/{kind}/{endpoint}"]
            base = figures[f"in-process/-/{endpoint}"]
            print(
                f"| {kind} | /{endpoint} | {new['p50_ms']:.2f} ms | {new['p95_ms']:.2f} ms "
                f"| {old['p50_ms']:.1f} ms | {old['p95_ms']:.1f} ms "
                f"| {old['p50_ms'] / new['p50_ms']:.0f}x | {1e3 * base['p50_ms']:.0f} us |"
            )


def run_load(args: argparse.Namespace, domain: CompiledDomain) -> dict[str, dict[str, Any]]:
    """The concurrent load rounds on this tree (and ``--baseline-src``), summarized."""
    sources = {"this tree": None, "baseline": args.baseline_src}
    handles: list[Any] = []
    urls: dict[str, str] = {}
    try:
        for label, src in sources.items():
            if label == "baseline" and src is None:
                continue
            url, handle = start_server(args.server, "mock", max(1024, args.sessions), src)
            urls[label] = url
            handles.append(handle)
        rounds = run_rounds(args, urls, domain)
    finally:
        for handle in handles:
            stop_server(handle)
    return {label: summarize(args, r) for label, r in rounds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--calls", type=int, default=5, help="Tool calls per session.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--server", choices=["subprocess", "thread"], default="subprocess")
    parser.add_argument("--baseline-src", help="Also serve from this source tree, in turns.")
    parser.add_argument("--latency-episodes", type=int, default=30, help="0: no latency run.")
    parser.add_argument("--only-latency", action="store_true", help="Skip the load rounds.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="Print JSON instead of markdown.")
    args = parser.parse_args()

    domain = CompiledDomain.from_spec(load_domain("mock"))
    summaries = {} if args.only_latency else run_load(args, domain)
    latency = run_latency(args, domain) if args.latency_episodes > 0 else {}
    if args.json:
        print(json.dumps({**summaries, "sequential": latency}, indent=2))
        return
    ok = print_table(args, summaries) if summaries else True
    if latency:
        print_latency(args, latency)
    if not ok:
        raise SystemExit("state leaked between sessions")


if __name__ == "__main__":
    main()
