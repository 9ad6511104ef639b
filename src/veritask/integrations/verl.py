"""verl integration: a ``BaseTool``, a ``BaseInteraction`` (the user simulator) and ``compute_score``.

Targets verl 0.7 (``verl>=0.7,<0.8``), the last line with interactions; verl 0.8 removed
``verl.interactions`` (the tool and ``compute_score`` still fit 0.8 and 0.9). For verl >= 0.8,
:mod:`veritask.integrations.verl_agent_loop` registers an agent loop instead. Interfaces as read
in verl's sources (v0.7.1 wheel; repository ``volcengine/verl``):

* ``verl/tools/base_tool.py``: ``BaseTool(config, tool_schema)``; async ``create(instance_id=None,
  **kwargs) -> (instance_id, ToolResponse)``, ``execute(instance_id, parameters, **kwargs) ->
  (ToolResponse, reward, metrics)``, ``calc_reward(instance_id, **kwargs) -> float``,
  ``release(instance_id, **kwargs)``; ``verl/tools/schemas.py``: ``OpenAIFunctionToolSchema``
  and ``ToolResponse(text, image, video)``.
* ``verl/experimental/agent_loop/tool_agent_loop.py``: each tool call runs ``create(create_kwargs=
  extra_info["tools_kwargs"][tool]["create_kwargs"])``, ``execute(instance_id, args,
  agent_data=agent_data)`` and ``release(instance_id)``: a fresh instance per *call*, so an
  episode cannot live on the instance. It is keyed by the rollout's ``agent_data.request_id``,
  the id the interaction is started with.
* ``verl/interactions/base.py``: ``BaseInteraction(config)``; async ``start_interaction(
  instance_id=None, **interaction_kwargs) -> str``, ``generate_response(instance_id, messages,
  **kwargs) -> (should_terminate, content, turn_score, metrics)``, ``calculate_score()``,
  ``finalize_interaction()`` (the loop calls only the first two; gsm8k's interaction takes
  ``instance_id`` in the last two, as these do).
* ``verl/utils/reward_score/__init__.py``: ``compute_score(data_source, solution_str,
  ground_truth, extra_info=None, **kwargs) -> float | dict`` (a dict carries ``"score"``).

Episodes live in a :class:`VerlEpisodes` store (one :class:`~veritask.integrations.VeritaskEnv`
per rollout id, bounded, oldest evicted), never on the per-call tool object. verl builds the tools
and the interaction separately from class names in YAML files, so by default they meet in one
store per process (:data:`DEFAULT_EPISODE_STORE`); pass ``episodes=`` to use another. ``compute_score`` does
not need that registry (it may run in another process): it replays the hermes-format
``<tool_call>`` blocks of the decoded response on a fresh episode and verifies it.

verl needs GPUs, ray and a pinned transformers, so it is not a dependency: when ``verl`` is not
importable the classes subclass local stand-ins with the same signatures.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import uuid4

from pydantic import BaseModel, Field

from veritask._util import loads_untrusted
from veritask.agent import STOP, ScriptedUser
from veritask.integrations._session import VeritaskEnv, dataset_source, drive_user
from veritask.task import SessionStore

__all__ = [
    "DEFAULT_EPISODE_STORE",
    "VeritaskInteraction",
    "VeritaskTool",
    "VerlEpisodes",
    "compute_score",
    "parse_tool_calls",
    "release_episode",
    "verl_interaction_config",
    "verl_rows",
    "verl_tool_config",
    "verl_tool_schema",
    "write_verl_files",
]

DATA_SOURCE_PREFIX = "veritask"
"""``data_source`` of veritask rows: ``veritask/<domain>``."""


# -- stand-ins for verl's base classes (same signatures) ---------------------------------------


class _FunctionParameters(BaseModel):
    type: str = "object"
    properties: dict[str, dict[str, Any]] = Field(default_factory=dict)
    required: list[str] = Field(default_factory=list)


class _Function(BaseModel):
    name: str
    description: str
    parameters: _FunctionParameters = Field(default_factory=_FunctionParameters)
    strict: bool = False


class StandInToolSchema(BaseModel):
    """Stand-in for ``verl.tools.schemas.OpenAIFunctionToolSchema``."""

    type: str
    function: _Function


class StandInToolResponse(BaseModel):
    """Stand-in for ``verl.tools.schemas.ToolResponse``."""

    text: str | None = None
    image: list[Any] | None = None
    video: list[Any] | None = None


class StandInBaseTool:
    """Stand-in for ``verl.tools.base_tool.BaseTool``."""

    def __init__(self, config: dict[str, Any], tool_schema: Any) -> None:
        self.config = config
        self.name: str = tool_schema.function.name
        self.tool_schema = tool_schema

    def get_openai_tool_schema(self) -> Any:
        """The tool's OpenAI function schema."""
        return self.tool_schema

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, Any]:
        """A new instance id (and an empty response)."""
        return instance_id or str(uuid4()), StandInToolResponse()

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[Any, float, dict[str, Any]]:
        """Run the tool."""
        del instance_id, parameters  # a stand-in: the real class is verl's
        return StandInToolResponse(text="Updated the tool state."), 0.0, {}

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The instance's reward."""
        del instance_id
        return 0.0

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Free the instance."""


class StandInBaseInteraction:
    """Stand-in for ``verl.interactions.base.BaseInteraction``."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.name: str = config.get("name", "interaction_agent")

    async def start_interaction(self, instance_id: str | None = None, **kwargs: Any) -> str:
        """Start an interaction; returns its id."""
        return instance_id or str(uuid4())

    async def generate_response(
        self, instance_id: str, messages: list[dict[str, Any]], **kwargs: Any
    ) -> tuple[bool, str, float, dict[str, Any]]:
        """The user's next turn: ``(should_terminate, content, turn_score, metrics)``."""
        del instance_id, messages
        return False, "", 0.0, {}

    async def calculate_score(self) -> float:
        """The interaction's score."""
        return 0.0

    async def finalize_interaction(self) -> None:
        """Release the interaction."""


