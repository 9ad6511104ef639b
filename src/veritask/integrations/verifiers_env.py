"""verifiers integration: veritask tasks as a multi-turn tool environment with a verified rubric.

Targets ``verifiers==0.3.1`` (pin ``verifiers>=0.3.1,<0.4``) and its classic environment API,
the one ``import verifiers as vf`` exposes there (``verifiers.legacy``; 0.4 dropped it for the
``verifiers.v1`` taskset/harness stack): ``vf.MultiTurnEnv`` with ``setup_state`` /
``env_response`` / ``@vf.cleanup``, ``vf.Tool`` definitions in ``tool_defs``, a ``vf.Rubric`` of
reward functions called with the named objects they ask for (``state``, ``info``, ...), and a
module-level ``load_environment(**env_args)`` that ``vf.load_environment(env_id)`` and
``vf-eval`` import. As read in ``verifiers/legacy/envs/{environment,multiturn_env}.py`` and
``verifiers/legacy/rubrics/rubric.py`` of that release.

Each rollout gets its own :class:`~veritask.integrations.VeritaskEnv` in its ``state`` (made in
``setup_state``, so concurrent rollouts never share a database). An assistant message with tool
calls is answered with the tool results; one without gets the scripted user's reply; the user's
stop ends the rollout. At cleanup the episode is verified and its result kept in
``state["veritask"]`` (plain data) for the rubric: ``veritask_reward`` (the verified reward,
weight 1), ``state_proximity`` (LOGIGEN's P_T, weight ``proximity_weight``, 0 by default) and
``rule_violations`` (a metric).

Usage::

    env = vf.load_environment("veritask.integrations.verifiers_env", dataset_dir="tasks/travel")
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from veritask.integrations._session import VeritaskEnv, dataset_source, opening_prompts

if TYPE_CHECKING:
    import verifiers as vf
    from datasets import Dataset

__all__ = [
    "load_environment",
    "rule_violations",
    "state_proximity",
    "veritask_dataset",
    "veritask_reward",
]

# -- rubric ------------------------------------------------------------------------------------


def _result(state: Mapping[str, Any]) -> Mapping[str, Any]:
    found = state.get("veritask")
    return found if isinstance(found, Mapping) else {}


def veritask_reward(state: Mapping[str, Any]) -> float:
    """The verified reward of the rollout (1.0 when the task is solved exactly)."""
    return float(_result(state).get("reward") or 0.0)


def state_proximity(state: Mapping[str, Any]) -> float:
    """LOGIGEN's state proximity of the final state to the target, in [0, 1]."""
    return float(_result(state).get("proximity") or 0.0)


def rule_violations(state: Mapping[str, Any]) -> float:
    """How many tool calls the policy's rules refused."""
    return float(_result(state).get("violations") or 0)


# -- dataset -----------------------------------------------------------------------------------


def _tool_def(tool: Mapping[str, Any]) -> dict[str, Any]:
    fn = tool["function"]
    return {"name": fn["name"], "description": fn["description"], "parameters": fn["parameters"]}


def _tool_defs(dataset: str, domain: str) -> list[dict[str, Any]]:
    tools = dataset_source(dataset).domain(domain).tools
    return [_tool_def(spec.openai_schema()) for spec in tools.values()]


def veritask_dataset(dataset_dir: str, *, domain: str | None = None) -> Dataset:
    """The rows verifiers reads: ``prompt`` (system policy and the user's opening), ``answer``
    (the task id) and ``info`` (a JSON object string: ``task_id``, ``domain``, and the domain's
    ``tool_defs`` when the dataset mixes domains)."""
    from datasets import Dataset

    source = dataset_source(dataset_dir)
    domains = sorted({p.domain for p in source.packages})
    rows = []
    for pkg, prompt in opening_prompts(dataset_dir, domain):
        info: dict[str, Any] = {"task_id": pkg.id, "domain": pkg.domain}
        if domain is None and len(domains) > 1:
            info["tool_defs"] = _tool_defs(dataset_dir, pkg.domain)
        rows.append(
            {
                "prompt": prompt,
                "answer": pkg.id,
                "info": json.dumps(info),
            }
        )
    if not rows:
        raise ValueError(
            f"{dataset_dir} holds no task" + (f" of domain {domain!r}" if domain else "")
        )
    return Dataset.from_list(rows)


