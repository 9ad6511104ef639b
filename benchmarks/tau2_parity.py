"""Parity of an imported τ²-bench domain with τ²-bench itself, task by task.

    python benchmarks/tau2_parity.py PATH [--domain airline|retail] [--tau2-python PY] [--tasks FILE]

PATH is a τ²-bench checkout. Every task's gold actions are replayed twice from the checkout's
``db.json``: through τ²-bench's own environment (run by ``--tau2-python``, an interpreter where
``tau2`` is installed; the τ²-bench side is the small driver below, sent on stdin) and through the
domain ``veritask import-tau2`` builds. Compared: every tool message's content (JSON-parsed as
τ²-bench's evaluator does), the final database hash (τ²-bench's ``get_hash``: sha256 of the
sorted-keys JSON of ``model_dump()``), and, for each refused gold write, that the veritask state
did not change. Without PATH the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from veritask.env import CompiledDomain, Environment
from veritask.env._tau2 import replay, tau2_db
from veritask.policy.tau2 import import_tau2

_DRIVER = r"""
import json, sys
from tau2.data_model.message import ToolCall
from tau2.environment.environment import Environment
if json.loads(sys.argv[1]) == "airline":
    from tau2.domains.airline.data_model import FlightDB as DB
    from tau2.domains.airline.tools import AirlineTools as Tools
else:
    from tau2.domains.retail.data_model import RetailDB as DB
    from tau2.domains.retail.tools import RetailTools as Tools

job = json.load(sys.stdin)
seed = DB.load(job["db"])
for task in job["tasks"]:
    env = Environment(domain_name=job["domain"], policy="", tools=Tools(seed.model_copy(deep=True)))
    contents = []
    for i, action in enumerate(task["actions"]):
        msg = env.get_response(ToolCall(id=str(i), name=action["name"], arguments=action.get("arguments") or {}))
        contents.append([msg.content, bool(msg.error)])
    print(json.dumps({"id": task["id"], "contents": contents, "hash": env.tools.db.get_hash()}), flush=True)
"""


def tau2_hash(db: dict[str, Any]) -> str:
    """τ²-bench's database hash of a ``model_dump()``-shaped dict."""
    return hashlib.sha256(json.dumps(db, sort_keys=True, default=str).encode()).hexdigest()


def _parsed(content: str) -> Any:
    try:
        return json.loads(content)
    except json.JSONDecodeError:
        return content


def _ours(domain: CompiledDomain, task: dict[str, Any]) -> dict[str, Any]:
    env = Environment(domain)
    contents, unchanged = [], True
    for action in task["actions"]:
        before = env.image()
        ((_, content),) = replay(env, [action])
        if isinstance(content, str) and content.startswith("Error: "):
            unchanged = unchanged and env.image() == before
        contents.append(content)
    return {"contents": contents, "hash": tau2_hash(tau2_db(env)), "unchanged": unchanged}


def _theirs(
    python: str, domain: str, db: Path, tasks: list[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    job = json.dumps({"db": str(db), "domain": domain, "tasks": tasks})
    proc = subprocess.run(
        [python, "-c", _DRIVER, json.dumps(domain)],
        input=job,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        sys.exit(f"the τ²-bench side failed:\n{proc.stderr[-2000:]}")
    return {r["id"]: r for r in map(json.loads, proc.stdout.splitlines())}


def _compare(
    task_id: str, ours: dict[str, Any], theirs: dict[str, Any], actions: list[Any]
) -> list[str]:
    problems = []
    for i, (mine, (content, _error)) in enumerate(
        zip(ours["contents"], theirs["contents"], strict=True)
    ):
        if (_parsed(mine) if isinstance(mine, str) else mine) != _parsed(content):
            name = actions[i]["name"]
            problems.append(
                f"{task_id} action {i} {name}: ours {str(mine)[:120]!r} vs τ² {content[:120]!r}"
            )
    if ours["hash"] != theirs["hash"]:
        problems.append(f"{task_id}: final database hash differs")
    if not ours["unchanged"]:
        problems.append(f"{task_id}: a refused write changed the veritask state")
    return problems


def main() -> None:
    """Run the comparison and print one line per mismatch and a summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, help="a τ²-bench checkout")
    parser.add_argument("--domain", default="retail", choices=["airline", "retail"])
    parser.add_argument(
        "--tau2-python", default=sys.executable, help="a Python with tau2 installed"
    )
    parser.add_argument("--tasks", type=Path, help="tasks file [default: the domain's tasks.json]")
    args = parser.parse_args()
    if args.path is None:
        print("skipped: give the path of a τ²-bench checkout (and --tau2-python)")
        return
    data = args.path / "data" / "tau2" / "domains" / args.domain
    raw = json.loads((args.tasks or data / "tasks.json").read_text())
    tasks = [{"id": t["id"], "actions": t["evaluation_criteria"].get("actions") or []} for t in raw]
    started = time.perf_counter()
    domain = CompiledDomain.from_spec(import_tau2(args.path, args.domain).spec)
    ours = {t["id"]: _ours(domain, t) for t in tasks}
    ours_s = time.perf_counter() - started
    started = time.perf_counter()
    theirs = _theirs(args.tau2_python, args.domain, data / "db.json", tasks)
    theirs_s = time.perf_counter() - started
    problems: list[str] = []
    matched = 0
    for t in tasks:
        found = _compare(t["id"], ours[t["id"]], theirs[t["id"]], t["actions"])
        matched += not found
        problems += found
    print("\n".join(problems))
    calls = sum(len(t["actions"]) for t in tasks)
    print(
        f"{args.domain}: {matched}/{len(tasks)} tasks match ({calls} gold calls); "
        f"veritask {ours_s:.1f}s (import included), τ²-bench {theirs_s:.1f}s (process included)"
    )


if __name__ == "__main__":
    main()