if TYPE_CHECKING:
    _BaseTool = StandInBaseTool
    _BaseInteraction = StandInBaseInteraction
    _ToolSchema = StandInToolSchema
    _ToolResponse = StandInToolResponse
else:
    try:
        from verl.tools.base_tool import BaseTool as _BaseTool
        from verl.tools.schemas import OpenAIFunctionToolSchema as _ToolSchema
        from verl.tools.schemas import ToolResponse as _ToolResponse
    except ImportError:
        _BaseTool, _ToolSchema, _ToolResponse = (
            StandInBaseTool,
            StandInToolSchema,
            StandInToolResponse,
        )
    try:
        from verl.interactions.base import BaseInteraction as _BaseInteraction
    except ImportError:
        _BaseInteraction = StandInBaseInteraction

USING_VERL_TOOLS = _BaseTool is not StandInBaseTool
"""Whether :class:`VeritaskTool` subclasses verl's own ``BaseTool`` (verl importable)."""
USING_VERL_INTERACTIONS = _BaseInteraction is not StandInBaseInteraction
"""Whether :class:`VeritaskInteraction` subclasses verl's ``BaseInteraction`` (verl < 0.8)."""


# -- episode store -----------------------------------------------------------------------------

EPISODE_CAPACITY = 4096
"""Open episodes kept at most; the oldest is closed beyond that (rollouts never finalized)."""


@dataclass
class _CreateKwargs:
    """What a tool instance was created with, for a first call that finds no open episode."""

    kwargs: dict[str, Any] = field(default_factory=dict)

    def close(self) -> None:
        """Nothing to release."""


