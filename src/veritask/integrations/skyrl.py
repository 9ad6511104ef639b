"""SkyRL integration: a ``BaseTextEnv`` over veritask tasks, its registration and dataset rows.

SkyRL's generator hands a text environment the decoded completion of each turn, so tool calls
are parsed from the text (hermes or Qwen3 XML, see :mod:`veritask.integrations.toolparse`).
The interface, as read in ``skyrl_gym/envs/base_text_env.py``: the environment is built as
``Env(env_config, extras)`` (``extras`` are the dataset row's fields), ``init(prompt)`` returns
the prompt and metadata, and ``step(action)`` returns ``{"observations", "reward", "done",
"metadata"}``. The class subclasses SkyRL's ``BaseTextEnv`` when ``skyrl_gym`` is importable.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from veritask.integrations._session import VeritaskEnv, opening_prompts
from veritask.integrations.toolparse import ToolFormat, parse_tool_calls, strip_tool_calls

__all__ = ["ENV_CLASS", "VeritaskTextEnv", "register", "skyrl_rows"]

ENV_CLASS = "veritask"
"""The ``env_class`` of veritask's dataset rows and registration."""

try:
    from skyrl_gym.envs.base_text_env import BaseTextEnv as _Base
except ImportError:  # pragma: no cover - exercised where skyrl_gym is installed
    _Base = object


def _setting(name: str, env_config: Any, extras: dict[str, Any], default: Any = None) -> Any:
    extra = extras.get("extra_info")
    sources: list[dict[str, Any]] = [extras, extra] if isinstance(extra, dict) else [extras]
    for source in sources:
        if source.get(name) is not None:
            return source[name]
    getter = getattr(env_config, "get", None)
    return getter(name, default) if getter is not None else default


class VeritaskTextEnv(_Base):  # type: ignore[misc]
    """One veritask episode behind SkyRL's text-environment interface."""

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None) -> None:
        extras = dict(extras or {})
        if _Base is not object:
            super().__init__()
        self.episode = VeritaskEnv(str(_setting("dataset_dir", env_config, extras)))
        self.task_id = str(_setting("task_id", env_config, extras))
        self.tool_format: ToolFormat = _setting("tool_format", env_config, extras, "auto")
        self.max_turns = int(_setting("max_turns", env_config, extras, 30))
        self.turns = 0

    def init(self, prompt: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Start the row's task; the prompt is kept (rows from :func:`skyrl_rows` hold the
        policy and the user's opening)."""
        self.episode.reset(self.task_id)
        return prompt, {"task_id": self.task_id, "tools": self.episode.tools}

    def step(self, action: str) -> dict[str, Any]:
        """Run the tool calls written in ``action`` (their results come back as one user turn
        of ``<tool_response>`` blocks), or pass its text to the scripted user."""
        self.turns += 1
        calls = parse_tool_calls(action, self.tool_format)
        message: dict[str, Any] = {"role": "assistant", "content": strip_tool_calls(action)}
        if calls:
            message["tool_calls"] = calls
        out = self.episode.step(message)
        done = out.done or self.turns >= self.max_turns
        observations = [] if done else [_observation(out.messages)]
        reward = float(self.episode.reward()["reward"]) if done else 0.0
        return {
            "observations": observations,
            "reward": reward,
            "done": done,
            "metadata": {"proximity": out.proximity},
        }

    def close(self) -> None:
        """Release the database."""
        self.episode.close()


def _observation(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Tool results as one user message of ``<tool_response>`` blocks (what hermes and Qwen3
    chat templates render tool results as), or the scripted user's message."""
    if messages and messages[0]["role"] == "tool":
        blocks = [f"<tool_response>\n{m['content']}\n</tool_response>" for m in messages]
        return {"role": "user", "content": "\n".join(blocks)}
    return {"role": "user", "content": messages[0]["content"] if messages else ""}


def register(env_id: str = ENV_CLASS) -> None:
    """Register :class:`VeritaskTextEnv` with skyrl_gym under ``env_id`` (once: skyrl_gym
    refuses a second registration of an id, so a repeated call is a no-op)."""
    from skyrl_gym.envs import register as skyrl_register
    from skyrl_gym.envs.registration import registry

    if env_id in registry:
        return
    skyrl_register(id=env_id, entry_point="veritask.integrations.skyrl:VeritaskTextEnv")


def skyrl_rows(
    dataset_dir: str | Path, *, domain: str | None = None, tool_format: ToolFormat = "auto"
) -> list[dict[str, Any]]:
    """SkyRL dataset rows: ``prompt`` (policy with the tool schemas, user's opening),
    ``env_class``, and the episode's settings in ``extra_info``."""
    rows = []
    env = VeritaskEnv(str(dataset_dir))
    for pkg, prompt in opening_prompts(dataset_dir, domain):
        env.reset(pkg.id)
        tools = "\n".join(json.dumps(t["function"]) for t in env.tools)
        system = f"{prompt[0]['content']}\n\n# Tools\n<tools>\n{tools}\n</tools>"
        rows.append(
            {
                "data_source": "veritask",
                "prompt": [{"role": "system", "content": system}, prompt[1]],
                "env_class": ENV_CLASS,
                "extra_info": {
                    "task_id": pkg.id,
                    "dataset_dir": str(dataset_dir),
                    "tool_format": tool_format,
                },
            }
        )
    env.close()
    return rows
