"""Typed Python signatures for a domain's tools, shared by adapters whose frameworks read tool
schemas from function signatures and docstrings (TRL's ``get_json_schema``, the MCP SDK's
``add_tool``)."""

from __future__ import annotations

import inspect
import keyword
import re
from typing import Any, Literal, Optional

from veritask.policy._tools import Param, ToolSpec

_PY_TYPES: dict[str, type] = {"string": str, "integer": int, "number": float, "boolean": bool}
_SECTION = re.compile(r"\b(Args|Returns|Raises):")


def _annotation(param: Param) -> Any:
    base: Any = _PY_TYPES[param.json_type]
    if param.enum is not None:
        base = Literal[tuple(param.enum)]
    return base if param.required else Optional[base]  # noqa: UP045 - a runtime typing object


def _parameter(name: str, annotation: Any, required: bool) -> inspect.Parameter:
    """A keyword-only parameter named exactly like the tool's argument, even a Python keyword
    (``class``): frameworks call tools with keywords only and read the names."""
    default = inspect.Parameter.empty if required else None
    if name.isidentifier() and not keyword.iskeyword(name):
        return inspect.Parameter(
            name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
        )
    param = inspect.Parameter(
        "_arg", inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
    )
    object.__setattr__(param, "_name", name)
    return param


def tool_parameters(spec: ToolSpec) -> list[inspect.Parameter]:
    """One keyword-only parameter per argument of ``spec``, typed from its JSON schema
    (``Literal`` for enums, ``Optional`` with a ``None`` default for optional arguments)."""
    return [_parameter(n, _annotation(p), p.required) for n, p in spec.params.items()]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def tool_docstring(spec: ToolSpec) -> str:
    """A Google-style docstring for ``spec``: its description and an ``Args:`` section."""
    description = _SECTION.sub(lambda m: f"{m.group(1)} -", spec.description.strip())
    lines = [description or f"Call {spec.name}."]
    if spec.params:
        lines += ["", "Args:"]
        for name, param in spec.params.items():
            text = _SECTION.sub(lambda m: f"{m.group(1)} -", _one_line(param.description))
            lines.append(f"    {name}: {text or f'The {name} argument.'}")
    lines += ["", "Returns:", "    The tool's JSON result, or a JSON error explaining the refusal."]
    return "\n".join(lines)
