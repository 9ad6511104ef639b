"""Schema-perturbation augmentation: the same trajectory against renamed, reordered tools.

SimAgent's robustness claim is that an agent trained on one schema should not depend on its
surface. A variant of a trajectory renames every tool and every parameter consistently (one
name map for the whole trajectory), reorders the tools and each tool's parameters, and injects
observation noise that changes no fact:

- tool names are renamed in the tool schemas, in the calls, and as whole words in every text
  (system prompt, user and assistant turns, observations, tool descriptions);
- parameter names are renamed in the schemas (``properties`` and ``required``), as the calls'
  argument keys, as keys in observations (a written row's columns are the write's
  parameters) and as whole words inside their ``error`` objects (errors name their
  arguments); data values are never changed;
- noise: the keys of observation objects are shuffled and each observation object gains a
  distractor field (``request_id``) whose value is random.

Variants are seeded and deterministic: the same trajectory, seed and variant number give the
same bytes; every variant passes the checker against its own renamed catalogue.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from typing import Any

from veritask._util import loads_untrusted, sha256_text
from veritask.agent import wire_messages
from veritask.rollout import function_of, parameter_names, rename_map, rename_payload, word_replacer
from veritask.task import Trajectory

NOISE_KEY = "request_id"
"""The distractor field injected into observation objects."""


class SchemaVariant:
    """One variant's maps and random source, applied to a trajectory's parts."""

    def __init__(self, tools: Sequence[Mapping[str, Any]], rng: random.Random) -> None:
        self.rng = rng
        functions = [function_of(t) for t in tools]
        self.tools = rename_map([str(f.get("name")) for f in functions], rng, verbs=True)
        self.params = rename_map(parameter_names(tools), rng, verbs=False)
        self.tool_text = word_replacer(self.tools)
        self.all_text = word_replacer({**self.tools, **self.params})

    def schemas(self, tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The tool schemas renamed, their parameters and the tools shuffled."""
        out = [self._schema(function_of(t)) for t in tools]
        self.rng.shuffle(out)
        return [{"type": "function", "function": f} for f in out]

    def _schema(self, fn: Mapping[str, Any]) -> dict[str, Any]:
        params = dict(fn.get("parameters") or {})
        props = list((params.get("properties") or {}).items())
        self.rng.shuffle(props)
        params["properties"] = {self.params.get(k, k): v for k, v in props}
        if "required" in params:
            params["required"] = [self.params.get(k, k) for k in params["required"]]
        name = str(fn.get("name"))
        description = self.tool_text(str(fn.get("description") or ""))
        return {
            **fn,
            "name": self.tools.get(name, name),
            "description": description,
            "parameters": params,
        }

    def arguments(self, raw: Any) -> Any:
        """A call's arguments with renamed keys in a shuffled order (malformed text kept)."""
        args = raw
        if isinstance(raw, str):
            try:
                args = loads_untrusted(raw)
            except ValueError:
                return raw
        if not isinstance(args, dict):
            return raw
        items = list(args.items())
        self.rng.shuffle(items)
        renamed = {self.params.get(k, k): v for k, v in items}
        return json.dumps(renamed, ensure_ascii=False) if isinstance(raw, str) else renamed

    def observation(self, text: str) -> str:
        """An observation renamed, its object keys shuffled and a distractor field added."""
        try:
            payload = loads_untrusted(text)
        except ValueError:
            return self.tool_text(text)
        noisy = self._noise(self._rename(payload))
        return json.dumps(noisy, ensure_ascii=False, default=str)

    def _rename(self, value: Any) -> Any:
        return rename_payload(value, self.params, self.tool_text, self.all_text)

    def _noise(self, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        items = list(value.items())
        self.rng.shuffle(items)
        if NOISE_KEY not in value:
            items.insert(self.rng.randrange(len(items) + 1), (NOISE_KEY, self._token()))
        return dict(items)

    def _token(self) -> str:
        return f"{self.rng.getrandbits(48):012x}"

    def message(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """One chat message with tools and parameters renamed (and noise on observations)."""
        out = dict(message)
        content = message.get("content")
        if message.get("role") == "tool" and isinstance(content, str):
            out["content"] = self.observation(content)
        elif isinstance(content, str):
            out["content"] = self.tool_text(content)
        if message.get("tool_calls"):
            out["tool_calls"] = [self._call(c) for c in message["tool_calls"]]
        return out

    def _call(self, call: Mapping[str, Any]) -> dict[str, Any]:
        fn = dict(call.get("function") or {})
        name = str(fn.get("name") or "")
        fn["name"] = self.tools.get(name, name)
        fn["arguments"] = self.arguments(fn.get("arguments"))
        return {**call, "function": fn}


def variant_rng(traj: Trajectory, seed: int, variant: int) -> random.Random:
    """The random source of one variant (stable across runs and machines)."""
    key = f"{seed}:{traj.task_id}:{traj.trial}:{traj.seed}:{variant}"
    return random.Random(int(sha256_text(key)[:16], 16))


def perturb_trajectory(traj: Trajectory, seed: int, variant: int) -> Trajectory:
    """One schema-perturbed variant of a trajectory (see the module docstring).

    Args:
        traj: The trajectory (its ``tools`` are the schemas to rename).
        seed: The augmentation seed.
        variant: Which variant (0, 1, ...): each gets its own renaming.

    Returns:
        A copy with renamed, reordered tools and parameters and noisy observations; its
        ``task_id`` gains ``~v<variant>``. Steps are dropped (they describe the original call
        names); distances and reward are kept.
    """
    change = SchemaVariant(traj.tools, variant_rng(traj, seed, variant))
    tools = change.schemas(traj.tools)
    messages = [change.message(m) for m in wire_messages(traj.messages)]
    return traj.model_copy(
        update={
            "task_id": f"{traj.task_id}~v{variant}",
            "tools": tools,
            "messages": messages,
            "steps": [],
        }
    )


def schema_variants(trajs: Sequence[Trajectory], k: int, seed: int = 0) -> list[Trajectory]:
    """Each trajectory followed by its ``k`` schema-perturbed variants."""
    out: list[Trajectory] = []
    for traj in trajs:
        out.append(traj)
        out.extend(perturb_trajectory(traj, seed, v) for v in range(k))
    return out
