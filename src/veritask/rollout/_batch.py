"""What a batch of episodes is built from: task sources, roles, scoring and summaries.

Three layers, as in tau2-bench's runner: ``run_episode`` executes (pure), ``RoleFactory`` turns
names into agents and users, and ``veritask.pipeline.run_batch`` (one floor up) schedules,
persists and resumes. This module holds what the batch needs from this floor: the task source,
the roles and ``score``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
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
from veritask.policy import user_tool_names
from veritask.rollout._episode import EpisodeFailure, EpisodeOutcome, EpisodeTask
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


def _oracle(task: EpisodeTask, _seed: int) -> Agent:
    return OracleAgent(task.package.witness, user_tool_names(task.domain.spec))


def _noop(_task: EpisodeTask, _seed: int) -> Agent:
    return NoopAgent()


def _random(_task: EpisodeTask, seed: int) -> Agent:
    return RandomAgent(seed)


def _faithful(task: EpisodeTask, _seed: int) -> Agent:
    return FaithfulAgent(task.domain.spec)


def _scripted_user(task: EpisodeTask) -> User:
    return ScriptedUser(task.package)


BUILTIN_AGENTS: dict[str, Callable[[EpisodeTask, int], Agent]] = {
    "oracle": _oracle,
    "faithful": _faithful,
    "noop": _noop,
    "random": _random,
}
"""The agents a name alone builds (from the task and the episode seed); any other agent name
is a model provider spec such as ``openai:MODEL``."""

BUILTIN_USERS: dict[str, Callable[[EpisodeTask], User]] = {"scripted": _scripted_user}
"""The user simulators a name alone builds; any other user name is a provider spec."""


class RoleError(ValueError):
    """An agent or user name that is neither built in nor a usable provider spec."""


def _role_error(role: str, name: str, builtins: Iterable[str], exc: ValueError) -> RoleError:
    from veritask.model import registered_schemes

    scheme = name.partition(":")[0]
    choices = ", ".join(builtins)
    if scheme in registered_schemes():
        return RoleError(f"invalid --{role} {name!r}: {exc} (built in: {choices})")
    return RoleError(
        f"unknown --{role} {name!r}: use one of {choices}, or openai:MODEL "
        f"(any provider spec SCHEME:ARG; providers: {', '.join(registered_schemes())})"
    )


@dataclass
class RoleFactory:
    """Builds the agent and the user of one episode from their names.

    Names: those of :data:`BUILTIN_AGENTS` and ``openai:MODEL`` (or any registered provider
    spec) for the agent; those of :data:`BUILTIN_USERS` or a provider spec for the user.
    Provider instances are shared by all episodes, so their concurrency limit and cache are
    shared too.
    """

    agent: str
    user: str = "scripted"
    provider_options: dict[str, Any] = field(default_factory=dict)
    temperature: float | None = None
    _providers: dict[str, Any] = field(default_factory=dict)

    def check(self) -> None:
        """Fail early on an agent or user name nothing can build (a typo), before any episode.

        Raises:
            RoleError: One line naming the built-in names and the ``openai:MODEL`` form.
        """
        self._check("agent", self.agent, BUILTIN_AGENTS)
        self._check("user", self.user, BUILTIN_USERS)

    def _check(self, role: str, name: str, builtins: dict[str, Any]) -> None:
        if name in builtins:
            return
        from veritask.model import get_provider

        options = {k: v for k, v in self.provider_options.items() if k != "cache_dir"}
        try:
            get_provider(name, **options)  # built to be checked, then dropped (nothing opened)
        except ValueError as exc:
            raise _role_error(role, name, builtins, exc) from None

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
        builtin = BUILTIN_AGENTS.get(self.agent)
        if builtin is not None:
            return builtin(task, seed)
        from veritask.agent._llm import LLMAgent

        return LLMAgent(self._provider(self.agent), self._config(), sample_index=trial)

    def _user(self, task: EpisodeTask, trial: int) -> User:
        builtin = BUILTIN_USERS.get(self.user)
        if builtin is not None:
            return builtin(task)
        from veritask.agent._llm import LLMUser

        mine = user_tool_names(task.domain.spec)  # dual control: the user's own tools
        tools = [t.openai_schema() for n, t in task.domain.tools.items() if n in mine]
        return LLMUser(
            self._provider(self.user),
            task.package,
            self._config(),
            sample_index=trial,
            tools=tools,
        )


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


def failure_record(outcome: EpisodeOutcome) -> dict[str, Any]:
    """One errored episode as a JSON-ready dict: ``task_id``, ``trial``, ``seed`` and the
    failure's ``role``, ``kind``, ``message``, ``base_url``, ``model`` and ``reason``."""
    traj = outcome.trajectory
    failure = outcome.failure or EpisodeFailure("agent", "unknown", traj.error or "")
    return {"task_id": traj.task_id, "trial": traj.trial, "seed": traj.seed, **failure.to_json()}