class VerlEpisodes:
    """The open episodes of a process's rollouts, by rollout (request) id, and the
    ``create_kwargs`` of live tool instances; both bounded, oldest evicted.

    Args:
        capacity: Episodes (and tool instances) kept at most.
    """

    def __init__(self, capacity: int = EPISODE_CAPACITY) -> None:
        self.episodes: SessionStore[VeritaskEnv] = SessionStore(
            capacity=capacity, when_full="evict"
        )
        self.instances: SessionStore[_CreateKwargs] = SessionStore(
            capacity=capacity, when_full="evict"
        )

    def __len__(self) -> int:
        return len(self.episodes)

    def open(self, key: str, dataset_dir: str, task_id: str, lambda_err: float) -> VeritaskEnv:
        """A new episode on ``task_id`` for rollout ``key`` (closing one already open)."""
        env = VeritaskEnv(dataset_dir, lambda_err=lambda_err)
        env.reset(task_id)
        self.episodes.add(env, key)
        return env

    def get(self, key: str) -> VeritaskEnv | None:
        """The open episode of rollout ``key``, if any."""
        return self.episodes.get(key)

    def release(self, key: str) -> None:
        """Close and forget the episode of rollout ``key`` (no-op when unknown)."""
        self.episodes.discard(key)

    def remember(self, instance_id: str, create_kwargs: Mapping[str, Any]) -> None:
        """Keep a tool instance's ``create_kwargs``."""
        self.instances.add(_CreateKwargs(dict(create_kwargs)), instance_id)

    def create_kwargs(self, instance_id: str) -> dict[str, Any]:
        """A tool instance's ``create_kwargs`` (empty when unknown)."""
        found = self.instances.get(instance_id)
        return dict(found.kwargs) if found else {}

    def forget(self, instance_id: str) -> None:
        """Drop a tool instance's ``create_kwargs``."""
        self.instances.discard(instance_id)


DEFAULT_EPISODE_STORE = VerlEpisodes()
"""The store the tools and the interaction share when none is passed (verl instantiates them
separately from class names, so this is where they meet)."""


def release_episode(key: str, episodes: VerlEpisodes | None = None) -> None:
    """Close and forget the episode of a rollout id (no-op when unknown)."""
    (DEFAULT_EPISODE_STORE if episodes is None else episodes).release(key)


def _record_call(env: VeritaskEnv, tool: str, arguments: Any, call_id: str) -> dict[str, Any]:
    """Run one call as its own assistant turn and append both messages; returns the payload."""
    return env.record_call(tool, arguments, call_id)


# -- schemas -----------------------------------------------------------------------------------


