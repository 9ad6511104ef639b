"""A strict schema checker for trajectories, with deterministic repair (no model).

Checked, in this order, on the turns of one trajectory:

1. ``repeated_turn``: a turn identical to the one before it (dropped).
2. ``think_placement``: ``<think>`` blocks are allowed only in assistant turns that call a tool
   (the paper's FUNCTION_CALL turns); a well-formed block elsewhere is removed, unbalanced tags
   are rejected.
3. ``role_order``: system first, then a user turn; every observation right after the call it
   answers. A system turn found later is moved to the front; an observation found just before
   its call is swapped back; any other order is rejected.
4. ``missing_observation``: every call is answered by exactly one observation (by id when the
   format has ids, else by position); a missing one is rejected (nothing deterministic can
   invent it).
5. Per call, against the tool catalogue: ``json_syntax`` (arguments that are not JSON are
   repaired with ``json-repair`` when the result is an object), ``unknown_tool`` (a name with
   exactly one close match is renamed), ``argument_key`` (an unknown key with exactly one close
   free parameter is renamed; case, separators and camelCase first, then ``difflib``),
   ``argument_type`` (lossless coercions only: ``"12"`` -> 12, ``3.0`` -> 3, ``"true"`` ->
   true, 7 -> ``"7"``), ``argument_value`` (an enum value in the wrong case is fixed; values
   outside an enum or bounds are rejected), ``required_field`` (rejected).

Every repair and every rejection is an :class:`Issue` naming its class, the turn and the reason.
A trajectory with no issue is returned untouched.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from veritask._util import loads_untrusted, repair_untrusted
from veritask.simulate._catalog import ToolCatalog, ToolDef, ToolParam
from veritask.simulate._formats import Call, Turn

ERROR_CLASSES = (
    "json_syntax",
    "unknown_tool",
    "argument_key",
    "argument_type",
    "argument_value",
    "required_field",
    "role_order",
    "missing_observation",
    "think_placement",
    "repeated_turn",
)
"""Every class of error the checker reports, in report order."""

RAW_KEY = "__raw__"
"""Key under which exports keep malformed arguments verbatim."""

Status = Literal["clean", "repaired", "rejected"]
_THINK_BLOCK = re.compile(r"<think>.*?</think>\s*", re.DOTALL)
_THINK_TAG = re.compile(r"</?think>")
_INT = re.compile(r"-?(0|[1-9][0-9]*)")
_ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True)
class Issue:
    """One error found: its class, the turn, what was wrong, and whether it was repaired."""

    cls: str
    turn: int
    detail: str
    repaired: bool

    def to_json(self) -> dict[str, Any]:
        """The issue as a JSON-ready dict."""
        return {
            "class": self.cls,
            "turn": self.turn,
            "detail": self.detail,
            "repaired": self.repaired,
        }


@dataclass(frozen=True)
class CheckOptions:
    """How strict the checker is.

    Attributes:
        tool_cutoff: Least ``difflib`` similarity for renaming an unknown tool.
        key_cutoff: Least similarity for renaming an unknown argument key.
        think_in_text: Also allow ``<think>`` in assistant turns that call no tool.
        user_first: The first turn after the system prompt must be the user's.
    """

    tool_cutoff: float = 0.8
    key_cutoff: float = 0.75
    think_in_text: bool = False
    user_first: bool = True


@dataclass
class CheckResult:
    """The checked turns (repaired where possible) and every issue found."""

    turns: list[Turn]
    issues: list[Issue] = field(default_factory=list)

    @property
    def status(self) -> Status:
        """``clean`` (nothing found), ``repaired`` (all repaired) or ``rejected``."""
        if not self.issues:
            return "clean"
        return "repaired" if all(i.repaired for i in self.issues) else "rejected"

    @property
    def reasons(self) -> list[str]:
        """Why the trajectory is rejected (empty when it is not)."""
        return [f"{i.cls} (turn {i.turn}): {i.detail}" for i in self.issues if not i.repaired]


def normalized(name: str) -> str:
    """A name with case, separators and camelCase humps ignored."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def closest(name: str, candidates: list[str], cutoff: float) -> str | None:
    """The one candidate ``name`` is a variant of, or None when there is none or several.

    Equal after :func:`normalized` wins; otherwise the best ``difflib`` match at or above
    ``cutoff``, when no other candidate scores as high.
    """
    same = [c for c in candidates if normalized(c) == normalized(name)]
    if len(same) == 1:
        return same[0]
    scored = sorted(
        ((difflib.SequenceMatcher(None, name, c).ratio(), c) for c in candidates), reverse=True
    )
    if not scored or scored[0][0] < cutoff:
        return None
    if len(scored) > 1 and scored[1][0] == scored[0][0]:
        return None
    return scored[0][1]


