"""LLM-driven roles through the model-provider layer: the assistant agent and the user simulator."""

from __future__ import annotations

from typing import Any

from veritask.agent._base import STOP, Turn, text_message, wire_messages
from veritask.agent._users import flip_roles, user_system_prompt
from veritask.model import GenerateConfig, ModelProvider
from veritask.task import TaskPackage


class LLMAgent:
    """The assistant under evaluation: the wiki policy as system prompt, the environment's tools
    as OpenAI tools, one provider call per turn."""

    def __init__(
        self, provider: ModelProvider, config: GenerateConfig | None = None, sample_index: int = 0
    ) -> None:
        self.provider = provider
        self.config = config or GenerateConfig()
        self.sample_index = sample_index
        self.name = f"llm:{provider.name}"

    async def respond(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        """Ask the model for the next assistant message."""
        out = await self.provider.generate(
            wire_messages(messages),
            tools=tools or None,
            config=self.config,
            sample_index=self.sample_index,
        )
        message = dict(out.message)
        message.setdefault("role", "assistant")
        message.setdefault("content", None)
        return Turn(message, out.usage)


USER_OPENING = "Hi! How can I help you today?"
"""The assistant's greeting the user simulator answers first (its conversation's first input)."""


class LLMUser:
    """An LLM user that follows the task description with progressive disclosure and ends with
    ``###STOP###`` (LOGIGEN Appendix B.1)."""

    def __init__(
        self,
        provider: ModelProvider,
        package: TaskPackage,
        config: GenerateConfig | None = None,
        sample_index: int = 0,
        tools: list[dict[str, Any]] | None = None,
    ) -> None:
        self.provider = provider
        self.config = config or GenerateConfig()
        self.tools = tools or []
        """The user's own tools (dual control): the model may call them when the agent asks."""
        self.system = user_system_prompt(package, self.tools)
        self.sample_index = sample_index
        self.name = f"llm-user:{provider.name}"

    async def _say(self, history: list[dict[str, Any]]) -> Turn:
        messages = [{"role": "system", "content": self.system}, *history]
        out = await self.provider.generate(
            messages, tools=self.tools or None, config=self.config, sample_index=self.sample_index
        )
        content = out.message.get("content") or ""
        calls = out.message.get("tool_calls") if self.tools else None
        if calls:  # the user runs their own tools; the loop answers and asks again
            message = {"role": "user", "content": content or None, "tool_calls": calls}
            return Turn(message, out.usage)
        if STOP in content:
            content = STOP
        return Turn(text_message(content.strip(), role="user"), out.usage)

    async def open(self) -> Turn:
        """The opening line."""
        return await self._say([{"role": "user", "content": USER_OPENING}])

    async def respond(self, messages: list[dict[str, Any]]) -> Turn:
        """The next line, from the conversation with roles flipped."""
        history = [
            {"role": "user", "content": USER_OPENING},
            *flip_roles(messages),
        ]
        return await self._say(history)
