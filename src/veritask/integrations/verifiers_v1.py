"""verifiers v1 integration: a taskset of veritask tasks, their tool server, and the scripted user.

Targets the ``verifiers.v1`` stack (``verifiers>=0.3.1,<0.5``; developed against 0.4.0), as read
in ``verifiers/v1/{taskset,task,env}.py``, ``verifiers/v1/mcp/{server,toolset}.py`` and
``verifiers/v1/envs/user_sim/env.py``:

* :class:`VeritaskTaskset` (a ``vf.Taskset``) yields one :class:`VeritaskTask` per task of a
  dataset directory. The wiki policy is the system prompt; the prompt is empty because the
  scripted user opens the conversation.
* :class:`VeritaskTask` (a ``vf.Task``) scores a finished trace with ``@vf.reward``
  ``veritask_reward``: the tool calls of the trace's assistant turns are replayed on a fresh
  episode on the host and the final state verified (the tools ran in the tool server's
  process, so the host rebuilds the state from the calls). ``@vf.metric`` ``state_proximity``
  (LOGIGEN's P_T) and ``rule_violations`` come from the same replay, and the per-turn dense
  rewards go to ``trace.info["turn_rewards"]``.
* :class:`VeritaskToolset` (a ``vf.Toolset``) registers the domain's tools on the MCP server
  verifiers gives it, with ``add_tool`` only (so the mcp 1 and mcp 2 SDKs both work); one
  server per rollout, each with its own database.
* :class:`VeritaskUserEnv` (a ``vf.Env``) plays veritask's scripted user against the policy's
  interaction until the user says stop.

verifiers imports a plugin by a top-level module name and takes its classes from ``__all__``;
``examples/verifiers_v1/`` is such a package (``veritask_tasks``, laid out like ``vf-init``'s),
so ``vf-eval veritask-tasks`` finds the taskset and the env. Options go under
``--env.taskset.*`` (``dataset-dir``, ``domain``, ``num-tasks``, ``seed``). The tool server runs
as ``python -m veritask.integrations.verifiers_v1``.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator, Mapping
from typing import Any

import verifiers.v1 as vf

from veritask.agent import STOP, ScriptedUser
from veritask.integrations._session import (
    VeritaskEnv,
    dataset_source,
    drive_user,
    opening_prompts,
    task_package,
)
from veritask.integrations._tools import tool_docstring, tool_parameters
from veritask.integrations.verifiers_env import default_dataset, openai_message
from veritask.reward import per_turn_rewards

__all__ = ["VeritaskTaskset", "VeritaskUserEnv"]


class VeritaskData(vf.TaskData):  # type: ignore[misc]
    """One veritask task as verifiers' wire data."""

    task_id: str
    domain: str
    dataset_dir: str
    opening: str
    """The scripted user's first message."""


class VeritaskTaskConfig(vf.TaskConfig):  # type: ignore[misc]
    """Task knobs (``--env.taskset.task.*``): where the tool server runs."""

    tools: vf.ToolsetConfig = vf.ToolsetConfig()
    lambda_err: float = 0.1
    """Penalty of a refused call in the per-turn dense rewards."""


# -- the tool server ---------------------------------------------------------------------------


def _tool_function(env: VeritaskEnv, name: str, spec: Any) -> Any:
    """An async function whose signature and docstring describe one domain tool and which runs
    it on ``env``, returning the JSON result (or the structured error) as text."""

    async def tool(**arguments: Any) -> str:
        args = {k: v for k, v in arguments.items() if v is not None}
        return json.dumps(env.call_tool(name, args), default=str)

    params = tool_parameters(spec)
    tool.__name__ = name
    tool.__doc__ = tool_docstring(spec)
    tool.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in params} | {"return": str}
    return tool


class VeritaskToolset(vf.Toolset[vf.ToolsetConfig]):  # type: ignore[misc]
    """The domain's tools over one episode (one server process per rollout)."""

    TOOL_PREFIX = None  # the tools keep the domain's names, as the policy text spells them

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.episode: VeritaskEnv | None = None

    async def setup_task(self, task: Any) -> None:
        """Open this rollout's episode on the task's start state."""
        self.episode = VeritaskEnv(task.dataset_dir)
        self.episode.reset(task.task_id)

    def register(self, mcp: Any) -> None:
        """Add one MCP tool per domain tool (``add_tool`` only).

        Raises:
            RuntimeError: No task was set up.
        """
        if self.episode is None:
            raise RuntimeError("the veritask tool server serves one task; none was set up")
        specs = dataset_source(self.episode.dataset).domain(self.episode.task.package.domain).tools
        for name, spec in specs.items():
            mcp.add_tool(_tool_function(self.episode, name, spec), name=name)


# -- the task ----------------------------------------------------------------------------------


def verify_trace(data: Any, trace: Any, lambda_err: float = 0.1) -> dict[str, Any]:
    """Replay the trace's assistant turns (their tool calls) on a fresh episode of its task and
    verify the end state:
    ``{"task_id", "reward", "proximity", "violations", "breakdown", "turn_rewards"}``."""
    env = VeritaskEnv(data.dataset_dir, lambda_err=lambda_err)
    env.reset(data.task_id)
    try:
        for message in trace.assistant_messages:
            env.replay(openai_message(message))
        result = env.reward()
        return {
            "task_id": data.task_id,
            "reward": float(result["reward"]),
            "proximity": float(result["proximity"]),
            "violations": int(result["violations"]),
            "breakdown": result["breakdown"],
            "turn_rewards": per_turn_rewards(env.trajectory(), lambda_err),
        }
    finally:
        env.close()