# -- environment -------------------------------------------------------------------------------


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        text = part.get("text") if isinstance(part, Mapping) else getattr(part, "text", None)
        if isinstance(text, str):
            parts.append(text)
    return "".join(parts)


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def openai_message(message: Any) -> dict[str, Any]:
    """A verifiers assistant message (pydantic or dict) as an OpenAI chat message."""
    out: dict[str, Any] = {"role": "assistant", "content": _text(_field(message, "content"))}
    calls = []
    for call in _field(message, "tool_calls") or []:
        fn = _field(call, "function")
        name = _field(fn, "name") if fn is not None else _field(call, "name")
        arguments = _field(fn, "arguments") if fn is not None else _field(call, "arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments or {})
        calls.append(
            {
                "id": str(_field(call, "id") or ""),
                "type": "function",
                "function": {"name": str(name or ""), "arguments": arguments},
            }
        )
    if calls:
        out["tool_calls"] = calls
    return out


_ENV_CLASS: type[Any] | None = None


def _verifiers_messages(messages: list[dict[str, Any]]) -> vf.Messages:
    """veritask's tool results and user turns as verifiers message objects."""
    import verifiers as vf

    out: vf.Messages = []
    for m in messages:
        if m["role"] == "tool":
            out.append(vf.ToolMessage(tool_call_id=m["tool_call_id"], content=m["content"]))
        else:
            out.append(vf.UserMessage(content=m["content"]))
    return out


def _env_class() -> type[vf.MultiTurnEnv]:
    """The environment class, built on first use so that this module imports without verifiers."""
    global _ENV_CLASS
    if _ENV_CLASS is not None:
        return _ENV_CLASS
    import verifiers as vf

    class VeritaskVerifiersEnv(vf.MultiTurnEnv):  # type: ignore[misc]
        """A veritask dataset as a verifiers multi-turn tool environment (one VeritaskEnv per
        rollout, kept in its state)."""

        def __init__(self, veritask_dataset: str, lambda_err: float = 0.1, **kwargs: Any) -> None:
            self.veritask_dataset_dir = veritask_dataset
            self.veritask_lambda_err = lambda_err
            super().__init__(**kwargs)

        async def setup_state(self, state: vf.State) -> vf.State:
            """Open this rollout's episode on the row's task."""
            info = state.get("info") or {}
            if isinstance(info, str):
                info = json.loads(info)
            env = VeritaskEnv(self.veritask_dataset_dir, lambda_err=self.veritask_lambda_err)
            env.reset(str(info["task_id"]))
            state["veritask_env"] = env
            return state

        async def env_response(
            self, messages: vf.Messages, state: vf.State, **kwargs: Any
        ) -> vf.Messages:
            """Tool results for tool calls, else the scripted user's answer; its stop ends it."""
            env: VeritaskEnv = state["veritask_env"]
            result = env.step(openai_message(messages[-1]))
            if result.done:
                state["final_env_response"] = []
            return _verifiers_messages(result.messages)

        @vf.cleanup  # type: ignore[untyped-decorator]
        async def finish_episode(self, state: vf.State) -> None:
            """Verify the episode, keep the result as plain data, release the database."""
            env = state.pop("veritask_env", None)
            if not isinstance(env, VeritaskEnv):
                return
            try:
                result = env.reward()
                state["veritask"] = {
                    "task_id": env.task.package.id,
                    "reward": float(result["reward"]),
                    "proximity": float(result["proximity"]),
                    "violations": int(result["violations"]),
                    "breakdown": result["breakdown"],
                }
            finally:
                env.close()

    _ENV_CLASS = VeritaskVerifiersEnv
    return VeritaskVerifiersEnv


def default_dataset(domain: str, num_tasks: int, seed: int) -> str:
    """``num_tasks`` tasks of ``domain`` generated with ``seed`` into
    ``$XDG_CACHE_HOME/veritask/verifiers`` (deterministic, resumable); returns the directory."""
    from veritask.synth import generate

    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    out = cache / "veritask" / "verifiers" / f"{domain}-n{num_tasks}-s{seed}"
    generate(domain, num_tasks, seed, out)
    return str(out)


def load_environment(
    dataset_dir: str | None = None,
    *,
    domain: str | None = None,
    num_tasks: int = 50,
    seed: int = 0,
    max_turns: int = 50,
    proximity_weight: float = 0.0,
    lambda_err: float = 0.1,
    **kwargs: Any,
) -> vf.MultiTurnEnv:
    """A verifiers environment over a veritask dataset directory.

    Args:
        dataset_dir: A dataset directory made by ``veritask.synth.generate`` (``veritask generate``).
            When omitted, ``num_tasks`` tasks of ``domain`` (default ``travel``) are generated
            with ``seed`` into ``$XDG_CACHE_HOME/veritask/verifiers`` (deterministic, resumable).
        domain: Keep only this domain's tasks (the domain to generate when ``dataset_dir`` is
            omitted).
        num_tasks: How many tasks to generate when ``dataset_dir`` is omitted.
        seed: The synthesis seed when ``dataset_dir`` is omitted.
        max_turns: Model calls per rollout before it is cut.
        proximity_weight: Rubric weight of ``state_proximity`` (0: a logged metric only).
        lambda_err: Passed to :class:`~veritask.integrations.VeritaskEnv`.
        **kwargs: Passed to ``vf.MultiTurnEnv`` (``sampling_args``, ``timeout_seconds``, ...).

    Returns:
        The environment: dataset of tasks, the domain's tools, the verified rubric.
    """
    import verifiers as vf

    if dataset_dir is None:
        dataset_dir = default_dataset(domain or "travel", num_tasks, seed)
    dataset_dir = str(dataset_dir)
    dataset = veritask_dataset(dataset_dir, domain=domain)
    domains = sorted({json.loads(i)["domain"] for i in dataset["info"]})
    tool_defs = _tool_defs(dataset_dir, domains[0]) if len(domains) == 1 else None
    rubric = vf.Rubric(
        funcs=[veritask_reward, state_proximity, rule_violations],
        weights=[1.0, proximity_weight, 0.0],
    )
    env_class = _env_class()
    env: vf.MultiTurnEnv = env_class(
        veritask_dataset=dataset_dir,
        lambda_err=lambda_err,
        dataset=dataset,
        tool_defs=tool_defs,
        rubric=rubric,
        max_turns=max_turns,
        **kwargs,
    )
    return env
