"""A typed client for the veritask OpenEnv server, on OpenEnv's own ``EnvClient`` (WebSocket).

```py
async with VeritaskOpenEnvClient(base_url="http://127.0.0.1:8000") as env:
    first = await env.reset(task_id="travel-s0-000001")
    out = await env.step(VeritaskAction(type="call_tool", tool_name="query_users",
                                        arguments={"user_level": "VP"}))
    state = await env.state()
```

OpenEnv's generic ``MCPToolClient`` plays the same server (``list_tools()``, ``call_tool()``);
this client adds the typed observations and state.
"""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.types import Observation

from veritask.serve.openenv_app import (
    VeritaskAction,
    VeritaskCallObservation,
    VeritaskObservation,
    VeritaskState,
    VeritaskToolsObservation,
)

__all__ = ["VeritaskAction", "VeritaskOpenEnvClient", "parse_observation"]


def parse_observation(payload: dict[str, Any]) -> Observation:
    """The typed observation of a step or reset answer (``{observation, reward, done}``): a
    tools listing, a tool call's result, or a reset / reply observation."""
    reward, done = payload.get("reward"), bool(payload.get("done", False))
    fields = {**payload.get("observation", {}), "reward": reward, "done": done}
    if "tools" in fields:
        return VeritaskToolsObservation.model_validate(fields)
    if "tool_name" in fields:
        return VeritaskCallObservation.model_validate(fields)
    return VeritaskObservation.model_validate(fields)


class VeritaskOpenEnvClient(EnvClient[VeritaskAction, Observation, VeritaskState]):  # type: ignore[misc]
    """OpenEnv client of :class:`~veritask.serve.openenv_app.VeritaskOpenEnv` sessions."""

    def _step_payload(self, action: VeritaskAction) -> dict[str, Any]:
        payload: dict[str, Any] = action.model_dump(exclude={"metadata"})
        return payload

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[Observation]:
        observation = parse_observation(payload)
        return StepResult(observation=observation, reward=observation.reward, done=observation.done)

    def _parse_state(self, payload: dict[str, Any]) -> VeritaskState:
        state: VeritaskState = VeritaskState.model_validate(payload)
        return state
