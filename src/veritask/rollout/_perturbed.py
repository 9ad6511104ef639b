"""Robustness evaluation: the same agent and tasks behind a perturbed tool surface.

A :class:`PerturbedAgent` stands between the episode loop and the agent under evaluation. The
agent sees a perturbed catalogue and perturbed tool results; its calls are mapped back to the
real names before the loop hands them to the environment. The environment, the recorded
conversation, the verifier and the certificate are the real ones, so the reward is computed
on the real state. Kinds (:data:`KINDS`):

- ``rename-tools``: tool names renamed (in the catalogue, in calls, as whole words in text);
- ``rename-args``: parameter names renamed (schemas, call arguments, result keys, and whole
  words inside ``error`` objects);
- ``reorder-fields``: the keys of every result object shuffled;
- ``extra-fields``: a distractor field (``request_id``) added to result objects and rows;
- ``noisy-observations``: the JSON layout of results varied and the prose of errors
  (``message``, ``hint``) re-cased and re-spaced; no value is touched;
- ``truncate-observations``: a list result longer than :data:`TRUNCATE_AT` rows shows only
  its first rows, with a marker and ``next_offset``; the real pagination (``offset``) fetches
  the rest.

A call to a name the perturbed catalogue does not list (a clean name under ``rename-tools``,
say) is sent as ``unlisted:NAME``, which the environment rejects as an unknown tool: the agent
cannot reach the real tool by ignoring the catalogue it was given.

Everything is seeded: an episode's maps come from the perturbation seed, the kind and the
episode's task, trial and seed; each observation's randomness from those and its position.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from veritask._util import loads_untrusted, sha256_text
from veritask.agent import PAYLOAD, Agent, Turn
from veritask.rollout._batch import BUILTIN_AGENTS, RoleFactory
from veritask.rollout._episode import EpisodeTask
from veritask.rollout._naming import (
    function_of,
    parameter_names,
    rename_map,
    rename_payload,
    word_replacer,
)

KINDS = (
    "rename-tools",
    "rename-args",
    "reorder-fields",
    "extra-fields",
    "noisy-observations",
    "truncate-observations",
)
"""The perturbation kinds, in report order."""
NOISE_KEY = "request_id"
"""The distractor field of ``extra-fields``."""
TRUNCATE_AT = 10
"""Rows a list result keeps under ``truncate-observations``."""
UNLISTED = "unlisted:"
"""Prefix of a called name the perturbed catalogue does not list."""


def parse_kinds(values: Sequence[str]) -> list[str]:
    """The kinds named by ``values`` (each a kind, ``all``, or a comma-separated list), in
    :data:`KINDS` order, each once.

    Raises:
        ValueError: An unknown kind (the message lists the known ones).
    """
    wanted: set[str] = set()
    for value in values:
        for name in (v.strip() for v in value.split(",")):
            if name == "all":
                wanted.update(KINDS)
            elif name in KINDS:
                wanted.add(name)
            else:
                raise ValueError(
                    f"unknown perturbation {name!r}: use all or one of {', '.join(KINDS)}"
                )
    return [k for k in KINDS if k in wanted]


def _rng(*parts: object) -> random.Random:
    return random.Random(int(sha256_text(":".join(map(str, parts)))[:16], 16))


class Surface:
    """One episode's perturbed tool surface: the catalogue, and both directions of the maps.

    Args:
        kind: One of :data:`KINDS`.
        tools: The real catalogue (OpenAI tool schemas).
        key: What seeds the episode (perturbation seed, task, trial, episode seed).
    """

    def __init__(self, kind: str, tools: Sequence[Mapping[str, Any]], key: str) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown perturbation {kind!r}")
        self.kind, self.key = kind, key
        rng = _rng(key, kind, "maps")
        names = [str(function_of(t).get("name")) for t in tools]
        self.tool_map = rename_map(names, rng, verbs=True) if kind == "rename-tools" else {}
        params = parameter_names(tools)
        self.param_map = rename_map(params, rng, verbs=False) if kind == "rename-args" else {}
        self.tool_back = {v: k for k, v in self.tool_map.items()}
        self.param_back = {v: k for k, v in self.param_map.items()}
        self.listed = {self.tool_map.get(n, n) for n in names}
        self.params_listed = {self.param_map.get(p, p) for p in params}
        self.tool_text = word_replacer(self.tool_map)
        self.all_text = word_replacer({**self.tool_map, **self.param_map})
        self.tools = [self._schema(function_of(t)) for t in tools]

    def _schema(self, fn: Mapping[str, Any]) -> dict[str, Any]:
        params = dict(fn.get("parameters") or {})
        params["properties"] = {
            self.param_map.get(k, k): v for k, v in (params.get("properties") or {}).items()
        }
        if "required" in params:
            params["required"] = [self.param_map.get(k, k) for k in params["required"]]
        name = str(fn.get("name"))
        schema = {
            **fn,
            "name": self.tool_map.get(name, name),
            "description": self.tool_text(str(fn.get("description") or "")),
            "parameters": params,
        }
        return {"type": "function", "function": schema}

    def structured(self) -> list[dict[str, Any]]:
        """The catalogue with each tool's structured part (``veritask``: its spec name and its
        parameters' spec names), for symbolic agents that think in the spec's names."""
        out = []
        for tool in self.tools:
            name = tool["function"]["name"]
            props = tool["function"]["parameters"].get("properties", {})
            part = {
                "name": self.tool_back.get(name, name),
                "params": {p: self.param_back.get(p, p) for p in props},
            }
            out.append({**tool, PAYLOAD: part})
        return out

    # -- calls -------------------------------------------------------------------------------

    def real_call(self, call: Mapping[str, Any]) -> dict[str, Any]:
        """An agent's call as the environment must run it."""
        fn = dict(call.get("function") or {})
        name = str(fn.get("name") or "")
        fn["name"] = self.tool_back.get(name, name) if name in self.listed else UNLISTED + name
        if self.param_map:
            fn["arguments"] = _map_args(fn.get("arguments"), self._real_param)
        return {**call, "function": fn}

    def _real_param(self, key: str) -> str:
        return self.param_back.get(key, key) if key in self.params_listed else UNLISTED + key

    def view_call(self, call: Mapping[str, Any]) -> dict[str, Any]:
        """A recorded call as the agent made it."""
        fn = dict(call.get("function") or {})
        name = str(fn.get("name") or "")
        fn["name"] = (
            name.removeprefix(UNLISTED)
            if name.startswith(UNLISTED)
            else (self.tool_map.get(name, name))
        )
        if self.param_map:
            fn["arguments"] = _map_args(fn.get("arguments"), self._view_param)
        return {**call, "function": fn}

    def _view_param(self, key: str) -> str:
        if key.startswith(UNLISTED):
            return key.removeprefix(UNLISTED)
        return self.param_map.get(key, key)

    # -- what the agent reads ------------------------------------------------------------------

    def view_text(self, text: str) -> str:
        """Free text (policy, user and assistant turns) with the renamed tools' new names."""
        return self.tool_text(text.replace(UNLISTED, ""))

    def observation(self, text: str, position: int) -> str:
        """A tool result as the agent reads it (``position``: its index in the conversation)."""
        text = text.replace(UNLISTED, "")
        try:
            payload = loads_untrusted(text)
        except ValueError:
            return self.tool_text(text)
        rng = _rng(self.key, self.kind, position)
        if self.kind in ("rename-tools", "rename-args"):
            payload = rename_payload(payload, self.param_map, self.tool_text, self.all_text)
        elif self.kind == "reorder-fields":
            payload = _shuffled(payload, rng)
        elif self.kind == "extra-fields":
            payload = _distracted(payload, rng)
        elif self.kind == "noisy-observations":
            return _noisy(payload, rng)
        elif self.kind == "truncate-observations":
            payload = _truncated(payload)
        return json.dumps(payload, ensure_ascii=False, default=str)