class _Checker:
    def __init__(self, turns: list[Turn], catalog: ToolCatalog, options: CheckOptions) -> None:
        self.turns = [t.copy() for t in turns]
        self.catalog = catalog
        self.options = options
        self.issues: list[Issue] = []

    def note(self, cls: str, turn: int, detail: str, repaired: bool) -> None:
        self.issues.append(Issue(cls, turn, detail, repaired))

    def run(self) -> CheckResult:
        self.repeated()
        self.think()
        self.order()
        self.pairing()
        for index, turn in enumerate(self.turns):
            for call in turn.calls:
                _CallChecker(self, index, call).run()
        return CheckResult(self.turns, self.issues)

    # -- structure -------------------------------------------------------------------------

    def repeated(self) -> None:
        kept: list[Turn] = []
        for index, turn in enumerate(self.turns):
            if kept and turn.role != "system" and turn.key() == kept[-1].key():
                self.note("repeated_turn", index, f"{turn.role} turn repeats the one before", True)
                continue
            kept.append(turn)
        self.turns = kept

    def _think_allowed(self, turn: Turn) -> bool:
        return turn.role == "assistant" and (bool(turn.calls) or self.options.think_in_text)

    def think(self) -> None:
        for index, turn in enumerate(self.turns):
            text = turn.text or ""
            if "<think>" not in text and "</think>" not in text:
                continue
            stripped = _THINK_BLOCK.sub("", text)
            if _THINK_TAG.search(stripped):
                self.note("think_placement", index, "unbalanced <think> tags", False)
            elif not self._think_allowed(turn):
                turn.text = stripped.strip() or (None if turn.role == "assistant" else "")
                self.note("think_placement", index, f"<think> in a {turn.role} turn removed", True)

    def order(self) -> None:
        self._system_first()
        index = 0
        while index < len(self.turns):
            turn = self.turns[index]
            if turn.role not in _ROLES:
                self.note("role_order", index, f"unknown role {turn.role!r}", False)
            elif turn.role == "tool" and not self._after_call(index) and not self._swap_back(index):
                self.note("role_order", index, "observation without a call before it", False)
            index += 1
        self._user_first()

    def _system_first(self) -> None:
        systems = [i for i, t in enumerate(self.turns) if t.role == "system"]
        if len(systems) == 1 and systems[0] > 0:
            turn = self.turns.pop(systems[0])
            self.turns.insert(0, turn)
            self.note("role_order", systems[0], "system turn moved to the front", True)
        elif len(systems) > 1:
            self.note("role_order", systems[1], "more than one system turn", False)

    def _user_first(self) -> None:
        rest = [t for t in self.turns if t.role != "system"]
        if self.options.user_first and rest and rest[0].role != "user":
            self.note("role_order", 0, f"the conversation opens with {rest[0].role}", False)

    def _after_call(self, index: int) -> bool:
        """True when the tool turn at ``index`` answers a call of the assistant turn before
        the run of tool turns it belongs to (by id, else by position)."""
        start = index
        while start > 0 and self.turns[start - 1].role == "tool":
            start -= 1
        if start == 0 or not self.turns[start - 1].calls:
            return False
        calls = self.turns[start - 1].calls
        obs = self.turns[index]
        if obs.call_id and all(c.call_id for c in calls):
            return obs.call_id in {c.call_id for c in calls}
        return index - start < len(calls)

    def _swap_back(self, index: int) -> bool:
        """Swap an observation with the call right after it that it answers."""
        if index + 1 >= len(self.turns):
            return False
        obs, nxt = self.turns[index], self.turns[index + 1]
        ids = [c.call_id for c in nxt.calls]
        answers = (obs.call_id and obs.call_id in ids) or (not obs.call_id and len(ids) == 1)
        if nxt.role != "assistant" or not answers:
            return False
        self.turns[index], self.turns[index + 1] = nxt, obs
        self.note("role_order", index, "observation came before its call; swapped back", True)
        return True

    def pairing(self) -> None:
        index = 0
        while index < len(self.turns):
            turn = self.turns[index]
            end = index + 1
            while end < len(self.turns) and self.turns[end].role == "tool":
                end += 1
            if turn.calls:
                self._answered(index, turn.calls, self.turns[index + 1 : end])
            index = max(end, index + 1)

    def _answered(self, index: int, calls: list[Call], results: list[Turn]) -> None:
        with_ids = all(c.call_id for c in calls) and all(r.call_id for r in results)
        if with_ids:
            answered = {r.call_id for r in results}
            missing = [c.name for c in calls if c.call_id not in answered]
        else:
            missing = [c.name for c in calls[len(results) :]]
        for name in missing:
            self.note("missing_observation", index, f"call {name!r} has no observation", False)


