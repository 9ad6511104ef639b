"""Validate tool arguments against a ToolSpec.

Hand-written rather than a JSON-schema library: this runs on every tool call (the RL hot path),
must return one structured error code per failure kind, and the schemas it checks are flat
objects of scalars, so a loop over the declared parameters is both faster and clearer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from veritask.env._result import ToolError
from veritask.policy import DomainSpec, Param, ToolSpec


def _type_ok(param: Param, value: Any) -> tuple[bool, Any]:
    jt = param.json_type
    if jt == "string":
        return isinstance(value, str), value
    if jt == "boolean":
        return isinstance(value, bool), value
    if isinstance(value, bool):
        return False, value
    if jt == "integer":
        if isinstance(value, int):
            return True, value
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return True, int(value)
        return False, value
    if isinstance(value, int | float) and math.isfinite(value):
        return True, value
    return False, value


def _check_value(tool: ToolSpec, param: Param, value: Any) -> tuple[Any, ToolError | None]:
    ok, value = _type_ok(param, value)
    if not ok:
        return value, ToolError(
            "INVALID_TYPE",
            f"{tool.name}: argument {param.name!r} must be of type {param.json_type}, got {type(value).__name__}",
            hint=param.description,
        )
    if param.enum is not None and value not in param.enum:
        allowed = ", ".join(map(str, param.enum))
        return value, ToolError(
            "INVALID_VALUE",
            f"{tool.name}: argument {param.name!r} must be one of: {allowed}",
            hint=param.description,
        )
    if (param.minimum is not None and value < param.minimum) or (
        param.maximum is not None and value > param.maximum
    ):
        return value, ToolError(
            "INVALID_VALUE",
            f"{tool.name}: argument {param.name!r} must be between {param.minimum} and {param.maximum}",
        )
    return value, None


def _unknown(tool: ToolSpec, name: str, spec: DomainSpec) -> ToolError:
    if tool.writes:
        table = spec.table(tool.table)
        if name in table.column_names:
            col = table.column(name)
            if col.computed:
                return ToolError(
                    "SYSTEM_CONTROL",
                    f"{tool.name}: {name!r} is computed by the system and cannot be set",
                    hint="Leave it out; the system sets it.",
                )
            return ToolError(
                "NOT_WRITABLE",
                f"{tool.name}: {name!r} cannot be set by this tool",
                hint=f"Writable arguments: {', '.join(tool.params)}",
            )
    return ToolError(
        "UNKNOWN_ARGUMENT",
        f"{tool.name}: unknown argument {name!r}",
        hint=f"Allowed arguments: {', '.join(tool.params)}",
    )


def parse_arguments(tool: ToolSpec, raw: Any) -> tuple[dict[str, Any] | None, ToolError | None]:
    """Decode arguments given as a mapping or a JSON object string."""
    if raw is None:
        return {}, None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            return None, ToolError(
                "INVALID_ARGUMENTS", f"{tool.name}: arguments are not valid JSON: {exc}"
            )
    if not isinstance(raw, Mapping):
        return None, ToolError("INVALID_ARGUMENTS", f"{tool.name}: arguments must be a JSON object")
    return dict(raw), None


def validate_arguments(
    tool: ToolSpec, raw: Any, spec: DomainSpec
) -> tuple[dict[str, Any], ToolError | None]:
    """Check arguments against the tool's parameters; return the cleaned values or an error."""
    args, err = parse_arguments(tool, raw)
    if err is not None or args is None:
        return {}, err
    clean: dict[str, Any] = {}
    for name, value in args.items():
        param = tool.params.get(name)
        if param is None:
            return {}, _unknown(tool, name, spec)
        if value is None:
            if param.required:
                return {}, ToolError(
                    "MISSING_ARGUMENT", f"{tool.name}: argument {name!r} is required"
                )
            continue
        value, err = _check_value(tool, param, value)
        if err is not None:
            return {}, err
        clean[name] = value
    for name, param in tool.params.items():
        if param.required and name not in clean:
            return {}, ToolError(
                "MISSING_ARGUMENT",
                f"{tool.name}: argument {name!r} is required",
                hint=param.description,
            )
    return clean, None