def _map_args(raw: Any, rename: Any) -> Any:
    """Call arguments with every key renamed (text stays text; malformed text is kept)."""
    args = raw
    if isinstance(raw, str):
        try:
            args = loads_untrusted(raw)
        except ValueError:
            return raw
    if not isinstance(args, dict):
        return raw
    renamed = {rename(str(k)): v for k, v in args.items()}
    return json.dumps(renamed, ensure_ascii=False) if isinstance(raw, str) else renamed


def _shuffled(value: Any, rng: random.Random) -> Any:
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    if not isinstance(value, dict):
        return value
    items = [(k, _shuffled(v, rng)) for k, v in value.items()]
    rng.shuffle(items)
    return dict(items)


def _with_noise_field(row: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    if NOISE_KEY in row:
        return row
    items = list(row.items())
    items.insert(rng.randrange(len(items) + 1), (NOISE_KEY, f"{rng.getrandbits(48):012x}"))
    return dict(items)


def _distracted(value: Any, rng: random.Random) -> Any:
    """A distractor field in the result object and in each of its rows; an error envelope
    keeps its one key (the field goes inside the error)."""
    if not isinstance(value, dict):
        return value
    if set(value) == {"error"} and isinstance(value["error"], dict):
        return {"error": _with_noise_field(value["error"], rng)}
    out = dict(value)
    if isinstance(out.get("rows"), list):
        out["rows"] = [_with_noise_field(r, rng) if isinstance(r, dict) else r for r in out["rows"]]
    return _with_noise_field(out, rng)


_PROSE = ("message", "hint")


def _noisy(payload: Any, rng: random.Random) -> str:
    """The payload in a random JSON layout, the prose of an error re-cased and re-spaced."""
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        error = dict(payload["error"])
        for key in _PROSE:
            if isinstance(error.get(key), str):
                error[key] = _noisy_prose(error[key], rng)
        payload = {**payload, "error": error}
    indent = rng.choice((None, 1, 2, 4))
    separators = rng.choice(((", ", ": "), (",", ":"), (" , ", " : ")))
    return json.dumps(
        payload, ensure_ascii=False, default=str, indent=indent, separators=separators
    )


def _noisy_prose(text: str, rng: random.Random) -> str:
    casing = rng.choice((str.upper, str.lower, str.capitalize))
    gap = rng.choice(("  ", " \t", "   "))
    return f"{gap}{gap.join(casing(text).split(' '))}{gap}"


def _truncated(payload: Any) -> Any:
    rows = payload.get("rows") if isinstance(payload, dict) else None
    if not isinstance(rows, list) or len(rows) <= TRUNCATE_AT:
        return payload
    offset = payload.get("offset") if isinstance(payload.get("offset"), int) else 0
    following = offset + TRUNCATE_AT
    return {
        **payload,
        "rows": rows[:TRUNCATE_AT],
        "truncated": f"{TRUNCATE_AT} of {len(rows)} rows shown; call again with "
        f"offset={following} for the rest",
        "next_offset": following,
    }


@dataclass
class PerturbedAgent:
    """An agent behind a perturbed tool surface (see the module docstring).

    Args:
        inner: The agent under evaluation.
        kind: The perturbation.
        key: The episode's seed text.
        structured: Give the agent each tool's structured part (symbolic agents read the
            schema they are given through it; models never see it).
    """

    inner: Agent
    kind: str
    key: str
    structured: bool = False
    name: str = ""
    _surface: Surface | None = None
    _seen: dict[int, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.name = f"{self.inner.name}~{self.kind}"

    async def respond(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        """The inner agent's turn on the perturbed view, its calls mapped to the real names."""
        if self._surface is None:
            self._surface = Surface(self.kind, tools, self.key)
        surface = self._surface
        view = [self._view(i, m, surface) for i, m in enumerate(messages)]
        catalogue = surface.structured() if self.structured else surface.tools
        turn = await self.inner.respond(view, catalogue)
        message = dict(turn.message)
        if message.get("tool_calls"):
            message["tool_calls"] = [surface.real_call(c) for c in message["tool_calls"]]
        return Turn(message, turn.usage)

    def _view(self, index: int, message: dict[str, Any], surface: Surface) -> dict[str, Any]:
        if index not in self._seen:
            self._seen[index] = _view_message(index, message, surface)
        return self._seen[index]


def _view_message(index: int, message: dict[str, Any], surface: Surface) -> dict[str, Any]:
    out = dict(message)
    content = message.get("content")
    if message.get("role") == "tool" and isinstance(content, str):
        out["content"] = surface.observation(content, index)
    elif isinstance(content, str):
        out["content"] = surface.view_text(content)
    if message.get("tool_calls"):
        out["tool_calls"] = [surface.view_call(c) for c in message["tool_calls"]]
    return out


@dataclass
class SchemaReader:
    """A symbolic agent that thinks in the spec's names, reading the catalogue it is given.

    It reads each tool's structured part (its spec name and its parameters' spec names),
    shows the inner agent the conversation in spec names, and turns its calls into the
    catalogue's names. Field order, distractor fields, layout and truncation reach the inner
    agent untouched.
    """

    inner: Agent
    name: str = ""

    def __post_init__(self) -> None:
        self.name = self.inner.name

    async def respond(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        """The inner agent's turn, read and written in the catalogue's names."""
        tool_back = {t["function"]["name"]: t[PAYLOAD]["name"] for t in tools if PAYLOAD in t}
        param_back = {
            view: spec
            for t in tools
            if PAYLOAD in t
            for view, spec in t[PAYLOAD]["params"].items()
            if view != spec
        }
        clean = Reading(tool_back, param_back)
        turn = await self.inner.respond([clean.message(m) for m in messages], tools)
        message = dict(turn.message)
        if message.get("tool_calls"):
            message["tool_calls"] = [clean.call(c) for c in message["tool_calls"]]
        return Turn(message, turn.usage)


@dataclass
class Reading:
    """The maps of :class:`SchemaReader` (catalogue name to spec name, both ways)."""

    tool_back: dict[str, str]
    param_back: dict[str, str]

    def message(self, message: dict[str, Any]) -> dict[str, Any]:
        """A tool result's keys in spec names (other messages as they are)."""
        content = message.get("content")
        if not self.param_back or message.get("role") != "tool" or not isinstance(content, str):
            return message
        try:
            payload = loads_untrusted(content)
        except ValueError:
            return message
        spec = rename_payload(payload, self.param_back, str, str)
        return {**message, "content": json.dumps(spec, ensure_ascii=False, default=str)}

    def call(self, call: Mapping[str, Any]) -> dict[str, Any]:
        """A call in spec names turned into the catalogue's names."""
        tools = {v: k for k, v in self.tool_back.items()}
        params = {v: k for k, v in self.param_back.items()}
        fn = dict(call.get("function") or {})
        name = str(fn.get("name") or "")
        fn["name"] = tools.get(name, name)
        fn["arguments"] = _map_args(fn.get("arguments"), lambda k: params.get(k, k))
        return {**call, "function": fn}


def perturbed_agent(agent: Agent, kind: str, key: str, *, symbolic: bool = False) -> PerturbedAgent:
    """``agent`` behind the ``kind`` perturbation; a ``symbolic`` agent (one that knows the
    domain by the spec's names) reads the catalogue through a :class:`SchemaReader`."""
    inner: Agent = SchemaReader(agent) if symbolic else agent
    return PerturbedAgent(inner, kind, key, structured=symbolic)


@dataclass
class PerturbedRoles(RoleFactory):
    """A :class:`RoleFactory` whose agents play behind one perturbation (``perturbation``),
    seeded by ``perturb_seed``."""

    perturbation: str = "rename-tools"
    perturb_seed: int = 0

    def _agent(self, task: EpisodeTask, trial: int, seed: int) -> Agent:
        agent = super()._agent(task, trial, seed)
        key = f"{self.perturb_seed}:{task.package.id}:{trial}:{seed}"
        return perturbed_agent(agent, self.perturbation, key, symbolic=self.agent in BUILTIN_AGENTS)
