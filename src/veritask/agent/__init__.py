"""Assistant agents and user simulators, symbolic and LLM-driven."""

from veritask.agent._base import (
    PAYLOAD,
    STOP,
    Agent,
    Turn,
    User,
    text_message,
    tool_call_message,
    wire_messages,
)
from veritask.agent._faithful import FaithfulAgent
from veritask.agent._llm import USER_OPENING, LLMAgent, LLMUser
from veritask.agent._symbolic import NoopAgent, OracleAgent, RandomAgent, random_arguments
from veritask.agent._users import ScriptedUser, flip_roles, user_system_prompt

__all__ = [
    "PAYLOAD",
    "STOP",
    "USER_OPENING",
    "Agent",
    "FaithfulAgent",
    "LLMAgent",
    "LLMUser",
    "NoopAgent",
    "OracleAgent",
    "RandomAgent",
    "ScriptedUser",
    "Turn",
    "User",
    "flip_roles",
    "random_arguments",
    "text_message",
    "tool_call_message",
    "user_system_prompt",
    "wire_messages",
]