def verl_tool_schema(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A veritask OpenAI tool schema in the shape verl 0.7 validates: properties keep ``type``,
    ``description`` and string enums; other enums and bounds move into the description."""
    fn = tool["function"]
    params = fn["parameters"]
    properties: dict[str, dict[str, Any]] = {}
    for name, prop in params.get("properties", {}).items():
        text = str(prop.get("description", ""))
        out: dict[str, Any] = {"type": prop["type"]}
        enum = prop.get("enum")
        if enum is not None and all(isinstance(v, str) for v in enum):
            out["enum"] = list(enum)
        elif enum is not None:
            text += f" One of: {', '.join(json.dumps(v) for v in enum)}."
        bounds = [f"{k} {prop[k]}" for k in ("minimum", "maximum") if k in prop]
        if bounds:
            text += f" ({', '.join(bounds)})."
        if text:
            out["description"] = text.strip()
        properties[name] = out
    return {
        "type": "function",
        "function": {
            "name": fn["name"],
            "description": fn["description"],
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": list(params.get("required", [])),
            },
        },
    }


def _domain_tools(dataset_dir: str, domain: str) -> dict[str, dict[str, Any]]:
    tools = dataset_source(dataset_dir).domain(domain).tools
    return {name: spec.openai_schema() for name, spec in tools.items()}


def _only_domain(dataset_dir: str) -> str:
    domains = sorted({p.domain for p in dataset_source(dataset_dir).packages})
    if len(domains) != 1:
        raise ValueError(
            f"{dataset_dir} has domains {domains}; name the tool's domain in its config"
        )
    return domains[0]


# -- the tool ----------------------------------------------------------------------------------


class VeritaskTool(_BaseTool):
    """One veritask tool for verl's tool agent loop.

    Config (``tool_config.yaml``, see :func:`verl_tool_config`): ``type: native``,
    ``dataset_dir``, and ``tool`` (its name) when no ``tool_schema`` is given; optional
    ``domain`` and ``lambda_err``. The rollout's episode is found by ``agent_data.request_id``
    (opened by :class:`VeritaskInteraction`, or here from ``create_kwargs`` ``task_id`` and
    ``dataset_dir`` when no interaction runs); the tool object holds no episode state, only the
    store it looks episodes up in (``episodes``, default :data:`DEFAULT_EPISODE_STORE`).
    """

    def __init__(
        self, config: dict[str, Any], tool_schema: Any = None, episodes: VerlEpisodes | None = None
    ) -> None:
        self.episodes = DEFAULT_EPISODE_STORE if episodes is None else episodes
        self.dataset_dir = str(config.get("dataset_dir", ""))
        self.lambda_err = float(config.get("lambda_err", 0.1))
        if tool_schema is None:
            if not self.dataset_dir or "tool" not in config:
                raise ValueError("VeritaskTool needs a tool_schema or config dataset_dir and tool")
            domain = config.get("domain") or _only_domain(self.dataset_dir)
            schema = _domain_tools(self.dataset_dir, domain)[config["tool"]]
            tool_schema = _ToolSchema.model_validate(verl_tool_schema(schema))
        super().__init__(config, tool_schema)

    def _key(self, instance_id: str, kwargs: Mapping[str, Any]) -> str:
        agent_data = kwargs.get("agent_data")
        request_id = getattr(agent_data, "request_id", None)
        return str(request_id) if request_id else instance_id

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, Any]:
        """A new instance id; ``create_kwargs`` (``task_id``, ``dataset_dir``) are kept for a
        first call that finds no open episode."""
        instance_id = instance_id or str(uuid4())
        create_kwargs = kwargs.get("create_kwargs")
        if not isinstance(create_kwargs, Mapping):
            create_kwargs = {k: v for k, v in kwargs.items() if k in ("task_id", "dataset_dir")}
        self.episodes.remember(instance_id, create_kwargs)
        return instance_id, _ToolResponse()

    def _find(self, instance_id: str, key: str) -> VeritaskEnv:
        episode = self.episodes.get(key)
        if episode is not None:
            return episode
        pending = self.episodes.create_kwargs(instance_id)
        task_id = pending.get("task_id")
        dataset_dir = str(pending.get("dataset_dir") or self.dataset_dir)
        if not task_id or not dataset_dir:
            raise LookupError(
                f"no open veritask episode for {key!r} and no create_kwargs task_id/dataset_dir"
            )
        return self.episodes.open(key, dataset_dir, str(task_id), self.lambda_err)

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[Any, float, dict[str, Any]]:
        """Run the call on the rollout's episode: ``(ToolResponse(text=JSON result or error),
        change in state proximity, {"ok", "violated_rule"})``."""
        try:
            episode = self._find(instance_id, self._key(instance_id, kwargs))
        except LookupError as exc:
            error = {"error": {"code": "NO_EPISODE", "message": str(exc)}}
            return _ToolResponse(text=json.dumps(error)), 0.0, {"ok": False}
        before = episode.proximity()
        call_id = f"call_{len(episode.steps) + 1}"
        payload = _record_call(episode, self.name, parameters, call_id)
        body = payload["result"] if payload["ok"] else {"error": payload["error"]}
        violated = (payload.get("error") or {}).get("violated_rule")
        metrics = {"ok": bool(payload["ok"]), "violated_rule": violated}
        return (
            _ToolResponse(text=json.dumps(body, default=str)),
            episode.proximity() - before,
            metrics,
        )

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The verified reward of the rollout's episode (0.0 when none is open)."""
        episode = self.episodes.get(self._key(instance_id, kwargs))
        return float(episode.reward()["reward"]) if episode else 0.0

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Forget the instance; its episode outlives it unless it was keyed by this instance
        (verl < 0.5 created one instance per rollout)."""
        self.episodes.forget(instance_id)
        self.episodes.release(instance_id)


# -- the interaction (user simulator) ----------------------------------------------------------


class VeritaskInteraction(_BaseInteraction):
    """veritask's scripted user as a verl interaction.

    Config (``interaction_config.yaml``): ``dataset_dir`` (or per row in
    ``interaction_kwargs``), optional ``lambda_err``. Rows carry ``interaction_kwargs``
    ``{"name", "task_id", "dataset_dir"}``. Each assistant text turn gets the user's reply; the
    turn score is the verified reward of the episode so far, and the user's stop ends the
    rollout with the user's ``###STOP###`` (so the last turn score is the episode's verified
    reward). Episodes are opened in ``episodes`` (default :data:`DEFAULT_EPISODE_STORE`), where the
    tools find them.
    """

    def __init__(self, config: dict[str, Any], episodes: VerlEpisodes | None = None) -> None:
        super().__init__(config)
        self.episodes = DEFAULT_EPISODE_STORE if episodes is None else episodes
        self.dataset_dir = str(config.get("dataset_dir", ""))
        self.lambda_err = float(config.get("lambda_err", 0.1))

    async def start_interaction(
        self,
        instance_id: str | None = None,
        task_id: str | None = None,
        dataset_dir: str | None = None,
        **kwargs: Any,
    ) -> str:
        """Open the rollout's episode on ``task_id``; returns its id (verl's request id)."""
        instance_id = instance_id or str(uuid4())
        dataset_dir = str(dataset_dir or self.dataset_dir)
        if not task_id or not dataset_dir:
            raise ValueError("VeritaskInteraction needs interaction_kwargs task_id and dataset_dir")
        self.episodes.open(instance_id, dataset_dir, str(task_id), self.lambda_err)
        return instance_id

    async def generate_response(
        self, instance_id: str, messages: list[dict[str, Any]], **kwargs: Any
    ) -> tuple[bool, str, float, dict[str, Any]]:
        """The scripted user's answer to the last assistant message."""
        episode = self.episodes.get(instance_id)
        if episode is None:
            return True, "", 0.0, {"error": f"no open veritask episode for {instance_id!r}"}
        said = next(
            (m.get("content") or "" for m in reversed(messages) if m.get("role") == "assistant"), ""
        )
        result = episode.step({"role": "assistant", "content": str(said)})
        reward = episode.reward()
        metrics = {"proximity": reward["proximity"], "violations": reward["violations"]}
        if result.done:
            return True, STOP, float(reward["reward"]), metrics
        reply = result.messages[-1]["content"] if result.messages else ""
        return False, str(reply), float(reward["reward"]), metrics

    async def calculate_score(self, instance_id: str | None = None, **kwargs: Any) -> float:
        """The verified reward of the episode (0.0 when none is open)."""
        episode = self.episodes.get(instance_id) if instance_id else None
        return float(episode.reward()["reward"]) if episode else 0.0

    async def finalize_interaction(self, instance_id: str | None = None, **kwargs: Any) -> None:
        """Close the episode."""
        if instance_id:
            self.episodes.release(instance_id)


