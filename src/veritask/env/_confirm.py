"""The confirmation pattern on write tools (AgentSkiller section 3.9.1): preview, then commit.

A spec lists the write tools that need the user's confirmation in ``confirm_writes``. Through
a :class:`ConfirmationGate` such a tool is called twice:

1. ``confirm`` false (or absent): the write runs, its result is kept as the *preview*, and the
   state is restored to what it was, byte for byte. The answer is ``{"needs_confirmation":
   true, "action_preview": ..., "confirmation_token": ...}``. A write the policy refuses is
   answered with its refusal, as without the gate, and gets no token.
2. ``confirm`` true with that token and the same arguments: the write runs for real and the
   token is spent. A commit with no token, an unknown or spent token, or a token issued for
   other arguments is refused with ``CONFIRMATION_REQUIRED`` and changes nothing.

Nothing about a task's verification changes: a preview leaves the state as it was, so the
state a confirmed commit reaches is the state the direct write reaches, and the witness of a
package stays a list of direct writes. The gate sits in front of the environment for the agent
(``EnvSession`` wraps its environment in one when the spec asks), not inside it.

Tokens are a digest of the tool, the canonical arguments and how many previews the gate has
given, so a run is deterministic.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from veritask.env._environment import Environment
from veritask.env._result import ToolResult, failure
from veritask.policy import ToolSpec
from veritask.policy._tools import CONFIRM_ARG, TOKEN_ARG, confirmation_tools

CONFIRMATION_REQUIRED = "CONFIRMATION_REQUIRED"


def _canonical(args: Mapping[str, Any]) -> str:
    return json.dumps(dict(args), sort_keys=True, separators=(",", ":"), default=str)


class ConfirmationGate:
    """An environment whose ``confirm_writes`` tools follow preview-then-commit.

    Args:
        env: The environment the calls run on.
    """

    def __init__(self, env: Environment) -> None:
        self.env = env
        self.tools: dict[str, ToolSpec] = confirmation_tools(env.spec)
        self.gated = frozenset(env.spec.confirm_writes)
        self.pending: dict[str, tuple[str, str]] = {}
        """Token -> (tool, canonical arguments) of previews not yet committed."""
        self.previews = 0

    def openai_tools(self) -> list[dict[str, Any]]:
        """The agent's tool schemas (gated tools with their two extra arguments)."""
        return [tool.openai_schema() for tool in self.tools.values()]

    def call(self, tool: str, args: Mapping[str, Any] | str | None = None) -> ToolResult:
        """Run one call; a gated tool is previewed or committed (see the module docstring)."""
        if tool not in self.gated or not isinstance(args, Mapping):
            return self.env.call(tool, args)
        rest = {k: v for k, v in args.items() if k not in (CONFIRM_ARG, TOKEN_ARG)}
        if args.get(CONFIRM_ARG) is True:
            return self._commit(tool, rest, args.get(TOKEN_ARG))
        if args.get(CONFIRM_ARG, False) is not False:
            return failure(tool, "INVALID_ARGUMENTS", f"{CONFIRM_ARG} must be true or false")
        return self._preview(tool, rest)

    def _preview(self, tool: str, args: dict[str, Any]) -> ToolResult:
        before = self.env.snapshot()
        result = self.env.call(tool, args)
        self.env.restore(before)
        if not result.ok:
            return result
        self.previews += 1
        seed = f"{tool}\n{_canonical(args)}\n{self.previews}"
        token = "cf-" + hashlib.sha256(seed.encode()).hexdigest()[:16]
        self.pending[token] = (tool, _canonical(args))
        preview = {
            "needs_confirmation": True,
            "action_preview": {"tool": tool, "arguments": args, "would_return": result.result},
            "confirmation_token": token,
        }
        return ToolResult.accepted(tool, preview, state_changed=False)

    def _commit(self, tool: str, args: dict[str, Any], token: Any) -> ToolResult:
        if not isinstance(token, str) or self.pending.get(token) != (tool, _canonical(args)):
            return failure(
                tool,
                CONFIRMATION_REQUIRED,
                f"{tool}: no preview of this call was confirmed; nothing was changed",
                hint=(
                    f"Call {tool} with {CONFIRM_ARG}=false first, show the preview to the user, "
                    f"then call it again with the same arguments, {CONFIRM_ARG}=true and the "
                    f"{TOKEN_ARG} the preview returned."
                ),
            )
        result = self.env.call(tool, args)
        if result.ok:
            del self.pending[token]
        return result


__all__ = ["CONFIRMATION_REQUIRED", "ConfirmationGate"]
