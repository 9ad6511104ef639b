"""τ²-bench's own evaluator on tasks exported with ``veritask export --format tau2``.

    python benchmarks/tau2_export_check.py TASKS.json --tau2-python PY --data DIR --domain D

TASKS.json is the export of packages generated on an imported τ²-bench domain, PY a Python
where ``tau2`` is installed, DIR the ``data`` folder of the τ²-bench checkout (or fixture) the
domain was imported from (``DIR/tau2/domains/<D>/db.json``). In τ²-bench's process, every task
is loaded with its ``Task`` model (the loader's validation), then graded with
``EnvironmentEvaluator.calculate_reward`` twice:

- **witness**: a trajectory whose assistant makes each gold action as a tool call (with the tool
  messages τ²-bench's environment returns); expected reward 1.0 on every task;
- **do-nothing**: an empty trajectory; expected reward 0.0, except on a task with no gold
  write, where doing nothing is right (1.0). (Generated refusal tasks start with an accepted
  request, so they have a gold write and expect 0.0 too.)

Prints one JSON object: tasks loaded, witness rewards at 1.0, do-nothing rewards as expected,
the ids that are not, and τ²-bench's CPU time. Without TASKS.json or PY it says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

_DRIVER = r"""
import json, sys, time
from tau2.data_model.message import AssistantMessage, ToolCall
from tau2.data_model.tasks import Task
from tau2.evaluator.evaluator_env import EnvironmentEvaluator
domain, path = sys.argv[1], sys.argv[2]
if domain == "airline":
    from tau2.domains.airline.environment import get_environment
else:
    from tau2.domains.retail.environment import get_environment
tasks = [Task.model_validate(t) for t in json.load(open(path, encoding="utf-8"))]
out = {"tasks": len(tasks), "witness_ok": 0, "noop_ok": 0, "bad_witness": [], "bad_noop": []}
c0 = time.process_time()
for task in tasks:
    env = get_environment()
    messages = []
    for i, action in enumerate(task.evaluation_criteria.actions or []):
        call = ToolCall(id=f"c{i}", name=action.name, arguments=action.arguments,
                        requestor="assistant")
        messages.append(AssistantMessage(role="assistant", content=None, tool_calls=[call]))
        messages.append(env.get_response(call))
    got = EnvironmentEvaluator.calculate_reward(get_environment, task, messages).reward
    if got == 1.0:
        out["witness_ok"] += 1
    else:
        out["bad_witness"].append(task.id)
    want = 0.0 if task.evaluation_criteria.actions else 1.0
    none = EnvironmentEvaluator.calculate_reward(get_environment, task, []).reward
    if none == want:
        out["noop_ok"] += 1
    else:
        out["bad_noop"].append(task.id)
out["cpu_seconds"] = round(time.process_time() - c0, 3)
print(json.dumps(out))
"""


def run(tasks: Path, tau2_python: str, data: Path, domain: str) -> dict[str, object]:
    """Grade ``tasks`` with τ²-bench's evaluator in ``tau2_python``; its JSON summary."""
    env = {**os.environ, "TAU2_DATA_DIR": str(data)}
    proc = subprocess.run(
        [tau2_python, "-c", _DRIVER, domain, str(tasks)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"τ²-bench's evaluator failed:\n{proc.stderr[-4000:]}")
    summary: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return summary


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: print the summary; exit 1 when any task grades unexpectedly."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tasks", nargs="?", type=Path)
    ap.add_argument("--tau2-python")
    ap.add_argument("--data", type=Path, required=False)
    ap.add_argument("--domain", choices=["airline", "retail"], default="retail")
    args = ap.parse_args(argv)
    if args.tasks is None or args.tau2_python is None or args.data is None:
        print("skipped: give TASKS.json, --tau2-python and --data (no τ²-bench given)")
        return 0
    summary = run(args.tasks, args.tau2_python, args.data, args.domain)
    print(json.dumps(summary, indent=2))
    return 0 if not summary["bad_witness"] and not summary["bad_noop"] else 1


if __name__ == "__main__":
    sys.exit(main())