class VeritaskTask(vf.Task[VeritaskData, vf.State, VeritaskTaskConfig]):  # type: ignore[misc]
    """One veritask task: its tool server, and the verified reward by replay."""

    @classmethod
    def toolsets(cls, config: VeritaskTaskConfig) -> list[Any]:
        """One tool server per rollout, over the task's own database."""
        return [VeritaskToolset(config.tools)]

    @property
    def key(self) -> str:
        """The task id (stable across runs)."""
        return str(self.data.task_id)

    def verified(self, trace: Any) -> Mapping[str, Any]:
        """The replay result, computed once per trace and kept in ``trace.info``."""
        found = trace.info.get("veritask")
        if isinstance(found, Mapping) and found.get("task_id") == self.data.task_id:
            return found
        result = verify_trace(self.data, trace, self.config.lambda_err)
        trace.info["veritask"] = result
        trace.info["turn_rewards"] = result["turn_rewards"]
        return result

    @vf.reward(weight=1.0)  # type: ignore[untyped-decorator]
    async def veritask_reward(self, trace: Any) -> float:
        """The verified reward: 1.0 when the replayed calls reach the task's target state."""
        return float(self.verified(trace)["reward"])

    @vf.metric  # type: ignore[untyped-decorator]
    async def state_proximity(self, trace: Any) -> float:
        """LOGIGEN's state proximity of the final state to the target, in [0, 1]."""
        return float(self.verified(trace)["proximity"])

    @vf.metric  # type: ignore[untyped-decorator]
    async def rule_violations(self, trace: Any) -> float:
        """How many tool calls the policy's rules refused."""
        return float(self.verified(trace)["violations"])


# -- the taskset -------------------------------------------------------------------------------


class VeritaskTasksetConfig(vf.TasksetConfig):  # type: ignore[misc]
    """Which tasks load (``--env.taskset.*``)."""

    dataset_dir: str | None = None
    """A dataset directory (``veritask generate``); generated into the cache when unset."""
    domain: str | None = None
    """Keep only this domain's tasks (the domain to generate when ``dataset_dir`` is unset)."""
    num_tasks: int = 50
    seed: int = 0
    task: VeritaskTaskConfig = VeritaskTaskConfig()


class VeritaskTaskset(vf.Taskset[VeritaskTask, VeritaskTasksetConfig]):  # type: ignore[misc]
    """The tasks of a veritask dataset directory."""

    def load(self) -> Iterator[VeritaskTask]:
        """One task per package: the policy as system prompt, the user's opening kept aside."""
        config = self.config
        dataset_dir = config.dataset_dir or default_dataset(
            config.domain or "travel", config.num_tasks, config.seed
        )
        for pkg, prompt in opening_prompts(dataset_dir, config.domain):
            data = VeritaskData(
                id=pkg.id,
                name=pkg.id,
                prompt=None,
                system_prompt=prompt[0]["content"],
                task_id=pkg.id,
                domain=pkg.domain,
                dataset_dir=str(dataset_dir),
                opening=prompt[1]["content"],
            )
            yield VeritaskTask(data, config.task)


# -- the scripted user -------------------------------------------------------------------------


class VeritaskEnvConfig(vf.EnvConfig):  # type: ignore[misc]
    """The policy's seat; its default harness is verifiers' tool-calling chat loop."""

    agent: vf.AgentConfig = vf.AgentConfig(harness={"id": "null"})


def _user_view(messages: list[Any]) -> list[dict[str, Any]]:
    """A segment's messages as the OpenAI messages the scripted user reads."""
    out = []
    for message in messages:
        role = getattr(message, "role", None)
        if role == "assistant":
            out.append(openai_message(message))
        elif role == "tool":
            out.append({"role": "tool", "content": str(getattr(message, "content", ""))})
    return out


class VeritaskUserEnv(vf.Env[VeritaskEnvConfig]):  # type: ignore[misc]
    """veritask's scripted user talks to the policy: it opens with the task's request, answers
    each reply, and ends the conversation with its stop marker."""

    async def run(self, task: Any, agents: Any) -> None:
        """One conversation: user turn, policy segment (tool calls included), until stop."""
        package = task_package(task.data.dataset_dir, task.data.task_id)
        user = ScriptedUser(package)
        history: list[dict[str, Any]] = [drive_user(user.open()).message]
        async with agents.agent.interaction(task) as interaction:
            segment = await interaction.turn(history[0]["content"])
            while not segment.terminated:
                history += _user_view(segment.messages)
                reply = drive_user(user.respond(history)).message
                if STOP in (reply.get("content") or ""):
                    interaction.trace.stop("user_stop")
                    break
                history.append(reply)
                segment = await interaction.turn(reply["content"])


if __name__ == "__main__":  # pragma: no cover - the tool server's process entry point
    VeritaskToolset.run()
