"""Trajectory files in the formats the field uses, read into one shape and written back.

Formats: veritask trajectories (``Trajectory`` JSON lines), OpenAI and Hugging Face chat rows
(``{"messages", "tools"}``; arguments as a JSON string or an object), ShareGPT rows
(``{"conversations"}`` with ``human`` / ``gpt`` / ``function_call`` / ``observation`` turns) and
the SimAgent paper's text format (``HUMAN:`` / ``ASSISTANT:`` / ``FUNCTION_CALL:`` /
``OBSERVATION:`` blocks), as JSON lines ``{"text": ...}`` or a text file whose trajectories are
separated by lines holding only ``===``.

The one shape is a list of :class:`Turn` (OpenAI-like: an assistant turn may carry calls, a
``tool`` turn answers one). Writers rebuild a row of the row's own format, keeping every field
they do not own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from veritask._util import loads_untrusted, read_text

Format = Literal["veritask", "chat", "sharegpt", "text"]
Role = Literal["system", "user", "assistant", "tool"]
TEXT_SEPARATOR = "==="

_SHAREGPT_ROLE: dict[str, Role] = {
    "system": "system",
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "function_call": "assistant",
    "observation": "tool",
    "tool": "tool",
}
_TEXT_MARK = re.compile(
    r"^(SYSTEM|HUMAN|USER|ASSISTANT|GPT|FUNCTION_CALL|OBSERVATION):[ \t]?", re.MULTILINE
)
_TEXT_ROLE: dict[str, Role] = {
    "SYSTEM": "system",
    "HUMAN": "user",
    "USER": "user",
    "ASSISTANT": "assistant",
    "GPT": "assistant",
    "FUNCTION_CALL": "assistant",
    "OBSERVATION": "tool",
}
_THINK_HEAD = re.compile(r"^\s*(<think>.*?</think>)\s*", re.DOTALL)


@dataclass
class Call:
    """One tool call: name, arguments as written (JSON text or an object), id when the format
    has ids. ``args`` is the decoded object once the checker has accepted it."""

    name: str
    raw: Any
    call_id: str = ""
    args: dict[str, Any] | None = None


@dataclass
class Turn:
    """One message: its role, its text, the calls an assistant turn makes, the call a tool
    turn answers, and the fields of the source message this shape does not own."""

    role: str
    text: str | None = None
    calls: list[Call] = field(default_factory=list)
    call_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def key(self) -> str:
        """A canonical text of the turn (for detecting repeated turns)."""
        calls = [(c.name, _canonical_args(c.raw), c.call_id) for c in self.calls]
        return json.dumps([self.role, self.text, calls, self.call_id], sort_keys=True)

    def copy(self) -> Turn:
        """A copy whose call list can be edited."""
        return replace(self, calls=[replace(c) for c in self.calls], extra=dict(self.extra))


def _canonical_args(raw: Any) -> Any:
    return raw if isinstance(raw, str) else json.dumps(raw, sort_keys=True, default=str)


@dataclass
class Row:
    """One trajectory of a file: its format, its turns, and the parsed source record."""

    format: Format
    turns: list[Turn]
    record: Any
    tools: list[dict[str, Any]] = field(default_factory=list)


class FormatError(ValueError):
    """A row is not any known trajectory format."""


def _content(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(str(p.get("text", "")) if isinstance(p, Mapping) else str(p) for p in value)
    return json.dumps(value, ensure_ascii=False)


# -- chat (veritask, OpenAI, Hugging Face) -----------------------------------------------------

_CHAT_KEYS = {"role", "content", "tool_calls", "tool_call_id"}


def _chat_turn(message: Mapping[str, Any]) -> Turn:
    calls = []
    listed = message.get("tool_calls")
    for call in listed if isinstance(listed, list) else []:  # a row may hold anything here
        if not isinstance(call, Mapping):
            continue
        fn = call.get("function")
        fn = fn if isinstance(fn, Mapping) else {}
        calls.append(
            Call(str(fn.get("name") or ""), fn.get("arguments"), str(call.get("id") or ""))
        )
    extra = {k: v for k, v in message.items() if k not in _CHAT_KEYS}
    if "tool_calls" in message and not calls:
        extra["tool_calls"] = message["tool_calls"]
    return Turn(
        role=str(message.get("role")),
        text=_content(message.get("content")),
        calls=calls,
        call_id=str(message.get("tool_call_id") or ""),
        extra=extra,
    )


def _chat_args(call: Call) -> Any:
    if call.args is None:
        return call.raw
    if isinstance(call.raw, Mapping):
        return call.args
    return json.dumps(call.args, ensure_ascii=False)


def _chat_message(turn: Turn, hf: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"role": turn.role}
    if hf or turn.text is not None or not turn.calls:
        out["content"] = turn.text
    if turn.calls:
        out["tool_calls"] = [
            {
                "id": c.call_id,
                "type": "function",
                "function": {"name": c.name, "arguments": _chat_args(c)},
            }
            for c in turn.calls
        ]
    elif hf:
        out["tool_calls"] = None
    if turn.role == "tool" or hf:
        out["tool_call_id"] = turn.call_id if turn.role == "tool" else None
    return {**out, **turn.extra}


def _is_hf(messages: list[Any]) -> bool:
    return bool(messages) and all(isinstance(m, Mapping) and "tool_calls" in m for m in messages)


# -- ShareGPT ----------------------------------------------------------------------------------


def _split_think(text: str) -> tuple[str | None, str]:
    match = _THINK_HEAD.match(text)
    if match is None:
        return None, text.strip()
    return match.group(1), text[match.end() :].strip()


def _call_from_text(body: str) -> Call:
    """A call from ``{"name", "arguments"}`` JSON (kept as text when it does not parse)."""
    try:
        data = loads_untrusted(body)
    except ValueError:
        return Call(name="", raw=body)
    if not isinstance(data, Mapping):
        return Call(name="", raw=body)
    return Call(name=str(data.get("name") or ""), raw=data.get("arguments"))


def _sharegpt_turn(item: Mapping[str, Any]) -> Turn:
    kind = str(item.get("from") or "")
    value = _content(item.get("value")) or ""
    role = _SHAREGPT_ROLE.get(kind, kind)
    extra = {k: v for k, v in item.items() if k not in ("from", "value")}
    if kind != "function_call":
        return Turn(role=role, text=value, extra=extra)
    think, body = _split_think(value)
    return Turn(role=role, text=think, calls=[_call_from_text(body)], extra=extra)


def _call_text(call: Call) -> str:
    if call.args is None and not call.name and isinstance(call.raw, str):
        return call.raw
    args = call.args if call.args is not None else call.raw
    return json.dumps({"name": call.name, "arguments": args}, ensure_ascii=False)


def _sharegpt_items(turns: list[Turn]) -> list[dict[str, Any]]:
    out = []
    for turn in turns:
        if turn.calls:
            for call in turn.calls:
                head = f"{turn.text}\n" if turn.text else ""
                out.append({"from": "function_call", "value": head + _call_text(call)})
            continue
        kind = {"user": "human", "assistant": "gpt", "tool": "observation"}.get(
            turn.role, turn.role
        )
        out.append({"from": kind, "value": turn.text or "", **turn.extra})
    return out


# -- the paper's text format -------------------------------------------------------------------


def parse_text(text: str) -> list[Turn]:
    """Turns of a trajectory in the HUMAN/ASSISTANT/FUNCTION_CALL/OBSERVATION text format."""
    marks = list(_TEXT_MARK.finditer(text))
    turns = []
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[mark.end() : end].strip("\n")
        if mark.group(1) == "FUNCTION_CALL":
            think, call = _split_think(body)
            turns.append(Turn(role="assistant", text=think, calls=[_call_from_text(call)]))
        else:
            turns.append(Turn(role=_TEXT_ROLE[mark.group(1)], text=body.strip()))
    return turns


def render_text(turns: list[Turn]) -> str:
    """A trajectory in the paper's text format (one FUNCTION_CALL block per call)."""
    blocks = []
    for turn in turns:
        if turn.calls:
            for call in turn.calls:
                head = f"{turn.text}\n" if turn.text else ""
                blocks.append(f"FUNCTION_CALL:\n{head}{_call_text(call)}")
            continue
        mark = {"system": "SYSTEM", "user": "HUMAN", "assistant": "ASSISTANT"}.get(
            turn.role, "OBSERVATION"
        )
        blocks.append(f"{mark}: {turn.text or ''}")
    return "\n".join(blocks)


