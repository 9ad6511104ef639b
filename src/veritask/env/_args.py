"""Validate tool arguments against a ToolSpec.

Hand-written rather than a JSON-schema library: this runs on every tool call (the RL hot path),
must return one structured error code per failure kind, and the schemas it checks are flat
objects of scalars, so a loop over the declared parameters is both faster and clearer.

Every value that reaches SQLite has been checked to be storable: integers within SQLite's signed
64-bit range, finite floats, strings that encode as UTF-8 (no lone surrogates) and of bounded
length. Binding anything else makes ``sqlite3`` raise instead of the policy rejecting the call.
"""

from __future__ import annotations

import json
import math
from collections.abc import Container, Mapping
from typing import Any

from veritask.env._result import ToolError
from veritask.policy import DomainSpec, Param, ToolSpec

SQLITE_INT_MIN = -(2**63)
"""Smallest integer SQLite stores (signed 64-bit)."""
SQLITE_INT_MAX = 2**63 - 1
"""Largest integer SQLite stores (signed 64-bit)."""
MAX_ARGUMENTS_CHARS = 1_000_000
"""Longest arguments JSON text accepted, in characters."""
MAX_STRING_CHARS = 65_536
"""Longest string argument accepted, in characters."""

_NUMERIC = frozenset({"integer", "number"})
_NAME_SHOWN = 64  # characters of an offending argument name quoted in a message


def _shown(name: object) -> str:
    """A short, printable quotation of an argument name for an error message."""
    return repr(name[:_NAME_SHOWN]) if isinstance(name, str) else f"<{type(name).__name__}>"


def _type_ok(param: Param, value: Any) -> bool:
    """Whether ``value`` has a Python type that can carry the parameter's JSON type."""
    jt = param.json_type
    if jt == "string":
        return isinstance(value, str)
    if jt == "boolean":
        return isinstance(value, bool)
    if jt == "array":
        return isinstance(value, list) and all(_item_ok(param.items, v) for v in value)
    if jt == "object":
        return isinstance(value, dict)
    return isinstance(value, int | float) and not isinstance(value, bool)


def _item_ok(json_type: str | None, value: Any) -> bool:
    """Whether an array element has the declared element type (any JSON value when unset)."""
    if json_type is None:
        return True
    return _type_ok(Param("item", json_type, "value"), value)


def _type_error(tool: ToolSpec, param: Param, value: Any) -> ToolError:
    return ToolError(
        "INVALID_TYPE",
        f"{tool.name}: argument {param.name!r} must be of type {param.json_type}, got {type(value).__name__}",
        hint=param.description,
    )


