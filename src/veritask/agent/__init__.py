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
from veritask.agent._dual import (
    BY_USER,
    USER_CALL,
    USER_TRAFFIC,
    ask_user_to_call,
    flipped_traffic,
    requested_call,
    user_results,
    user_tool_call_message,
)
from veritask.agent._faithful import FaithfulAgent
from veritask.agent._llm import USER_OPENING, LLMAgent, LLMUser
from veritask.agent._symbolic import NoopAgent, OracleAgent, RandomAgent, random_arguments
from veritask.agent._users import ScriptedUser, flip_roles, user_system_prompt

__all__ = [
    "BY_USER",
    "PAYLOAD",
    "STOP",
    "USER_CALL",
    "USER_OPENING",
    "USER_TRAFFIC",
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
    "ask_user_to_call",
    "flip_roles",
    "flipped_traffic",
    "random_arguments",
    "requested_call",
    "text_message",
    "tool_call_message",
    "user_results",
    "user_system_prompt",
    "user_tool_call_message",
    "wire_messages",
]