# -- rows ---------------------------------------------------------------------------------------


def detect(record: Any) -> Format:
    """The format of one parsed JSON row.

    Raises:
        FormatError: The row is none of the known formats.
    """
    if isinstance(record, Mapping):
        if isinstance(record.get("messages"), list):
            return "veritask" if "task_id" in record and "steps" in record else "chat"
        if isinstance(record.get("conversations"), list):
            return "sharegpt"
        if isinstance(record.get("text"), str):
            return "text"
    raise FormatError("not a trajectory row (no messages, conversations or text)")


def read_row(record: Any) -> Row:
    """One row's turns.

    Raises:
        FormatError: The row is none of the known formats.
    """
    fmt = detect(record)
    if fmt in ("veritask", "chat"):
        turns = [_chat_turn(m) for m in record["messages"] if isinstance(m, Mapping)]
        return Row(fmt, turns, record, _tools_field(record))
    if fmt == "sharegpt":
        items = [c for c in record["conversations"] if isinstance(c, Mapping)]
        return Row(fmt, [_sharegpt_turn(c) for c in items], record, _tools_field(record))
    return Row(fmt, parse_text(record["text"]), record, _tools_field(record))


def _tools_field(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    tools = record.get("tools")
    if isinstance(tools, str):
        try:
            tools = loads_untrusted(tools)
        except ValueError:
            return []
    return [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []


def write_row(row: Row, turns: list[Turn]) -> Any:
    """The row rebuilt with ``turns``, in its own format (other fields kept)."""
    record = dict(row.record)
    if row.format in ("veritask", "chat"):
        hf = _is_hf(record["messages"])
        record["messages"] = [_chat_message(t, hf) for t in turns]
    elif row.format == "sharegpt":
        record["conversations"] = _sharegpt_items(turns)
    else:
        record["text"] = render_text(turns)
    return record


def iter_records(path: Path) -> Iterator[tuple[str, Any]]:
    """``(source text, parsed record)`` for every row of a file.

    A ``.txt`` file holds text-format trajectories separated by ``===`` lines; any other file
    is JSON lines (a line that does not parse yields ``None`` as its record).

    Raises:
        InputError: The file is binary, not UTF-8 or too large.
    """
    text = read_text(path)
    if path.suffix == ".txt":
        for chunk in re.split(rf"(?m)^{TEXT_SEPARATOR}[ \t]*$", text):
            if chunk.strip():
                yield chunk.strip("\n"), {"text": chunk.strip("\n")}
        return
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            yield line, loads_untrusted(line)
        except ValueError:
            yield line, None


def dump_record(record: Any, text_file: bool) -> str:
    """A record as one line of JSON, or as a text-format chunk for ``.txt`` files."""
    if text_file:
        return str(record["text"])
    return json.dumps(record, ensure_ascii=False)


def observed_calls(turns: list[Turn]) -> Iterator[tuple[str, dict[str, Any], Any]]:
    """``(tool, arguments, decoded observation)`` for every call with an object of arguments,
    its observation matched by id, else by position."""
    for index, turn in enumerate(turns):
        results = []
        for later in turns[index + 1 :]:
            if later.role != "tool":
                break
            results.append(later)
        for position, call in enumerate(turn.calls):
            args = _decoded(call.raw)
            if args is None:
                continue
            match = [r for r in results if call.call_id and r.call_id == call.call_id]
            result = match[0] if match else (results[position] if position < len(results) else None)
            yield call.name, args, _decoded(result.text) if result is not None else None


def _decoded(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            raw = loads_untrusted(raw)
        except ValueError:
            return None
    return raw if isinstance(raw, dict) else None
