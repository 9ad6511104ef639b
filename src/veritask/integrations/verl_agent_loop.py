"""verl >= 0.8: a registered agent loop that plays veritask tasks (``veritask_agent``).

verl 0.8 removed ``verl/interactions`` (the 0.7 scripted-user hook, see
:mod:`veritask.integrations.verl`) in favour of registered agent loops. Interfaces as read in
verl's sources (0.8.0, 0.9.0 and 0.9.1 wheels; repository ``volcengine/verl``):

* ``verl/experimental/agent_loop/agent_loop.py``: ``register(name)`` puts ``{"_target_":
  module.qualname}`` in the registry that ``hydra.utils.instantiate`` builds one loop per sample
  from (``trainer_config``, ``server_manager``, ``tokenizer``, ``processor``, ``dataset_cls``,
  ``data_config``, ``tools`` and, in 0.9, ``hf_model_type``; the keys of an
  ``agent_loop_config_path`` entry other than ``name`` come as keyword arguments too);
  ``run(sampling_params, **row) -> AgentLoopOutput`` gets the dataset row's fields
  (``raw_prompt``, ``extra_info``, ``tools_kwargs``, ...); ``AgentLoopOutput.reward_score``, when
  set, becomes the last response token's ``rm_scores`` and no reward function runs.
* ``verl/experimental/agent_loop/tool_agent_loop.py``: ``ToolAgentLoop`` runs a state machine
  over ``AgentData`` (``messages``, ``prompt_ids``, ``response_mask``, ``response_logprobs``,
  ``tool_calls``, ``user_turns``, ``assistant_turns``, ``extra_fields``, and the per-sample
  ``_active_tools`` / ``_active_tool_schemas``): ``_handle_pending_state`` renders the prompt,
  ``_handle_generating_state`` generates and parses tool calls (``TERMINATED`` when there are
  none or a length/turn limit is hit), ``_handle_processing_tools_state`` runs each call through
  ``_call_tool(tool_call, tools_kwargs, agent_data) -> (ToolResponse, reward, metrics)`` and
  appends the results with ``response_mask`` 0. Non-assistant messages are tokenized by
  ``ct_merge_context_msg`` (0.9.1), ``ct_merge_non_assistant_msg`` when
  ``enable_continuous_token`` (0.9.0), else ``apply_chat_template(..., remove_system_prompt=True)``
  after ``turn_separator`` (0.9.0) or alone (0.8).

:class:`VeritaskAgentLoop` subclasses ``ToolAgentLoop`` and changes four things: the episode
(a :class:`~veritask.integrations.VeritaskEnv` on the row's ``extra_info`` ``task_id`` and
``dataset_dir``) is opened in the pending state and kept in ``agent_data.extra_fields`` under
:data:`SESSION_KEY`; the tools and their schemas are the task domain's, run on that episode; a
reply without a tool call goes to the scripted user, whose answer is inserted as a user turn
(``response_mask`` 0) and generation goes on, until the user says stop or a limit is hit; and
the output's ``reward_score`` is the verified reward, with a summary under :data:`RESULT_KEY`
in its ``extra_fields`` (the live episode is closed, not shipped). The behaviour lives in
:class:`VeritaskLoopMixin`, which only uses the interface above, so it can be checked without
verl; :class:`VeritaskAgentLoop` exists when verl is importable.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from veritask.integrations._session import VeritaskEnv
from veritask.integrations.verl import verl_rows, verl_tool_schema

__all__ = [
    "AGENT_NAME",
    "RESULT_KEY",
    "SESSION_KEY",
    "VERL_AGENT_LOOP",
    "VeritaskLoopMixin",
    "verl_agent_loop_config",
    "write_verl_files",
]

AGENT_NAME = "veritask_agent"
"""The name the loop is registered under (a row's ``agent_name``)."""
SESSION_KEY = "veritask_session"
"""``agent_data.extra_fields`` key of the rollout's live episode."""
RESULT_KEY = "veritask"
"""``AgentLoopOutput.extra_fields`` key of the episode's summary (task, reward, signals)."""
TRUNCATED = "...(truncated)"

if TYPE_CHECKING:

    class _ToolLoopInterface:
        """What the mixin uses of verl's ``ToolAgentLoop`` (type checking only)."""

        tokenizer: Any
        tool_schemas: list[dict[str, Any]]
        response_length: int
        max_user_turns: int | None
        max_assistant_turns: int | None
        max_tool_response_length: int

        def __init__(self, *args: Any, **kwargs: Any) -> None: ...
        async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> Any: ...
        async def _handle_pending_state(
            self, agent_data: Any, sampling_params: dict[str, Any]
        ) -> Any: ...
        async def _handle_generating_state(
            self, agent_data: Any, sampling_params: dict[str, Any], ignore_termination: bool
        ) -> Any: ...
        async def apply_chat_template(
            self, messages: list[dict[str, Any]], **kwargs: Any
        ) -> Any: ...

else:
    _ToolLoopInterface = object


class _DomainTool:
    """A domain tool as ``ToolAgentLoop`` looks at it: ``name`` and ``tool_schema`` (what the
    tool parser is given); calls never reach it (:meth:`VeritaskLoopMixin._call_tool`)."""

    def __init__(self, name: str, tool_schema: Any) -> None:
        self.name = name
        self.tool_schema = tool_schema


class VeritaskLoopMixin(_ToolLoopInterface):
    """The veritask behaviour on top of a ``ToolAgentLoop`` (see the module's documentation).

    Args:
        dataset_dir: The dataset directory when a row's ``extra_info`` does not name one.
        lambda_err: The dense reward's penalty per rule violation.
    """

    tool_schema_model: Any = None
    """Turns an OpenAI tool schema dict into the object the tool parser expects."""
    tool_response_model: Any = None
    """Builds a tool response from ``text=``."""

    def __init__(
        self, *args: Any, dataset_dir: str | None = None, lambda_err: float = 0.1, **kwargs: Any
    ) -> None:
        kwargs.pop("name", None)  # an agent_loop_config_path entry's own name
        super().__init__(*args, **kwargs)
        self.dataset_dir = dataset_dir
        self.lambda_err = lambda_err
        self._row: dict[str, Any] = {}
        self._episode: VeritaskEnv | None = None

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> Any:
        """verl's ``ToolAgentLoop.run`` on the row's task; sets ``reward_score``."""
        self._row = dict(kwargs.get("extra_info") or {})
        try:
            output = await super().run(sampling_params, **kwargs)
            output.extra_fields.pop(SESSION_KEY, None)
            episode = self._episode
            if episode is not None:
                summary = _summary(episode)
                output.reward_score = summary["reward"]
                output.extra_fields[RESULT_KEY] = summary
            return output
        finally:
            if self._episode is not None:
                self._episode.close()

    def _open_episode(self) -> VeritaskEnv:
        task_id = self._row.get("task_id")
        dataset = self._row.get("dataset_dir") or self.dataset_dir
        if not task_id or not dataset:
            raise ValueError("a veritask row needs extra_info['task_id'] and a dataset_dir")
        episode = VeritaskEnv(str(dataset), lambda_err=self.lambda_err)
        episode.reset(str(task_id))
        self._episode = episode
        return episode

    async def _handle_pending_state(self, agent_data: Any, sampling_params: dict[str, Any]) -> Any:
        episode = self._open_episode()
        agent_data.extra_fields[SESSION_KEY] = episode
        schemas = episode.tools
        make = self.tool_schema_model or (lambda schema: schema)
        agent_data._active_tool_schemas = schemas
        agent_data._active_tools = {
            s["function"]["name"]: _DomainTool(s["function"]["name"], make(verl_tool_schema(s)))
            for s in schemas
        }
        return await super()._handle_pending_state(agent_data, sampling_params)

    async def _handle_generating_state(
        self, agent_data: Any, sampling_params: dict[str, Any], ignore_termination: bool = False
    ) -> Any:
        # verl copies the server's extra fields only while extra_fields is empty (first turn)
        episode = agent_data.extra_fields.pop(SESSION_KEY)
        seen = len(agent_data.messages)
        try:
            state = await super()._handle_generating_state(
                agent_data, sampling_params, ignore_termination
            )
        finally:
            agent_data.extra_fields[SESSION_KEY] = episode
        states = type(state)
        if state is not states.TERMINATED or self._at_limit(agent_data, ignore_termination):
            return state
        reply = str(self.tokenizer.decode(agent_data.response_ids, skip_special_tokens=True))
        if len(agent_data.messages) == seen:  # verl 0.8 does not record the assistant message
            agent_data.messages.append({"role": "assistant", "content": reply})
        out = episode.step({"role": "assistant", "content": reply})
        if episode.done or not out.messages:
            return states.TERMINATED
        if not await self._insert_user_turn(agent_data, out.messages[-1]):
            return states.TERMINATED
        return states.GENERATING

    def _at_limit(self, agent_data: Any, ignore_termination: bool) -> bool:
        """Whether ``ToolAgentLoop`` stopped on a length or turn limit (not for a text reply)."""
        if not ignore_termination and len(agent_data.response_mask) >= self.response_length:
            return True
        if self.max_assistant_turns and agent_data.assistant_turns >= self.max_assistant_turns:
            return True
        return bool(self.max_user_turns and agent_data.user_turns >= self.max_user_turns)

    async def _insert_user_turn(self, agent_data: Any, message: dict[str, Any]) -> bool:
        """Append the scripted user's message to the token sequence with ``response_mask`` 0,
        the way ``ToolAgentLoop`` appends tool results; false when it no longer fits."""
        previous = list(agent_data.messages)
        agent_data.messages.append({"role": "user", "content": message.get("content") or ""})
        merge = getattr(self, "ct_merge_context_msg", None)
        if merge is None and getattr(self, "enable_continuous_token", False):
            merge = getattr(self, "ct_merge_non_assistant_msg", None)
        if merge is not None:
            schemas = getattr(agent_data, "_active_tool_schemas", self.tool_schemas)
            result, mask, logprobs = await merge(
                previous,
                agent_data.messages,
                agent_data.prompt_ids,
                agent_data.response_mask,
                agent_data.response_logprobs or None,
                tools=schemas,
            )
            if len(mask) >= self.response_length:
                return False
            agent_data.prompt_ids, agent_data.response_mask = list(result.token_ids), list(mask)
            if agent_data.response_logprobs:
                agent_data.response_logprobs = list(logprobs or [])
        else:
            ids = await self.apply_chat_template(
                agent_data.messages[-1:], remove_system_prompt=True
            )
            ids = list(getattr(self, "turn_separator", None) or []) + list(ids)
            if len(agent_data.response_mask) + len(ids) >= self.response_length:
                return False
            agent_data.prompt_ids = list(agent_data.prompt_ids) + ids
            agent_data.response_mask = list(agent_data.response_mask) + [0] * len(ids)
            if agent_data.response_logprobs:
                agent_data.response_logprobs = list(agent_data.response_logprobs) + [0.0] * len(ids)
        agent_data.user_turns += 1
        return True

    async def _call_tool(
        self, tool_call: Any, tools_kwargs: dict[str, Any], agent_data: Any
    ) -> tuple[Any, float, dict[str, Any]]:
        """Run one parsed call on the rollout's episode (never raises); the tool reward is the
        change in state proximity."""
        del tools_kwargs
        episode: VeritaskEnv = agent_data.extra_fields[SESSION_KEY]
        before = episode.proximity()
        call_id = getattr(tool_call, "tool_call_id", None) or f"call_{len(episode.steps) + 1}"
        payload = episode.record_call(tool_call.name, tool_call.arguments, call_id)
        text = json.dumps(payload, default=str)
        limit = self.max_tool_response_length
        if limit and len(text) > limit:
            text = text[:limit] + TRUNCATED
        make = self.tool_response_model or (lambda **kw: kw)
        return make(text=text), episode.proximity() - before, {}


def _summary(episode: VeritaskEnv) -> dict[str, Any]:
    reward = episode.reward()
    return {
        "task_id": episode.task.package.id,
        "reward": float(reward["reward"]),
        "proximity": float(reward["proximity"]),
        "violations": int(reward["violations"]),
        "tool_calls": len(episode.steps),
        "user_stopped": bool(episode.done),
    }


try:
    from verl.experimental.agent_loop.agent_loop import register
    from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop
    from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse
except ImportError:  # verl absent: the mixin, the files and the config remain
    VERL_AGENT_LOOP = False
else:
    VERL_AGENT_LOOP = True

    @register(AGENT_NAME)
    class VeritaskAgentLoop(VeritaskLoopMixin, ToolAgentLoop):  # type: ignore[misc]
        """verl's ``ToolAgentLoop`` on veritask tasks, registered as ``veritask_agent``."""

        tool_schema_model = OpenAIFunctionToolSchema.model_validate
        tool_response_model = ToolResponse

    __all__ += ["VeritaskAgentLoop"]


def verl_agent_loop_config(dataset_dir: str | None = None) -> list[dict[str, Any]]:
    """The ``rollout.agent.agent_loop_config_path`` file's content: the loop under
    :data:`AGENT_NAME` (and the dataset directory rows without one fall back to)."""
    entry: dict[str, Any] = {
        "name": AGENT_NAME,
        "_target_": f"{__name__}.VeritaskAgentLoop",
    }
    if dataset_dir is not None:
        entry["dataset_dir"] = str(Path(dataset_dir).resolve())
    return [entry]


def write_verl_files(
    dataset_dir: str, out_dir: str, tokenizer: Any | None = None
) -> dict[str, Path]:
    """Write ``train.parquet`` (rows with ``agent_name: veritask_agent``),
    ``agent_loop_config.yaml`` and ``overrides.yaml`` for verl >= 0.8; returns their paths
    (needs ``datasets``).

    ``overrides.yaml`` holds the Hydra overrides of
    :func:`~veritask.integrations.verl_settings.verl_settings`, measured on the dataset, under
    which verl neither cuts a tool response (its default keeps 256 characters) nor drops a
    prompt (its default prompt length is 512 tokens); prompt lengths are in ``tokenizer``'s
    tokens, or in characters (an upper bound) without one."""
    import yaml
    from datasets import Dataset

    from veritask.integrations.verl_settings import verl_settings

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "train": out / "train.parquet",
        "agent_loop_config": out / "agent_loop_config.yaml",
        "overrides": out / "overrides.yaml",
    }
    Dataset.from_list(verl_rows(dataset_dir, agent_name=AGENT_NAME)).to_parquet(str(paths["train"]))
    paths["agent_loop_config"].write_text(
        yaml.safe_dump(verl_agent_loop_config(dataset_dir), sort_keys=False)
    )
    overrides = verl_settings(dataset_dir, tokenizer=tokenizer)
    paths["overrides"].write_text(yaml.safe_dump(overrides, sort_keys=False))
    return paths