# -- reward function ---------------------------------------------------------------------------

_HERMES = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


def parse_tool_calls(text: str) -> tuple[list[tuple[str, Any]], int]:
    """The hermes-format tool calls (``<tool_call>{"name": ..., "arguments": ...}</tool_call>``,
    verl's default ``multi_turn.format``) of a decoded response, in order, and how many blocks
    could not be parsed."""
    calls: list[tuple[str, Any]] = []
    bad = 0
    for block in _HERMES.findall(text):
        try:
            call = loads_untrusted(block)
        except ValueError:
            bad += 1
            continue
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            bad += 1
            continue
        arguments = call.get("arguments", {})
        if isinstance(arguments, str):
            with contextlib.suppress(ValueError):
                arguments = loads_untrusted(arguments)
        calls.append((call["name"], arguments))
    return calls, bad


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, Any] | float:
    """verl's custom reward function: the verified reward of a veritask rollout.

    The tool calls of ``solution_str`` are replayed in order on a fresh episode of the task
    (``extra_info["task_id"]``, else ``ground_truth``) from ``extra_info["dataset_dir"]``, and
    the final state is verified; rows of other data sources go to verl's
    ``default_compute_score``.

    Returns:
        ``{"score", "proximity", "violations", "tool_calls", "unparsed_tool_calls"}``.
    """
    if not str(data_source).startswith(DATA_SOURCE_PREFIX):
        from verl.utils.reward_score import default_compute_score

        result: dict[str, Any] | float = default_compute_score(
            data_source, solution_str, ground_truth, extra_info, **kwargs
        )
        return result
    info = dict(extra_info or {})
    task_id = str(info.get("task_id") or ground_truth)
    dataset_dir = info.get("dataset_dir")
    if not dataset_dir:
        raise ValueError("veritask rows need extra_info['dataset_dir']")
    calls, bad = parse_tool_calls(solution_str)
    env = VeritaskEnv(str(dataset_dir))
    env.reset(task_id)
    try:
        for i, (name, arguments) in enumerate(calls, 1):
            _record_call(env, name, arguments, f"call_{i}")
        reward = env.reward()
    finally:
        env.close()
    return {
        "score": float(reward["reward"]),
        "proximity": float(reward["proximity"]),
        "violations": int(reward["violations"]),
        "tool_calls": len(calls),
        "unparsed_tool_calls": bad,
    }