def _number(tool: ToolSpec, param: Param, value: int | float) -> tuple[Any, ToolError | None]:
    """Check that a number is finite, integral where required and within SQLite's range."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return value, ToolError(
                "NON_FINITE_NUMBER",
                f"{tool.name}: argument {param.name!r} must be a finite number, got {value}",
                hint=param.description,
            )
        if param.json_type == "integer":
            if not value.is_integer():
                return value, _type_error(tool, param, value)
            value = int(value)
    if isinstance(value, int) and not SQLITE_INT_MIN <= value <= SQLITE_INT_MAX:
        return value, ToolError(
            "INTEGER_OUT_OF_RANGE",
            f"{tool.name}: argument {param.name!r} is outside the 64-bit integer range "
            f"[{SQLITE_INT_MIN}, {SQLITE_INT_MAX}]",
            hint=param.description,
        )
    return value, None


def _text(tool: ToolSpec, param: Param, value: str) -> ToolError | None:
    """Check that a string is of bounded length and valid Unicode (encodes as UTF-8)."""
    if len(value) > MAX_STRING_CHARS:
        return ToolError(
            "ARGUMENTS_TOO_LARGE",
            f"{tool.name}: argument {param.name!r} is longer than {MAX_STRING_CHARS} characters",
            hint=param.description,
        )
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return ToolError(
                "INVALID_STRING",
                f"{tool.name}: argument {param.name!r} is not valid Unicode text "
                f"(unpaired surrogate at position {exc.start})",
                hint="Send text that encodes as UTF-8.",
            )
    return None


def _storable(tool: ToolSpec, param: Param, value: Any) -> tuple[Any, ToolError | None]:
    """The value as it will be bound, or the error that stops it from reaching SQLite."""
    cls, jt = type(value), param.json_type
    # fast paths for what agents send almost always: ASCII strings and 64-bit integers
    if cls is str and jt == "string" and len(value) <= MAX_STRING_CHARS and value.isascii():
        return value, None
    if cls is int and jt in _NUMERIC and SQLITE_INT_MIN <= value <= SQLITE_INT_MAX:
        return value, None
    if not _type_ok(param, value):
        return value, _type_error(tool, param, value)
    if isinstance(value, str):
        return value, _text(tool, param, value)
    if isinstance(value, bool | list | dict):
        return value, None
    return _number(tool, param, value)


def _check_value(tool: ToolSpec, param: Param, value: Any) -> tuple[Any, ToolError | None]:
    value, err = _storable(tool, param, value)
    if err is not None:
        return value, err
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


def _unknown(tool: ToolSpec, name: object, spec: DomainSpec) -> ToolError:
    if tool.writes and tool.kind != "procedure" and isinstance(name, str):
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
        f"{tool.name}: unknown argument {_shown(name)}",
        hint=f"Allowed arguments: {', '.join(tool.params)}",
    )


def _decode(tool: ToolSpec, text: str) -> tuple[Any, ToolError | None]:
    """Parse a JSON arguments string, bounding its size and nesting."""
    if len(text) > MAX_ARGUMENTS_CHARS:
        return None, ToolError(
            "ARGUMENTS_TOO_LARGE",
            f"{tool.name}: arguments are longer than {MAX_ARGUMENTS_CHARS} characters",
        )
    try:
        return (json.loads(text) if text.strip() else {}), None
    except RecursionError:
        return None, ToolError(
            "ARGUMENTS_TOO_DEEP",
            f"{tool.name}: arguments are nested too deeply",
            hint="Arguments are a flat JSON object of scalars.",
        )
    except ValueError as exc:  # JSONDecodeError, or an integer literal with too many digits
        return None, ToolError(
            "INVALID_ARGUMENTS", f"{tool.name}: arguments are not valid JSON: {exc}"
        )


def parse_arguments(tool: ToolSpec, raw: Any) -> tuple[dict[str, Any] | None, ToolError | None]:
    """Decode arguments given as a mapping or a JSON object string."""
    if raw is None:
        return {}, None
    if isinstance(raw, str):
        raw, err = _decode(tool, raw)
        if err is not None:
            return None, err
    if not isinstance(raw, Mapping):
        return None, ToolError("INVALID_ARGUMENTS", f"{tool.name}: arguments must be a JSON object")
    return dict(raw), None


def plain_params(tool: ToolSpec) -> dict[str, type]:
    """The parameters checked by type alone (no enum, no bounds): name -> ``str`` or ``int``.

    A value of exactly that type (an ASCII string of bounded length, a 64-bit integer) needs no
    other check, so ``validate_arguments`` takes it without the general checks' calls.
    """
    out: dict[str, type] = {}
    for name, p in tool.params.items():
        if p.enum is None and p.minimum is None and p.maximum is None:
            if p.json_type == "string":
                out[name] = str
            elif p.json_type in _NUMERIC:
                out[name] = int
    return out


def validate_arguments(
    tool: ToolSpec, raw: Any, spec: DomainSpec, plain: Mapping[str, type] | None = None
) -> tuple[dict[str, Any], ToolError | None]:
    """Check arguments against the tool's parameters; return the cleaned values or an error.

    ``plain`` is ``plain_params(tool)``, computed once per tool by callers on the hot path.
    """
    if type(raw) is dict:
        args: dict[Any, Any] = raw
    else:
        parsed, err = parse_arguments(tool, raw)
        if err is not None or parsed is None:
            return {}, err
        args = parsed
    if plain is None:
        plain = plain_params(tool)
    clean: dict[str, Any] = {}
    params = tool.params
    for name, value in args.items():
        kind = type(value)
        if kind is plain.get(name) and (  # the common case, without the general checks' calls
            (kind is str and len(value) <= MAX_STRING_CHARS and value.isascii())
            or (kind is int and SQLITE_INT_MIN <= value <= SQLITE_INT_MAX)
        ):
            clean[name] = value
            continue
        param = params.get(name) if isinstance(name, str) else None
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
    for name in tool.required:
        if name not in clean:
            return {}, ToolError(
                "MISSING_ARGUMENT",
                f"{tool.name}: argument {name!r} is required",
                hint=tool.params[name].description,
            )
    return clean, None


FastCheck = tuple[type, Container[Any] | None]
"""An argument's exact Python type and the values it may take (None: any storable value)."""

_FAST_KINDS = {"string": str, "integer": int, "number": int, "boolean": bool}


def _fast_check(param: Param) -> FastCheck | None:
    """The exact check for one parameter, or None when its values need the general path."""
    kind = _FAST_KINDS.get(param.json_type)
    if kind is None:
        return None
    if param.enum is not None:
        if param.minimum is not None or param.maximum is not None or kind is bool:
            return None
        strings = [v for v in param.enum if type(v) is str]
        integers = [v for v in param.enum if type(v) is int]
        if kind is str:
            return kind, frozenset(v for v in strings if len(v) <= MAX_STRING_CHARS and v.isascii())
        return kind, frozenset(v for v in integers if SQLITE_INT_MIN <= v <= SQLITE_INT_MAX)
    if kind is int:
        low, high = param.minimum, param.maximum
        if (low is not None and type(low) is not int) or (
            high is not None and type(high) is not int
        ):
            return None
        low = SQLITE_INT_MIN if low is None else max(low, SQLITE_INT_MIN)
        high = SQLITE_INT_MAX if high is None else min(high, SQLITE_INT_MAX)
        return kind, range(low, high + 1)
    if param.minimum is not None or param.maximum is not None:
        return None
    return kind, None


def fast_checks(tool: ToolSpec, names: tuple[Any, ...]) -> tuple[FastCheck, ...] | None:
    """Exact checks for arguments given under ``names`` (in that order), or None.

    A value passing its check (``compile_checks``) is one that ``validate_arguments`` accepts
    unchanged: its exact type, and membership in the enum or the bounds within SQLite's integer
    range, or an ASCII string of bounded length. None when a name is unknown, a required argument
    is missing, or a parameter needs the general checks (float bounds, enum with bounds).
    """
    checks: list[FastCheck] = []
    for name in names:
        param = tool.params.get(name) if type(name) is str else None
        check = _fast_check(param) if param is not None else None
        if check is None:
            return None
        checks.append(check)
    if not set(tool.required) <= set(names):
        return None
    return tuple(checks)
