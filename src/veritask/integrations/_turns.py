"""What a user turn looks like to TRL's rows: the user tool's name and instruction, and which
tasks need no user turn after the opening request (kept apart from :mod:`.trl_users`, which
builds on :mod:`.trl`, so that :mod:`.trl`'s row builder can use them)."""

from __future__ import annotations

from veritask.agent import STOP
from veritask.task import TaskPackage

USER_TOOL = "respond_to_user"
"""Name of the tool that carries user turns."""

USER_TOOL_INSTRUCTION = (
    f"You reach the user only through the `{USER_TOOL}` tool: call it to answer, to ask a "
    "question or to explain why something cannot be done; its result is the user's reply. "
    f"When the reply is {STOP}, the user is done and you should stop."
)
"""The line rows for the user-tool class add to the system prompt."""


def single_turn(package: TaskPackage) -> bool:
    """Whether a task can be solved without a user turn after the opening request: it has one
    sub-goal, and none of its fallbacks asks for a revised request (giving up needs no reply)."""
    subs = package.task.sub_goals
    if len(subs) != 1:
        return False
    return all(fb.then is None and not fb.first for fb in subs[0].fallbacks)
