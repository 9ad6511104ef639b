"""A re-statement of the part of verl's ``ToolAgentLoop`` that the veritask agent loop relies on,
read from ``verl/experimental/agent_loop/tool_agent_loop.py`` and ``agent_loop.py`` of the 0.8.0
and 0.9.1 wheels (``volcengine/verl``): the same state machine, ``AgentData`` fields, termination
checks, tool-call extraction, tool-result merge with ``response_mask`` 0 and output assembly.
Tokenization is a character code per character and the chat template a plain role-tagged
rendering; the "server" replays scripted replies. Two flavours:

- :class:`ToolAgentLoop091`: continuous-token merging (``ct_merge_context_msg``), the assistant
  message appended to ``messages`` after each generation (0.9.1);
- :class:`ToolAgentLoop080`: ``apply_chat_template(..., remove_system_prompt=True)`` for
  appended turns and no assistant message in ``messages`` (0.8.0).

verl itself is exercised by ``test_verl_agent_loop_real.py`` where it is installed.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

GEN_PROMPT = "<|assistant|>"


class AgentState(Enum):
    PENDING = "pending"
    GENERATING = "generating"
    PROCESSING_TOOLS = "processing_tools"
    TERMINATED = "terminated"


@dataclass
class FunctionCall:
    name: str
    arguments: str
    tool_call_id: str | None = None


@dataclass
class ToolResponse:
    text: str | None = None


@dataclass
class TokenOutput:
    token_ids: list[int]
    log_probs: list[float] | None = None
    extra_fields: dict[str, Any] = field(default_factory=dict)


@dataclass
class AgentLoopOutput:
    prompt_ids: list[int]
    response_ids: list[int]
    response_mask: list[int]
    response_logprobs: list[float] | None = None
    reward_score: float | None = None
    num_turns: int = 0
    extra_fields: dict[str, Any] = field(default_factory=dict)


class AgentData:
    def __init__(self, messages: list[dict[str, Any]], tools_kwargs: dict[str, Any]) -> None:
        self.messages = messages
        self.tools_kwargs = tools_kwargs
        self.request_id = "r1"
        self.prompt_ids: list[int] = []
        self.response_ids: list[int] = []
        self.response_mask: list[int] = []
        self.response_logprobs: list[float] = []
        self.turn_scores: list[float] = []
        self.tool_rewards: list[float] = []
        self.user_turns = 0
        self.assistant_turns = 0
        self.tool_calls: list[FunctionCall] = []
        self.extra_fields: dict[str, Any] = {}


class CharTokenizer:
    """One token per character (its code point)."""

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return "".join(chr(i) for i in ids)


def render(messages: list[dict[str, Any]]) -> str:
    """The chat template: ``<|role|>content`` per message, tool calls as hermes blocks."""
    out = []
    for m in messages:
        calls = "".join(
            f"<tool_call>{json.dumps(c['function'])}</tool_call>" for c in m.get("tool_calls", [])
        )
        out.append(f"<|{m['role']}|>{m.get('content') or ''}{calls}\n")
    return "".join(out)


class ScriptedServer:
    """``server_manager.generate`` replaying one reply per call (then ``fallback``); records the
    prompts it was sent."""

    def __init__(self, replies: list[str], fallback: str = "All done.") -> None:
        self.replies = list(replies)
        self.fallback = fallback
        self.prompts: list[list[int]] = []

    async def generate(self, *, prompt_ids: list[int], **kwargs: Any) -> TokenOutput:
        self.prompts.append(list(prompt_ids))
        text = self.replies.pop(0) if self.replies else self.fallback
        return TokenOutput(token_ids=[ord(c) for c in text], extra_fields={"global_steps": 3})


_HERMES = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


class _ToolAgentLoop:
    """The shared part of both versions."""

    continuous_token = True

    def __init__(
        self,
        *,
        server_manager: ScriptedServer,
        response_length: int = 100_000,
        max_user_turns: int | None = None,
        max_assistant_turns: int | None = 40,
        max_tool_response_length: int = 100_000,
        **kwargs: Any,
    ) -> None:
        self.server_manager = server_manager
        self.tokenizer = CharTokenizer()
        self.response_length = response_length
        self.max_user_turns = max_user_turns
        self.max_assistant_turns = max_assistant_turns
        self.max_parallel_calls = 1
        self.max_tool_response_length = max_tool_response_length
        self.tools: dict[str, Any] = {}
        self.tool_schemas: list[dict[str, Any]] = []
        self.leftover_kwargs = kwargs

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        agent_data = AgentData(list(kwargs["raw_prompt"]), kwargs.get("tools_kwargs", {}))
        agent_data._active_tools = self.tools  # type: ignore[attr-defined]
        agent_data._active_tool_schemas = self.tool_schemas  # type: ignore[attr-defined]
        state = AgentState.PENDING
        while state != AgentState.TERMINATED:
            if state == AgentState.PENDING:
                state = await self._handle_pending_state(agent_data, sampling_params)
            elif state == AgentState.GENERATING:
                state = await self._handle_generating_state(agent_data, sampling_params)
            else:
                state = await self._handle_processing_tools_state(agent_data)
        n = len(agent_data.response_mask)
        output = AgentLoopOutput(
            prompt_ids=agent_data.prompt_ids[: len(agent_data.prompt_ids) - n],
            response_ids=agent_data.prompt_ids[-n:][: self.response_length],
            response_mask=agent_data.response_mask[: self.response_length],
            response_logprobs=agent_data.response_logprobs or None,
            num_turns=agent_data.user_turns + agent_data.assistant_turns + 1,
            extra_fields=agent_data.extra_fields,
        )
        output.extra_fields.update(
            {"turn_scores": agent_data.turn_scores, "tool_rewards": agent_data.tool_rewards}
        )
        return output

    async def _handle_pending_state(
        self, agent_data: AgentData, sampling_params: dict[str, Any]
    ) -> AgentState:
        schemas = getattr(agent_data, "_active_tool_schemas", self.tool_schemas)
        assert isinstance(schemas, list)
        agent_data.prompt_ids = self.tokenizer.encode(render(agent_data.messages) + GEN_PROMPT)
        return AgentState.GENERATING

    async def _handle_generating_state(
        self,
        agent_data: AgentData,
        sampling_params: dict[str, Any],
        ignore_termination: bool = False,
    ) -> AgentState:
        output = await self.server_manager.generate(
            request_id=agent_data.request_id,
            prompt_ids=agent_data.prompt_ids,
            sampling_params=sampling_params,
        )
        if not agent_data.extra_fields:
            agent_data.extra_fields.update(output.extra_fields)
        agent_data.assistant_turns += 1
        agent_data.response_ids = output.token_ids
        agent_data.prompt_ids = agent_data.prompt_ids + agent_data.response_ids
        agent_data.response_mask = agent_data.response_mask + [1] * len(agent_data.response_ids)
        if not ignore_termination and len(agent_data.response_mask) >= self.response_length:
            return AgentState.TERMINATED
        if self.max_assistant_turns and agent_data.assistant_turns >= self.max_assistant_turns:
            return AgentState.TERMINATED
        if self.max_user_turns and agent_data.user_turns >= self.max_user_turns:
            return AgentState.TERMINATED
        active = getattr(agent_data, "_active_tools", self.tools)
        assert all(hasattr(t, "tool_schema") for t in active.values())
        text = self.tokenizer.decode(agent_data.response_ids)
        agent_data.tool_calls = [
            FunctionCall(name=c["name"], arguments=json.dumps(c.get("arguments", {})))
            for c in (json.loads(b) for b in _HERMES.findall(text))
        ]
        self._record_assistant(agent_data, _HERMES.sub("", text))
        return AgentState.PROCESSING_TOOLS if agent_data.tool_calls else AgentState.TERMINATED

    def _record_assistant(self, agent_data: AgentData, content: str) -> None:
        raise NotImplementedError

    async def _handle_processing_tools_state(self, agent_data: AgentData) -> AgentState:
        previous = list(agent_data.messages)
        calls = agent_data.tool_calls[: self.max_parallel_calls]
        responses = await asyncio.gather(
            *(self._call_tool(c, agent_data.tools_kwargs, agent_data) for c in calls)
        )
        add = []
        for response, reward, _ in responses:
            add.append({"role": "tool", "content": response.text or ""})
            if reward is not None:
                agent_data.tool_rewards.append(reward)
        agent_data.messages.extend(add)
        if not await self._merge_appended(agent_data, previous, add):
            return AgentState.TERMINATED
        agent_data.user_turns += 1
        return AgentState.GENERATING

    async def _merge_appended(
        self, agent_data: AgentData, previous: list[dict[str, Any]], add: list[dict[str, Any]]
    ) -> bool:
        raise NotImplementedError

    async def _call_tool(
        self, tool_call: FunctionCall, tools_kwargs: dict[str, Any], agent_data: AgentData
    ) -> tuple[ToolResponse, float, dict[str, Any]]:
        return ToolResponse(text=f"Unknown function '{tool_call.name}'"), 0.0, {}


class ToolAgentLoop091(_ToolAgentLoop):
    """verl 0.9.1: continuous-token merging; the assistant message is recorded."""

    def _record_assistant(self, agent_data: AgentData, content: str) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if agent_data.tool_calls:
            message["tool_calls"] = [
                {"type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in agent_data.tool_calls
            ]
        agent_data.messages.append(message)

    async def ct_merge_context_msg(
        self,
        previous_messages: list[dict[str, Any]],
        updated_messages: list[dict[str, Any]],
        runtime_token_ids: list[int],
        response_mask: list[int],
        response_logprobs: list[float] | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> tuple[Any, list[int], list[float] | None]:
        added = updated_messages[len(previous_messages) :]
        new = self.tokenizer.encode(render(added) + GEN_PROMPT)

        @dataclass
        class MergeResult:
            token_ids: list[int]

        logprobs = None if response_logprobs is None else response_logprobs + [0.0] * len(new)
        return MergeResult(runtime_token_ids + new), response_mask + [0] * len(new), logprobs

    async def _merge_appended(
        self, agent_data: AgentData, previous: list[dict[str, Any]], add: list[dict[str, Any]]
    ) -> bool:
        result, mask, _ = await self.ct_merge_context_msg(
            previous, agent_data.messages, agent_data.prompt_ids, agent_data.response_mask
        )
        if len(mask) >= self.response_length:
            return False
        agent_data.prompt_ids, agent_data.response_mask = result.token_ids, mask
        return True


class ToolAgentLoop080(_ToolAgentLoop):
    """verl 0.8.0: appended turns rendered alone; no assistant message in ``messages``."""

    def _record_assistant(self, agent_data: AgentData, content: str) -> None:
        del agent_data, content

    async def apply_chat_template(
        self, messages: list[dict[str, Any]], remove_system_prompt: bool = False, **kwargs: Any
    ) -> list[int]:
        assert remove_system_prompt
        return self.tokenizer.encode(render(messages) + GEN_PROMPT)

    async def _merge_appended(
        self, agent_data: AgentData, previous: list[dict[str, Any]], add: list[dict[str, Any]]
    ) -> bool:
        ids = await self.apply_chat_template(add, remove_system_prompt=True)
        if len(agent_data.response_mask) + len(ids) >= self.response_length:
            return False
        agent_data.prompt_ids = agent_data.prompt_ids + ids
        agent_data.response_mask = agent_data.response_mask + [0] * len(ids)
        return True
