"""Rollouts of verified tasks, and attribution of failed trajectories by execution.

A failed trajectory is **TASK** when a reference solver that acts only on the task's text (the
faithful agent: what the user says, the policy, tool results) cannot solve the task either, and
**TRAJECTORY** when it can, so the assistant failed a task that is solvable from its text. The
decision is a run, not an opinion; the solver is an interface (:class:`Solver`), so a stronger
text-only solver drops in without touching the loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from veritask.agent import Agent
from veritask.agent._error_model import ErringAgent, ErrorModel
from veritask.rollout import EpisodeLimits, EpisodeTask, RoleFactory, TaskSource, run_episode, score
from veritask.task import TaskPackage, Trajectory

Attribution = Literal["TASK", "TRAJECTORY"]


async def run_role(
    source: TaskSource,
    package: TaskPackage,
    roles: RoleFactory,
    seed: int,
    limits: EpisodeLimits | None = None,
) -> Trajectory:
    """One scored episode of ``roles`` on ``package`` (reward filled in by the verifier)."""
    task = source.episode_task(package)
    agent, user = roles.build(task, 0, seed)
    trajectory = await run_episode(task, agent, user, seed=seed, limits=limits)
    return score(trajectory, source, package)


@dataclass
class ErringRoles(RoleFactory):
    """A role factory whose ``faithful`` agent errs by an :class:`ErrorModel` (every other
    name builds what :class:`~veritask.rollout.RoleFactory` builds)."""

    errors: ErrorModel = field(default_factory=ErrorModel)

    def _agent(self, task: EpisodeTask, trial: int, seed: int) -> Agent:
        if self.agent == "faithful" and self.errors.rate > 0:
            return ErringAgent(task.domain.spec, self.errors, seed)
        return super()._agent(task, trial, seed)


class Solver(Protocol):
    """A reference solver that sees only what the task's text and the policy give."""

    name: str

    async def solves(self, source: TaskSource, package: TaskPackage, seed: int) -> bool:
        """True when it reaches the task's target from the task's text."""
        ...


@dataclass
class FaithfulSolver:
    """The faithful agent with the scripted user: the default reference solver. With an error
    model whose rate is above 0 it can fail a solvable task, so TASK attribution can fire."""

    name: str = "faithful"
    limits: EpisodeLimits | None = None
    errors: ErrorModel = field(default_factory=ErrorModel)

    async def solves(self, source: TaskSource, package: TaskPackage, seed: int) -> bool:
        """Run the faithful agent once; True when the trajectory's reward is 1."""
        roles = ErringRoles("faithful", errors=self.errors)
        trajectory = await run_role(source, package, roles, seed, self.limits)
        return trajectory.reward == 1.0


@dataclass(frozen=True)
class Attributed:
    """The attribution of one failed trajectory, and why."""

    kind: Attribution
    detail: str


async def attribute(
    source: TaskSource, package: TaskPackage, solver: Solver, seed: int
) -> Attributed:
    """Attribute a failed trajectory on ``package`` by running ``solver`` on the task.

    Returns:
        TRAJECTORY when the solver reaches the target (the task is solvable from its text),
        TASK otherwise.
    """
    if await solver.solves(source, package, seed):
        return Attributed("TRAJECTORY", f"the {solver.name} agent solves the task from its text")
    return Attributed("TASK", f"the {solver.name} agent cannot solve the task from its text")
