"""The hybrid mode: the real environment wherever a spec exists, the simulator elsewhere.

A :class:`HybridSession` offers one catalogue (:func:`hybrid_catalog`): the tools the domain's
spec compiles to, marked ``backend="real"``, and the tools of another catalogue that the spec
lacks (an OpenAI tools file, an MCP server, seed trajectories), marked ``backend="simulated"``.
A call to a real tool runs on the SQLite environment (its result is exact, its state change
measured); any other call is answered by the simulator, which sees every earlier observation,
the real ones included. Calls to tools in neither get the environment's structured
``UNKNOWN_TOOL`` error, deterministically.

The episode's reward is the judge's verdict (the simulated tools' effects are not in the
database, so the state certificate does not decide it); the trajectory's distances and
``agent_diff`` are the real environment's, measured as usual.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from veritask.env import CompiledDomain, ToolResult
from veritask.model import GenerateConfig, ModelProvider, Usage
from veritask.rollout import EpisodeTask, SessionFactory
from veritask.simulate._catalog import ToolCatalog, catalog_from_spec, hybrid_catalog
from veritask.simulate._simenv import SimSession, observation_payload
from veritask.task import (
    EnvSession,
    EpisodeEnd,
    Session,
    TaskPackage,
    ToolStep,
    Trajectory,
)


@dataclass
class HybridSession:
    """The session protocol over a real environment and a simulator (see the module docstring).

    Attributes:
        package: The task (None when the session serves a domain's tools with no task).
        domain: Its compiled domain (the real tools).
        origin: The start state image.
        provider: The simulator and judge model.
        extra: Tools beyond the spec, answered by the simulator.
        config: Sampling settings of the simulator and the judge.
        sample_index: Keeps repeated samples apart in caches (the trial).
        target: s_target (the real environment measures distances to it).
    """

    package: TaskPackage | None
    domain: CompiledDomain
    origin: bytes
    provider: ModelProvider
    extra: ToolCatalog
    config: GenerateConfig = field(default_factory=GenerateConfig)
    sample_index: int = 0
    target: bytes | None = None
    steps: list[ToolStep] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.catalog = hybrid_catalog(catalog_from_spec(self.domain.spec), self.extra)
        self.real = EnvSession(self.domain, self.origin, self.target, package=self.package)
        self.sim = SimSession(
            self.package,
            self.domain,
            self.origin,
            self.provider,
            self.config,
            sample_index=self.sample_index,
            target=self.target,
            tool_catalog=self.catalog,
        )

    @property
    def tools(self) -> list[dict[str, Any]]:
        """OpenAI tool schemas of the whole catalogue, real tools first."""
        return self.catalog.openai_tools()

    @property
    def usage(self) -> Usage:
        """What the simulator and the judge spent."""
        return self.sim.usage

    def backend(self, tool: str) -> str:
        """``simulated`` for the simulator's tools, ``real`` for every other name."""
        found = self.catalog.get(tool)
        return "simulated" if found is not None and found.backend == "simulated" else "real"

    async def astep(self, call: Mapping[str, Any], turn: int) -> tuple[dict[str, Any], ToolResult]:
        """Run a real tool on the environment, or ask the simulator for any other."""
        name = str((call.get("function") or {}).get("name", ""))
        if self.backend(name) == "simulated":
            message, result = await self.sim.astep(call, turn)
            self.steps.append(self.sim.steps[-1])
            return message, result
        message, result = self.real.step(call, turn)
        step = self.real.steps[-1]
        self.sim.history.append((name, step.args, observation_payload(result)))
        self.steps.append(step)
        return message, result

    async def atrajectory(self, end: EpisodeEnd) -> Trajectory:
        """The episode with the real environment's distances and the judge's reward."""
        judged = await self.sim.atrajectory(end)
        if self.target is None:
            return judged.model_copy(update={"steps": self.steps})
        measured = self.real.trajectory(end)
        return measured.model_copy(
            update={
                "tools": self.tools,
                "steps": self.steps,
                "reward": judged.reward,
                "reward_breakdown": judged.reward_breakdown,
                "error": judged.error,
            }
        )

    def close(self) -> None:
        """Release the real environment."""
        self.real.close()
        self.sim.close()


def hybrid_sessions(
    provider: ModelProvider, extra: ToolCatalog, config: GenerateConfig | None = None
) -> SessionFactory:
    """A session factory for the rollout job: every episode on a :class:`HybridSession`."""
    settings = config or GenerateConfig()

    def build(task: EpisodeTask, trial: int, _seed: int) -> Session:
        return HybridSession(
            task.package,
            task.domain,
            task.origin,
            provider,
            extra,
            settings,
            sample_index=trial,
            target=task.target,
        )

    return build


def open_simulated(
    provider: ModelProvider,
    domain: CompiledDomain,
    origin: bytes,
    *,
    package: TaskPackage | None = None,
    target: bytes | None = None,
    extra: ToolCatalog | None = None,
    config: GenerateConfig | None = None,
) -> Session:
    """One simulated session (a :class:`HybridSession` when ``extra`` names more tools).

    This is what a server opens per client when it serves a simulated environment: the
    ``package`` is the task when the server has one (a dataset), None over a bare domain.
    """
    settings = config or GenerateConfig()
    if extra is not None:
        return HybridSession(package, domain, origin, provider, extra, settings, target=target)
    return SimSession(package, domain, origin, provider, settings, target=target)
