"""What a batch of episodes is built from: task sources, roles, scoring and summaries.

Three layers, as in tau2-bench's runner: ``run_episode`` executes (pure), ``RoleFactory`` turns
names into agents and users, and ``veritask.pipeline.run_batch`` (one floor up) schedules,
persists and resumes. This module holds what the batch needs from this floor: the task source,
the roles and ``score``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veritask.agent import (
    Agent,
    FaithfulAgent,
    NoopAgent,
    OracleAgent,
    RandomAgent,
    ScriptedUser,
    User,
)
from veritask.env import CompiledDomain
from veritask.rollout._episode import EpisodeTask
from veritask.task import DatasetDir, TaskPackage, Trajectory, load_dataset
from veritask.verify import VerificationError, gold_diff_for, verify


@dataclass
class TaskSource:
    """Tasks of a dataset directory, with their compiled domains built once."""

    root: Path
    packages: list[TaskPackage] = field(default_factory=list)
    _domains: dict[str, CompiledDomain] = field(default_factory=dict)

    @classmethod
    def load(cls, root: str | Path, limit: int | None = None) -> TaskSource:
        """Load and validate a dataset directory (first ``limit`` tasks)."""
        packages = load_dataset(root)
        return cls(Path(root), packages[:limit] if limit else packages)

    @property
    def dataset(self) -> DatasetDir:
        """The dataset directory."""
        return DatasetDir(self.root)

    def domain(self, name: str) -> CompiledDomain:
        """The compiled domain of a package."""
        if name not in self._domains:
            self._domains[name] = CompiledDomain.from_spec(self.dataset.domain_spec(name))
        return self._domains[name]

    def episode_task(self, package: TaskPackage) -> EpisodeTask:
        """What an episode needs for one package."""
        ds = self.dataset
        return EpisodeTask(
            package=package,
            domain=self.domain(package.domain),
            policy=ds.verified_policy(package.policy, package.domain),
            origin=ds.read_state(package.origin),
            target=ds.read_state(package.target),
        )


@dataclass
class RoleFactory:
    """Builds the agent and the user of one episode from their names.

    Names: ``oracle``, ``noop``, ``random`` and ``openai:MODEL`` (or any registered provider
    spec) for the agent; ``scripted`` or a provider spec for the user. Provider instances are
    shared by all episodes, so their concurrency limit and cache are shared too.
    """

    agent: str
    user: str = "scripted"
    provider_options: dict[str, Any] = field(default_factory=dict)
    temperature: float | None = None
    _providers: dict[str, Any] = field(default_factory=dict)

    def _config(self) -> Any:
        from veritask.model import GenerateConfig

        return GenerateConfig(temperature=self.temperature)

    def _provider(self, spec: str) -> Any:
        if spec not in self._providers:
            from veritask.model import get_provider

            self._providers[spec] = get_provider(spec, **self.provider_options)
        return self._providers[spec]

    def build(self, task: EpisodeTask, trial: int, seed: int) -> tuple[Agent, User]:
        """The two roles for one episode."""
        return self._agent(task, trial, seed), self._user(task, trial)

    def _agent(self, task: EpisodeTask, trial: int, seed: int) -> Agent:
        if self.agent == "oracle":
            return OracleAgent(task.package.witness)
        if self.agent == "noop":
            return NoopAgent()
        if self.agent == "random":
            return RandomAgent(seed)
        if self.agent == "faithful":
            return FaithfulAgent(task.domain.spec)
        from veritask.agent._llm import LLMAgent

        return LLMAgent(self._provider(self.agent), self._config(), sample_index=trial)

    def _user(self, task: EpisodeTask, trial: int) -> User:
        if self.user == "scripted":
            return ScriptedUser(task.package)
        from veritask.agent._llm import LLMUser

        return LLMUser(self._provider(self.user), task.package, self._config(), sample_index=trial)


def score(traj: Trajectory, source: TaskSource, package: TaskPackage) -> Trajectory:
    """Verify a trajectory against its package: reward and breakdown filled in."""
    gold = gold_diff_for(package, source.dataset, source.domain(package.domain).layout)
    try:
        verdict = verify(traj, package, gold_diff=gold)
    except VerificationError as exc:
        return traj.model_copy(update={"reward": None, "error": f"verification: {exc}"})
    return traj.model_copy(
        update={"reward": verdict.reward, "reward_breakdown": verdict.breakdown()}
    )


def summarize(trajectories: Iterable[Trajectory], trials: int) -> dict[str, Any]:
    """``{"tasks", "trials", "pass^1", ..., "pass^K", "per_task": [...]}`` (success: reward == 1)."""
    from veritask.verify import pass_hat_k_table

    per_task: dict[str, list[Trajectory]] = {}
    for traj in trajectories:
        per_task.setdefault(traj.task_id, []).append(traj)
    results = {
        tid: [t.reward == 1.0 for t in sorted(ts, key=lambda t: t.trial)]
        for tid, ts in per_task.items()
    }
    table = (
        pass_hat_k_table(results, range(1, trials + 1))
        if results
        else {f"pass^{k}": 0.0 for k in range(1, trials + 1)}
    )
    rows = [
        {
            "id": tid,
            "successes": sum(results[tid]),
            "trials": len(ts),
            "rewards": [t.reward for t in sorted(ts, key=lambda t: t.trial)],
            "stop_reasons": [t.stop_reason for t in sorted(ts, key=lambda t: t.trial)],
        }
        for tid, ts in per_task.items()
    ]
    return {"tasks": len(per_task), "trials": trials, **table, "per_task": rows}


def dump(trajectories: Iterable[Trajectory]) -> str:
    """Trajectories as JSONL text."""
    return "".join(json.dumps(t.model_dump(mode="json")) + "\n" for t in trajectories)
