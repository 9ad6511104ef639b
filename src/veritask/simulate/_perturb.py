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
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from veritask._util import loads_untrusted, sha256_text
from veritask.agent import wire_messages
from veritask.task import Trajectory

NOISE_KEY = "request_id"
"""The distractor field injected into observation objects."""

_VERBS = {
    "query": ("search", "find", "list", "lookup"),
    "get": ("fetch", "retrieve", "read"),
    "insert": ("create", "add", "new"),
    "update": ("modify", "edit", "change"),
    "delete": ("remove", "drop", "cancel"),
}
_STYLES = ("snake", "camel", "pascal")


def _words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]


def _styled(words: Sequence[str], style: str) -> str:
    if style == "camel":
        return words[0] + "".join(w.capitalize() for w in words[1:])
    if style == "pascal":
        return "".join(w.capitalize() for w in words)
    return "_".join(words)


def _unique(new: str, taken: set[str]) -> str:
    candidate, number = new, 2
    while candidate in taken:
        candidate, number = f"{new}{number}", number + 1
    taken.add(candidate)
    return candidate


def rename_map(names: Sequence[str], rng: random.Random, *, verbs: bool) -> dict[str, str]:
    """A one-to-one renaming of ``names``: a new style, synonyms for leading verbs (tools) or
    a prefix (parameters); never a name equal to the original."""
    style = rng.choice(_STYLES)
    prefix = rng.choice(("p", "arg", "in", "the"))
    taken: set[str] = set()
    out: dict[str, str] = {}
    for name in names:
        words = _words(name) or ["x"]
        if verbs and words[0] in _VERBS:
            words = [rng.choice(_VERBS[words[0]]), *words[1:]]
        elif not verbs:
            words = [prefix, *words]
        new = _styled(words, style)
        if new == name:
            new = _styled(["v", *words], style)
        out[name] = _unique(new, taken)
    return out


def _word_pattern(names: Mapping[str, str]) -> re.Pattern[str] | None:
    if not names:
        return None
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z0-9_])({alternatives})(?![A-Za-z0-9_])")


def _replacer(names: Mapping[str, str]) -> Callable[[str], str]:
    pattern = _word_pattern(names)
    if pattern is None:
        return lambda text: text
    return lambda text: pattern.sub(lambda m: names[m.group(1)], text)


class SchemaVariant:
    """One variant's maps and random source, applied to a trajectory's parts."""

    def __init__(self, tools: Sequence[Mapping[str, Any]], rng: random.Random) -> None:
        self.rng = rng
        functions = [_function(t) for t in tools]
        self.tools = rename_map([str(f.get("name")) for f in functions], rng, verbs=True)
        params = sorted(
            {str(p) for f in functions for p in (f.get("parameters") or {}).get("properties", {})}
        )
        self.params = rename_map(params, rng, verbs=False)
        self.tool_text = _replacer(self.tools)
        self.all_text = _replacer({**self.tools, **self.params})

    def schemas(self, tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The tool schemas renamed, their parameters and the tools shuffled."""
        out = [self._schema(_function(t)) for t in tools]
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

    def _rename(self, value: Any, in_error: bool = False) -> Any:
        """Keys renamed everywhere; in text, tool names everywhere and parameter names only
        inside an ``error`` object (data values are never touched)."""
        if isinstance(value, dict):
            return {
                self.params.get(k, k): self._rename(v, in_error or k == "error")
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self._rename(v, in_error) for v in value]
        if not isinstance(value, str):
            return value
        return self.all_text(value) if in_error else self.tool_text(value)

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


def _function(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    fn = tool.get("function") if tool.get("type") == "function" else tool
    return fn if isinstance(fn, Mapping) else {}


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
