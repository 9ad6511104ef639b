"""Batch runner: many episodes with a concurrency limit, persisted and resumable.

Three layers, as in tau2-bench's runner: ``run_episode`` executes (pure), ``build_roles`` turns
names into agents and users, and ``run_batch`` schedules, verifies, persists and resumes by
(task id, trial, seed).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from veritask._util import derive_seed
from veritask.agent import Agent, NoopAgent, OracleAgent, RandomAgent, ScriptedUser, User
from veritask.domains import load_domain
from veritask.env import CompiledDomain
from veritask.rollout._episode import EpisodeLimits, EpisodeTask, run_episode
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
            self._domains[name] = CompiledDomain.from_spec(load_domain(name))
        return self._domains[name]

    def episode_task(self, package: TaskPackage) -> EpisodeTask:
        """What an episode needs for one package."""
        ds = self.dataset
        return EpisodeTask(
            package=package,
            domain=self.domain(package.domain),
            policy=ds.read_policy(package.policy),
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
        from veritask.agent._llm import LLMAgent

        return LLMAgent(self._provider(self.agent), self._config(), sample_index=trial)

    def _user(self, task: EpisodeTask, trial: int) -> User:
        if self.user == "scripted":
            return ScriptedUser(task.package)
        from veritask.agent._llm import LLMUser

        return LLMUser(self._provider(self.user), task.package, self._config(), sample_index=trial)


def _read_done(out: Path) -> dict[tuple[str, int, int], Trajectory]:
    """Finished trajectories of an earlier run; a torn last line (a killed run) is dropped."""
    done: dict[tuple[str, int, int], Trajectory] = {}
    if not out.exists():
        return done
    lines = out.read_text(encoding="utf-8").splitlines(keepends=True)
    good: list[str] = []
    for line in lines:
        try:
            traj = Trajectory.model_validate_json(line)
        except (ValidationError, ValueError):
            continue
        done[traj.key] = traj
        good.append(line if line.endswith("\n") else line + "\n")
    if len(good) != len(lines):
        out.write_text("".join(good), encoding="utf-8")
    return done


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


async def run_batch(
    source: TaskSource,
    roles: RoleFactory,
    *,
    trials: int = 1,
    seed: int = 0,
    concurrency: int = 8,
    out: Path | None = None,
    limits: EpisodeLimits | None = None,
    progress: Callable[[Trajectory], None] | None = None,
) -> list[Trajectory]:
    """Run every (task, trial), verify each trajectory, append it to ``out`` as it finishes, and
    skip those ``out`` already holds (resume). Returns all trajectories in task/trial order."""
    done = _read_done(out) if out else {}
    todo = [
        (pkg, trial, derive_seed(pkg.id, trial, seed))
        for pkg in source.packages
        for trial in range(trials)
        if (pkg.id, trial, derive_seed(pkg.id, trial, seed)) not in done
    ]
    gate = asyncio.Semaphore(concurrency)
    lock = asyncio.Lock()

    async def one(pkg: TaskPackage, trial: int, episode_seed: int) -> None:
        async with gate:
            task = source.episode_task(pkg)
            agent, user = roles.build(task, trial, episode_seed)
            traj = score(
                await run_episode(task, agent, user, trial=trial, seed=episode_seed, limits=limits),
                source,
                pkg,
            )
        async with lock:
            done[traj.key] = traj
            if out is not None:
                with out.open("a", encoding="utf-8") as fh:
                    fh.write(traj.model_dump_json() + "\n")
            if progress:
                progress(traj)

    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
    await asyncio.gather(*(one(*item) for item in todo))
    order = {
        (p.id, t, derive_seed(p.id, t, seed)): i
        for i, (p, t) in enumerate((p, t) for p in source.packages for t in range(trials))
    }
    return sorted((t for k, t in done.items() if k in order), key=lambda t: order[t.key])


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
