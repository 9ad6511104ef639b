"""SFT rows from trajectories: Hugging Face chat, OpenAI fine-tuning and ShareGPT formats."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from veritask.export._chat import (
    arguments_dict,
    arguments_text,
    call_parts,
    dumps,
    following_results,
    result_for,
    text,
    tool_calls,
)
from veritask.task import Trajectory

# -- Hugging Face ------------------------------------------------------------------------------


def _hf_call(call: Mapping[str, Any]) -> dict[str, Any]:
    call_id, name, raw = call_parts(call)
    fn = {"name": name, "arguments": arguments_dict(raw)}
    return {"id": call_id, "type": "function", "function": fn}


def _hf_message(message: Mapping[str, Any]) -> dict[str, Any]:
    role = str(message.get("role"))
    calls = [_hf_call(c) for c in tool_calls(message)] or None
    content = text(message.get("content"))
    if role == "tool":
        content = content or ""
    tool_call_id = str(message.get("tool_call_id") or "") if role == "tool" else None
    return {"role": role, "content": content, "tool_calls": calls, "tool_call_id": tool_call_id}


def to_hf_row(traj: Trajectory) -> dict[str, Any]:
    """A Hugging Face chat row: ``{"messages", "tools"}``.

    Every message has the same keys (``role``, ``content``, ``tool_calls``, ``tool_call_id``;
    None where absent) and tool results are strings, so ``datasets`` infers one schema for all
    rows. Tool-call arguments are dicts, as ``apply_chat_template`` expects; malformed ones are
    kept as ``{"__raw__": <the string>}``.

    Args:
        traj: The trajectory.

    Returns:
        The row.
    """
    return {"messages": [_hf_message(m) for m in traj.messages], "tools": list(traj.tools)}


# -- OpenAI ------------------------------------------------------------------------------------


def _openai_call(call: Mapping[str, Any]) -> dict[str, Any]:
    call_id, name, raw = call_parts(call)
    fn = {"name": name, "arguments": arguments_text(raw)}
    return {"id": call_id, "type": "function", "function": fn}


def _openai_message(message: Mapping[str, Any]) -> dict[str, Any]:
    role = str(message.get("role"))
    content = text(message.get("content"))
    if role == "tool":
        return {
            "role": role,
            "tool_call_id": str(message.get("tool_call_id") or ""),
            "content": content or "",
        }
    out: dict[str, Any] = {"role": role}
    calls = [_openai_call(c) for c in tool_calls(message)]
    if content is not None or not calls:
        out["content"] = content or ""
    if calls:
        out["tool_calls"] = calls
    return out


def to_openai_row(traj: Trajectory) -> dict[str, Any]:
    """An OpenAI fine-tuning chat row: ``{"messages", "tools"}``.

    Tool-call arguments are JSON strings, exactly as the model produced them (a malformed one
    stays the malformed string); absent keys are left out.

    Args:
        traj: The trajectory.

    Returns:
        The row.
    """
    return {"messages": [_openai_message(m) for m in traj.messages], "tools": list(traj.tools)}


# -- ShareGPT (LLaMA-Factory) ------------------------------------------------------------------

_SIDE = {"human": 0, "observation": 0, "gpt": 1, "function_call": 1}
"""LLaMA-Factory's alternation: human/observation at even positions, gpt/function_call odd."""


def _call_turns(
    calls: Sequence[Mapping[str, Any]], results: Sequence[Mapping[str, Any]]
) -> list[tuple[str, str]]:
    turns: list[tuple[str, str]] = []
    for position, call in enumerate(calls):
        call_id, name, raw = call_parts(call)
        turns.append(("function_call", dumps({"name": name, "arguments": arguments_dict(raw)})))
        result = result_for(call_id, position, results)
        if result is not None:
            turns.append(("observation", result))
    return turns


def _raw_turns(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    turns: list[tuple[str, str]] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        role, calls = message.get("role"), tool_calls(message)
        if role == "assistant" and calls:
            results, i = following_results(messages, i + 1)
            turns += _call_turns(calls, results)
            continue
        content = text(message.get("content"))
        if role in ("user", "assistant") and content:
            turns.append(("human" if role == "user" else "gpt", content))
        i += 1
    return turns


def _align(turns: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for role, value in turns:
        if len(out) % 2 == _SIDE[role]:
            out.append((role, value))
        elif out and out[-1][0] == role and role in ("human", "gpt"):
            out[-1] = (role, f"{out[-1][1]}\n\n{value}")
    return out[: len(out) - len(out) % 2]


def _flat_tools(tools: Sequence[Mapping[str, Any]]) -> list[Any]:
    return [t.get("function", t) if t.get("type") == "function" else t for t in tools]


def to_sharegpt_row(traj: Trajectory) -> dict[str, Any]:
    """A LLaMA-Factory ShareGPT row: ``{"conversations", "system", "tools"}``.

    Each tool call becomes a ``function_call`` turn (JSON ``{"name", "arguments"}``) followed by
    an ``observation`` turn (the tool's result), so an assistant message with several calls
    yields consecutive pairs. LLaMA-Factory requires human/observation and gpt/function_call
    turns to alternate, starting with human and ending with gpt/function_call, so: text an
    assistant sent alongside tool calls is dropped, consecutive human (or gpt) texts are joined,
    leading assistant turns (a greeting) and trailing human/observation turns are dropped. The
    system prompt opens ``conversations`` as a ``system`` turn and is also the ``system`` field.

    Args:
        traj: The trajectory.

    Returns:
        The row; ``tools`` is a JSON string of the function schemas.
    """
    system = "\n\n".join(
        text(m.get("content")) or "" for m in traj.messages if m.get("role") == "system"
    )
    turns = _align(_raw_turns(traj.messages))
    head = [{"from": "system", "value": system}] if system else []
    conversations = head + [{"from": role, "value": value} for role, value in turns]
    return {
        "conversations": conversations,
        "system": system,
        "tools": dumps(_flat_tools(traj.tools)),
    }
