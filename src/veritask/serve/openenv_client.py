"""A client for the veritask OpenEnv server, on OpenEnv's own ``EnvClient`` (WebSocket).

```py
async with VeritaskOpenEnvClient(base_url="http://127.0.0.1:8000") as env:
    first = await env.reset(task_id="travel-s0-000001")
    out = await env.step(VeritaskAction(kind="call_tool", tool_name="query_users",
                                        arguments={"user_level": "VP"}))
    state = await env.state()
```
"""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from veritask.serve.openenv_app import VeritaskAction, VeritaskObservation, VeritaskState

__all__ = ["VeritaskAction", "VeritaskOpenEnvClient"]


class VeritaskOpenEnvClient(EnvClient[VeritaskAction, VeritaskObservation, VeritaskState]):  # type: ignore[misc]
    """OpenEnv client of :class:`~veritask.serve.openenv_app.VeritaskOpenEnv` sessions."""

    def _step_payload(self, action: VeritaskAction) -> dict[str, Any]:
        payload: dict[str, Any] = action.model_dump(exclude={"metadata"})
        return payload

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[VeritaskObservation]:
        reward, done = payload.get("reward"), bool(payload.get("done", False))
        fields = {**payload.get("observation", {}), "reward": reward, "done": done}
        return StepResult(
            observation=VeritaskObservation.model_validate(fields), reward=reward, done=done
        )

    def _parse_state(self, payload: dict[str, Any]) -> VeritaskState:
        state: VeritaskState = VeritaskState.model_validate(payload)
        return state