# -- data and config files ---------------------------------------------------------------------


def verl_rows(
    dataset_dir: str, *, interaction_name: str = "veritask", agent_name: str = "tool_agent"
) -> list[dict[str, Any]]:
    """verl RL rows, one per task: ``data_source`` (``veritask/<domain>``), ``prompt`` (system
    policy and the user's opening), ``ability``, ``reward_model`` (``ground_truth``: the task
    id), ``agent_name`` and ``extra_info`` (``task_id``, ``dataset_dir``, per-tool
    ``tools_kwargs.create_kwargs`` and ``interaction_kwargs``)."""
    dataset_dir = str(Path(dataset_dir).resolve())
    source = dataset_source(dataset_dir)
    policies: dict[str, str] = {}
    rows = []
    for index, pkg in enumerate(source.packages):
        if pkg.policy not in policies:
            policies[pkg.policy] = source.dataset.verified_policy(pkg.policy, pkg.domain)
        opening = drive_user(ScriptedUser(pkg).open()).message
        ref: dict[str, Any] = {"task_id": pkg.id, "dataset_dir": dataset_dir}
        extra_info: dict[str, Any] = dict(ref, index=index)
        extra_info["tools_kwargs"] = {
            name: {"create_kwargs": ref} for name in _domain_tools(dataset_dir, pkg.domain)
        }
        extra_info["interaction_kwargs"] = dict(ref, name=interaction_name)
        rows.append(
            {
                "data_source": f"{DATA_SOURCE_PREFIX}/{pkg.domain}",
                "prompt": [
                    {"role": "system", "content": policies[pkg.policy]},
                    {"role": "user", "content": opening["content"]},
                ],
                "ability": "agent",
                "reward_model": {"style": "rule", "ground_truth": pkg.id},
                "agent_name": agent_name,
                "extra_info": extra_info,
            }
        )
    return rows


def verl_tool_config(dataset_dir: str, *, domain: str | None = None) -> dict[str, Any]:
    """The ``multi_turn.tool_config_path`` file's content: one ``VeritaskTool`` per tool."""
    dataset_dir = str(Path(dataset_dir).resolve())
    domain = domain or _only_domain(dataset_dir)
    return {
        "tools": [
            {
                "class_name": f"{__name__}.VeritaskTool",
                "config": {"type": "native", "dataset_dir": dataset_dir, "domain": domain},
                "tool_schema": verl_tool_schema(schema),
            }
            for schema in _domain_tools(dataset_dir, domain).values()
        ]
    }


def verl_interaction_config(dataset_dir: str, *, name: str = "veritask") -> dict[str, Any]:
    """The ``multi_turn.interaction_config_path`` file's content."""
    return {
        "interaction": [
            {
                "name": name,
                "class_name": f"{__name__}.VeritaskInteraction",
                "config": {"dataset_dir": str(Path(dataset_dir).resolve())},
            }
        ]
    }


def write_verl_files(dataset_dir: str, out_dir: str) -> dict[str, Path]:
    """Write ``train.parquet``, ``tool_config.yaml`` and ``interaction_config.yaml`` for a
    single-domain dataset; returns their paths (needs ``datasets``)."""
    import yaml
    from datasets import Dataset

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "train": out / "train.parquet",
        "tool_config": out / "tool_config.yaml",
        "interaction_config": out / "interaction_config.yaml",
    }
    Dataset.from_list(verl_rows(dataset_dir)).to_parquet(str(paths["train"]))
    paths["tool_config"].write_text(yaml.safe_dump(verl_tool_config(dataset_dir), sort_keys=False))
    paths["interaction_config"].write_text(
        yaml.safe_dump(verl_interaction_config(dataset_dir), sort_keys=False)
    )
    return paths