class _CallChecker:
    """The per-call checks against the catalogue."""

    def __init__(self, owner: _Checker, index: int, call: Call) -> None:
        self.owner = owner
        self.index = index
        self.call = call

    def note(self, cls: str, detail: str, repaired: bool) -> None:
        self.owner.note(cls, self.index, f"{self.call.name or '?'}: {detail}", repaired)

    def run(self) -> None:
        self._whole_block()
        args = self.decode()
        if args is None:
            return
        tool = self.tool()
        if tool is not None:
            args = self.keys(tool, args)
            args = {k: self.value(tool.param(k), k, v) for k, v in args.items()}
            self.required(tool, args)
        self.call.args = args

    def _whole_block(self) -> None:
        """A text-format call whose ``{"name", "arguments"}`` block is not JSON."""
        if self.call.name or not isinstance(self.call.raw, str):
            return
        fixed = repair_untrusted(self.call.raw)
        if isinstance(fixed, dict) and isinstance(fixed.get("name"), str) and fixed["name"]:
            self.call.name, self.call.raw = fixed["name"], fixed.get("arguments") or {}
            self.call.args = None
            self.note("json_syntax", "call block repaired", True)
        else:
            self.note("json_syntax", "call block is not JSON and cannot be repaired", False)
            self.call.raw = None

    def decode(self) -> dict[str, Any] | None:
        raw = self.call.raw
        if isinstance(raw, Mapping) and set(raw) == {RAW_KEY}:
            raw = raw[RAW_KEY]
        if raw is None or raw == "":
            return None if not self.call.name else {}
        if isinstance(raw, Mapping):
            return dict(raw)
        text = raw if isinstance(raw, str) else json.dumps(raw)
        try:
            parsed = loads_untrusted(text)
        except ValueError:
            parsed = repair_untrusted(text)
            if isinstance(parsed, dict) and parsed:
                self.note("json_syntax", "arguments repaired", True)
                return parsed
            self.note("json_syntax", "arguments are not JSON and cannot be repaired", False)
            return None
        if not isinstance(parsed, dict):
            self.note("json_syntax", "arguments are not a JSON object", False)
            return None
        return parsed

    def tool(self) -> ToolDef | None:
        catalog = self.owner.catalog
        if not len(catalog):
            return None
        found = catalog.get(self.call.name)
        if found is not None:
            return found
        match = closest(self.call.name, catalog.names, self.owner.options.tool_cutoff)
        if match is None:
            self.note("unknown_tool", "no such tool", False)
            return None
        self.note("unknown_tool", f"renamed to {match!r}", True)
        self.call.name = match
        return catalog.get(match)

    def keys(self, tool: ToolDef, args: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        names = tool.param_names
        for key, value in args.items():
            if key in names or not tool.closed:
                out[key] = value
                continue
            free = [n for n in names if n not in args and n not in out]
            match = closest(key, free, self.owner.options.key_cutoff)
            if match is None:
                self.note("argument_key", f"unknown argument {key!r}", False)
                out[key] = value
            else:
                self.note("argument_key", f"argument {key!r} renamed to {match!r}", True)
                out[match] = value
        return out

    def value(self, param: ToolParam | None, key: str, value: Any) -> Any:
        if param is None or value is None:
            return value
        if param.type is not None and not type_ok(param.type, value):
            coerced = coerce(param.type, value)
            if coerced is UNCOERCIBLE:
                self.note("argument_type", f"{key!r} must be {param.type}, got {value!r}", False)
                return value
            self.note("argument_type", f"{key!r}: {value!r} -> {coerced!r}", True)
            value = coerced
        return self._in_range(param, key, value)

    def _in_range(self, param: ToolParam, key: str, value: Any) -> Any:
        if param.enum is not None and value not in param.enum:
            same = [e for e in param.enum if isinstance(e, str) and str(value).lower() == e.lower()]
            if len(same) == 1:
                self.note("argument_value", f"{key!r}: {value!r} -> {same[0]!r}", True)
                return same[0]
            self.note("argument_value", f"{key!r}: {value!r} is not one of {param.enum}", False)
            return value
        low, high = param.minimum, param.maximum
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if number and ((low is not None and value < low) or (high is not None and value > high)):
            self.note("argument_value", f"{key!r}: {value!r} outside [{low}, {high}]", False)
        return value

    def required(self, tool: ToolDef, args: dict[str, Any]) -> None:
        for param in tool.params:
            if param.required and args.get(param.name) is None:
                self.note("required_field", f"required argument {param.name!r} missing", False)


UNCOERCIBLE: Any = object()
"""What :func:`coerce` returns when a value cannot change type without loss."""


def type_ok(kind: str, value: Any) -> bool:
    """True when ``value`` has JSON type ``kind``."""
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    checks: dict[str, Any] = {
        "string": str,
        "boolean": bool,
        "integer": int,
        "number": int | float,
        "array": list,
        "object": dict,
    }
    expected = checks.get(kind)
    return expected is None or isinstance(value, expected)


def coerce(kind: str, value: Any) -> Any:
    """``value`` as JSON type ``kind`` when the change loses nothing, else a sentinel."""
    if kind == "integer":
        if isinstance(value, str) and _INT.fullmatch(value):
            return int(value)
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)
    if kind == "number" and isinstance(value, str):
        try:
            number = loads_untrusted(value)
        except ValueError:
            return UNCOERCIBLE
        ok = isinstance(number, int | float) and not isinstance(number, bool)
        return number if ok and json.dumps(number) == value else UNCOERCIBLE
    if kind == "boolean" and value in ("true", "false"):
        return value == "true"
    if kind == "string" and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return UNCOERCIBLE


def check_turns(
    turns: list[Turn], catalog: ToolCatalog, options: CheckOptions | None = None
) -> CheckResult:
    """Check one trajectory's turns against a catalogue, repairing what can be repaired.

    Args:
        turns: The trajectory (see :func:`veritask.simulate.read_row`).
        catalog: The tools it may use; an empty catalogue skips the per-tool checks.
        options: Cut-offs and what is allowed.

    Returns:
        The turns (repaired copies) and every issue found; untouched turns when clean.
    """
    return _Checker(turns, catalog, options or CheckOptions()).run()
