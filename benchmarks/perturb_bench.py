"""Robustness under perturbation for a seeded scripted model that learnt the clean schema.

Run: ``.venv/bin/python benchmarks/perturb_bench.py DATASET [--limit 200] [--seed 0]``

The agent is an :class:`~veritask.agent._llm.LLMAgent` over the ``scripted`` provider: its
script replays each task's witness by the spec's tool and parameter names, whatever catalogue
it is shown, and (seeded, one task in ten) stops one call short. It runs the clean tasks and
then each perturbation over the same tasks, exactly as ``veritask eval --perturb all`` does for
a built-in agent, and prints the same table. The faithful agent's table comes from the CLI:
``veritask eval DATASET --agent faithful --perturb all``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
from dataclasses import dataclass
from typing import Any

from veritask._cli.rollout_cmds import perturbation_table
from veritask._util import sha256_text
from veritask.agent import Agent
from veritask.agent._llm import LLMAgent
from veritask.model import ScriptedProvider
from veritask.pipeline import run_batch
from veritask.rollout import KINDS, EpisodeTask, PerturbedRoles, RoleFactory, TaskSource, summarize
from veritask.task import TaskPackage


def clean_names_script(package: TaskPackage, seed: int) -> Any:
    """The witness by the spec's names; one task in ten (seeded) stops a call short."""
    calls = [{"name": c.tool, "arguments": c.args} for c in package.witness]
    rng = random.Random(int(sha256_text(f"{seed}:{package.id}")[:16], 16))
    if calls and rng.random() < 0.1:
        calls = calls[:-1]

    def script(messages: list[dict[str, Any]], _tools: Any) -> Any:
        made = sum(len(m.get("tool_calls") or []) for m in messages if m["role"] == "assistant")
        return {"tool_calls": [calls[made]]} if made < len(calls) else "All done."

    return script


@dataclass
class ScriptedRoles(RoleFactory):
    """Roles whose agent is the clean-names scripted model."""

    script_seed: int = 0

    def _agent(self, task: EpisodeTask, trial: int, seed: int) -> Agent:
        del seed  # the script is seeded by script_seed and the task
        provider = ScriptedProvider(clean_names_script(task.package, self.script_seed))
        return LLMAgent(provider, sample_index=trial)


@dataclass
class ScriptedPerturbed(PerturbedRoles, ScriptedRoles):
    """The scripted model behind one perturbation."""


def main() -> None:
    """Run the clean tasks and every perturbation; print the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("dataset")
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    source = TaskSource.load(args.dataset, limit=args.limit)

    def run(roles: RoleFactory) -> dict[str, Any]:
        return summarize(asyncio.run(run_batch(source, roles, concurrency=8)), 1)

    clean = run(ScriptedRoles(agent="scripted-clean", script_seed=args.seed))
    clean["perturbations"] = {}
    for kind in KINDS:
        roles = ScriptedPerturbed(
            agent="scripted-clean", script_seed=args.seed, perturbation=kind, perturb_seed=args.seed
        )
        row = run(roles)
        drop = None if row["pass^1"] is None else round(clean["pass^1"] - row["pass^1"], 6)
        clean["perturbations"][kind] = {"pass^1": row["pass^1"], "drop^1": drop}
    print(f"{clean['tasks']} tasks, scripted clean-names model (seed {args.seed})")
    print(perturbation_table(clean, 1))


if __name__ == "__main__":
    main()