def _split(
    trajectories: Iterable[Trajectory], errors: Iterable[EpisodeOutcome]
) -> tuple[list[Trajectory], list[EpisodeOutcome]]:
    """Scored trajectories, and the errored episodes (an ``agent_error`` trajectory passed in
    as scored, from an older file say, counts as errored too)."""
    scored: list[Trajectory] = []
    errored = list(errors)
    for traj in trajectories:
        if traj.stop_reason == "agent_error":
            errored.append(EpisodeOutcome(traj, None))
        else:
            scored.append(traj)
    return scored, errored


def summarize(
    trajectories: Iterable[Trajectory], trials: int, errors: Sequence[EpisodeOutcome] = ()
) -> dict[str, Any]:
    """pass^k over the scored episodes, with the errored ones counted apart.

    Keys: ``tasks``, ``trials``, ``episodes`` (scored + errored), ``scored``, ``errors``,
    ``pass^1`` ... ``pass^K`` (over scored episodes only; None when no task has k scored
    trials), ``first_error`` (:func:`failure_record` of the first errored episode, or None) and
    ``per_task`` rows. Success is a reward of exactly 1.

    Args:
        trajectories: The scored episodes (``agent_error`` ones are moved to the errors).
        trials: Trials per task (K).
        errors: The episodes that errored (not scored).
    """
    from veritask.verify import pass_hat_k_scored

    scored, errored = _split(trajectories, errors)
    per_task: dict[str, list[Trajectory]] = {}
    failed: dict[str, int] = {}
    for traj in scored:
        per_task.setdefault(traj.task_id, []).append(traj)
    for outcome in errored:
        per_task.setdefault(outcome.trajectory.task_id, [])
        failed[outcome.trajectory.task_id] = failed.get(outcome.trajectory.task_id, 0) + 1
    ordered = {tid: sorted(ts, key=lambda t: t.trial) for tid, ts in per_task.items()}
    results = {tid: [t.reward == 1.0 for t in ts] for tid, ts in ordered.items()}
    rows = [
        {
            "id": tid,
            "successes": sum(results[tid]),
            "trials": len(ts),
            "errors": failed.get(tid, 0),
            "rewards": [t.reward for t in ts],
            "stop_reasons": [t.stop_reason for t in ts],
        }
        for tid, ts in ordered.items()
    ]
    return {
        "tasks": len(per_task),
        "trials": trials,
        "episodes": len(scored) + len(errored),
        "scored": len(scored),
        "errors": len(errored),
        **pass_hat_k_scored(results, range(1, trials + 1)),
        "first_error": failure_record(errored[0]) if errored else None,
        "per_task": rows,
    }


def dump(trajectories: Iterable[Trajectory]) -> str:
    """Trajectories as JSONL text."""
    return "".join(json.dumps(t.model_dump(mode="json")) + "\n" for t in trajectories)
