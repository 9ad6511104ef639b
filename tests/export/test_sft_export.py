"""SFT exports: HF chat, OpenAI fine-tuning and ShareGPT rows from hand-built trajectories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from veritask.export import (
    RAW_KEY,
    export_sft,
    read_trajectories,
    to_hf_row,
    to_openai_row,
    to_sharegpt_row,
    verified,
)
from veritask.task import Trajectory

MALFORMED = '{"id": "m_ben", "name": '
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "query_members",
            "description": "Look up members.",
            "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "insert_loans",
            "description": "Lend a book.",
            "parameters": {
                "type": "object",
                "properties": {
                    "member_id": {"type": "string"},
                    "book_id": {"type": "string"},
                    "due_step": {"type": "integer", "minimum": 0},
                },
                "required": ["member_id", "book_id", "due_step"],
            },
        },
    },
]
ARGS = {
    "c1": {"id": "m_ana"},
    "c2": {"id": "b_dune"},
    "c3": {"member_id": "m_ana", "book_id": "b_dune", "due_step": 7},
    "d2": {"id": "m_ben"},
    "d3": {"member_id": "m_ben", "book_id": "b_hobbit", "due_step": 2.5, "note": "über"},
}


def call(call_id: str, name: str, arguments: str | None = None) -> dict[str, Any]:
    raw = json.dumps(ARGS[call_id]) if arguments is None else arguments
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}


def result(call_id: str, payload: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": json.dumps(payload)}


def assistant(content: str | None, *calls: dict[str, Any]) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = list(calls)
    return msg


def traj(task_id: str, messages: list[dict[str, Any]], reward: float | None) -> Trajectory:
    return Trajectory(
        task_id=task_id,
        domain="mock",
        agent="test-agent",
        user="test-user",
        messages=messages,
        tools=TOOLS,
        stop_reason="user_stop",
        initial_distance=5,
        final_distance=0 if reward == 1 else 5,
        reward=reward,
    )


SYSTEM = {"role": "system", "content": "You are the library assistant. Follow the policy."}
LENDING = traj(
    "mock-0001",
    [
        SYSTEM,
        {"role": "user", "content": "Hi, I'm Ana (m_ana). I'd like to borrow Dune."},
        assistant("Let me check.", call("c1", "query_members"), call("c2", "query_books")),
        result("c1", [{"id": "m_ana", "active": 1}]),
        result("c2", [{"id": "b_dune", "available": 1}]),
        assistant(None, call("c3", "insert_loans")),
        result("c3", {"id": 2}),
        assistant("Done: Dune is yours until step 7."),
        {"role": "user", "content": "Thanks!"},
    ],
    reward=1.0,
)
RETRY = traj(
    "mock-0002",
    [
        SYSTEM,
        assistant("Hello! How can I help?"),
        {"role": "user", "content": "Ben here."},
        {"role": "user", "content": "I want The Hobbit."},
        assistant(None, call("d1", "query_members", MALFORMED)),
        result("d1", {"error": {"code": "INVALID_ARGUMENTS"}}),
        assistant(None, call("d2", "query_members")),
        result("d2", [{"id": "m_ben", "active": 1}]),
        assistant(None, call("d3", "insert_loans")),
        result("d3", {"error": {"code": "RULE"}}),
    ],
    reward=0.0,
)
UNSCORED = traj(
    "mock-0003",
    [SYSTEM, {"role": "user", "content": "Hours?"}, assistant("9 to 5.")],
    reward=None,
)
TRAJS = [LENDING, RETRY, UNSCORED]


def load(path: Path, tmp_path: Path) -> Any:
    datasets = pytest.importorskip("datasets")
    return datasets.load_dataset(
        "json", data_files=str(path), split="train", cache_dir=str(tmp_path / "hf-cache")
    )


def calls_of(row: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for m in row["messages"] for c in (m.get("tool_calls") or [])]


def test_verified_keeps_reward_one_only() -> None:
    assert verified(TRAJS) == [LENDING]


def test_hf_rows_have_one_schema_and_load(tmp_path: Path) -> None:
    path = tmp_path / "hf.jsonl"
    assert export_sft(TRAJS, "hf", path) == 3
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        assert set(row) == {"messages", "tools"}
        for m in row["messages"]:
            assert set(m) == {"role", "content", "tool_calls", "tool_call_id"}
            if m["role"] == "tool":
                assert isinstance(m["content"], str) and m["tool_call_id"]
    ds = load(path, tmp_path)
    assert len(ds) == 3
    loaded = [c["function"]["arguments"] for c in calls_of(ds[0]) + calls_of(ds[1])]
    assert loaded == [c["function"]["arguments"] for r in rows[:2] for c in calls_of(r)]
    assert ds[1]["messages"][5]["tool_call_id"] == "d1"


def test_openai_rows_load(tmp_path: Path) -> None:
    path = tmp_path / "openai.jsonl"
    assert export_sft(TRAJS, "openai", path) == 3
    ds = load(path, tmp_path)
    assert len(ds) == 3
    first = json.loads(path.read_text().splitlines()[0])
    assert first["messages"][2] == {
        "role": "assistant",
        "content": "Let me check.",
        "tool_calls": [call("c1", "query_members"), call("c2", "query_books")],
    }
    assert first["messages"][5] == {"role": "assistant", "tool_calls": [call("c3", "insert_loans")]}
    assert first["messages"][6] == {"role": "tool", "tool_call_id": "c3", "content": '{"id": 2}'}
    assert first["tools"] == TOOLS


def test_arguments_round_trip_between_formats() -> None:
    for t in (LENDING, RETRY):
        hf_calls, oa_calls = calls_of(to_hf_row(t)), calls_of(to_openai_row(t))
        assert [c["id"] for c in hf_calls] == [c["id"] for c in oa_calls]
        for hf, oa in zip(hf_calls, oa_calls, strict=True):
            hf_args, oa_args = hf["function"]["arguments"], oa["function"]["arguments"]
            assert isinstance(hf_args, dict) and isinstance(oa_args, str)
            if hf["id"] == "d1":
                assert hf_args == {RAW_KEY: MALFORMED} and oa_args == MALFORMED
            else:
                assert hf_args == json.loads(oa_args) == ARGS[hf["id"]]


def test_two_calls_of_one_message_stay_together() -> None:
    msg = to_hf_row(LENDING)["messages"][2]
    assert msg["content"] == "Let me check."
    assert [c["function"]["name"] for c in msg["tool_calls"]] == ["query_members", "query_books"]


def test_verified_only_filters(tmp_path: Path) -> None:
    path = tmp_path / "out" / "sharegpt.jsonl"
    assert export_sft(TRAJS, "sharegpt", path, verified_only=True) == 1
    (row,) = [json.loads(line) for line in path.read_text().splitlines()]
    assert "Ana" in row["conversations"][1]["value"]


def roles(row: dict[str, Any]) -> list[str]:
    return [t["from"] for t in row["conversations"]]


def assert_alternates(row: dict[str, Any]) -> None:
    turns = roles(row)[1:] if roles(row)[0] == "system" else roles(row)
    assert len(turns) % 2 == 0
    for i, role in enumerate(turns):
        assert role in (("human", "observation"), ("gpt", "function_call"))[i % 2], (i, turns)


def test_sharegpt_pairs_each_tool_call_with_its_observation() -> None:
    row = to_sharegpt_row(LENDING)
    assert roles(row) == [
        "system",
        "human",
        "function_call",
        "observation",
        "function_call",
        "observation",
        "function_call",
        "observation",
        "gpt",
    ]
    conv = row["conversations"]
    assert row["system"] == conv[0]["value"] == SYSTEM["content"]
    assert json.loads(conv[2]["value"]) == {"name": "query_members", "arguments": ARGS["c1"]}
    assert json.loads(conv[4]["value"]) == {"name": "query_books", "arguments": ARGS["c2"]}
    assert json.loads(conv[5]["value"]) == [{"id": "b_dune", "available": 1}]
    assert conv[-1]["value"] == "Done: Dune is yours until step 7."
    tools = json.loads(row["tools"])
    assert [t["name"] for t in tools] == ["query_members", "insert_loans"]
    assert tools[1]["parameters"]["required"] == ["member_id", "book_id", "due_step"]
    assert_alternates(row)


def test_sharegpt_repairs_alternation() -> None:
    row = to_sharegpt_row(RETRY)
    # The greeting is dropped, the two user texts joined, the malformed call kept as __raw__.
    assert roles(row)[:3] == ["system", "human", "function_call"]
    assert row["conversations"][1]["value"] == "Ben here.\n\nI want The Hobbit."
    malformed = json.loads(row["conversations"][2]["value"])
    assert malformed == {"name": "query_members", "arguments": {RAW_KEY: MALFORMED}}
    # The episode ended on a tool result: the trailing observation is dropped.
    assert roles(row)[-1] == "function_call"
    assert_alternates(row)
    for t in TRAJS:
        assert_alternates(to_sharegpt_row(t))


def test_sharegpt_pairs_results_by_call_id() -> None:
    swapped = traj(
        "mock-0004",
        [
            {"role": "user", "content": "Check Ana and Dune."},
            assistant(None, call("c1", "query_members"), call("c2", "query_books")),
            result("c2", "book"),
            result("c1", "member"),
            assistant("Both fine."),
        ],
        reward=1.0,
    )
    conv = to_sharegpt_row(swapped)["conversations"]
    assert [t["from"] for t in conv] == ["human", *["function_call", "observation"] * 2, "gpt"]
    assert [json.loads(conv[i]["value"]) for i in (2, 4)] == ["member", "book"]


def test_read_trajectories_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "trajectories.jsonl"
    path.write_text("".join(t.model_dump_json() + "\n" for t in TRAJS) + "\n")
    assert read_trajectories(path) == TRAJS
    path.write_text(LENDING.model_dump_json() + "\n{}\n")
    with pytest.raises(ValueError, match=":2: not a trajectory"):
        read_trajectories(path)


def test_unknown_format_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown SFT format"):
        export_sft(TRAJS, "alpaca", tmp_path / "x.jsonl")  # type: ignore[arg-type]
