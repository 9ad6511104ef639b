"""Consistent renaming of a tool surface: new names for tools and parameters, and the text
replacers that carry them into descriptions, observations and errors.

Shared by the robustness evaluation (:mod:`veritask.rollout._perturbed`) and the SFT
augmentation of ``veritask.simulate`` (one floor up), so both rename the same way.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

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
    a prefix (parameters); never a name equal to the original.

    Args:
        names: The names to rename.
        rng: The random source (the map depends only on it and ``names``).
        verbs: Tools (a synonym for the leading verb) rather than parameters (a prefix).

    Returns:
        Original name to new name, one-to-one.
    """
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


def word_replacer(names: Mapping[str, str]) -> Callable[[str], str]:
    """A function replacing each key of ``names`` by its value where it stands as a whole word
    (identifier characters on neither side); the identity when ``names`` is empty."""
    if not names:
        return lambda text: text
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    pattern = re.compile(rf"(?<![A-Za-z0-9_])({alternatives})(?![A-Za-z0-9_])")
    return lambda text: pattern.sub(lambda m: names[m.group(1)], text)


def function_of(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    """The function part of an OpenAI tool schema (the schema itself when it is bare)."""
    fn = tool.get("function") if tool.get("type") == "function" else tool
    return fn if isinstance(fn, Mapping) else {}


def parameter_names(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every parameter name of the tools, sorted, each once."""
    names = {
        str(p)
        for t in tools
        for p in (function_of(t).get("parameters") or {}).get("properties", {})
    }
    return sorted(names)


def rename_payload(
    value: Any,
    params: Mapping[str, str],
    tool_text: Callable[[str], str],
    all_text: Callable[[str], str],
    in_error: bool = False,
) -> Any:
    """A JSON value with keys renamed by ``params`` everywhere; in text, ``tool_text`` applies
    everywhere and ``all_text`` only inside an ``error`` object (errors name their arguments;
    data values are never touched otherwise)."""
    if isinstance(value, dict):
        return {
            params.get(k, k): rename_payload(
                v, params, tool_text, all_text, in_error or k == "error"
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [rename_payload(v, params, tool_text, all_text, in_error) for v in value]
    if not isinstance(value, str):
        return value
    return all_text(value) if in_error else tool_text(value)
