"""JSON from text we did not write (a model's answer, a tool call's arguments).

``json.loads`` reports most bad text as ``ValueError`` (``JSONDecodeError``, or an integer
literal longer than Python's digit limit), but deep nesting as ``RecursionError``, which callers
catching ``ValueError`` miss: one ``[[[[...`` from a model then crashes the component. These
wrappers turn every failure into ``ValueError`` with a reason.
"""

from __future__ import annotations

import json
from typing import Any

_DECODER = json.JSONDecoder()


def loads_untrusted(text: str | bytes) -> Any:
    """``json.loads(text)``, raising only ``ValueError`` (deep nesting included).

    Raises:
        ValueError: The text is not JSON, or is nested too deeply to decode.
    """
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("the JSON is nested too deeply") from None


def raw_decode_untrusted(text: str, index: int = 0) -> tuple[Any, int]:
    """``JSONDecoder().raw_decode(text, index)``, raising only ``ValueError``.

    Raises:
        ValueError: No JSON value starts at ``index``, or it is nested too deeply.
    """
    try:
        return _DECODER.raw_decode(text, index)
    except RecursionError:
        raise ValueError("the JSON is nested too deeply") from None


def repair_untrusted(text: str) -> Any:
    """``json_repair.repair_json(text, return_objects=True)``, or None when even the repair
    fails (it recurses on nesting, as ``json`` does)."""
    import json_repair  # only the simulated-environment modules need it

    try:
        return json_repair.repair_json(text, return_objects=True)
    except (RecursionError, ValueError):
        return None
