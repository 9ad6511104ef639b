"""User-simulator SFT export: the user's turns of verified trajectories as targets."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.agent import USER_OPENING, user_system_prompt
from veritask.export import read_trajectories
from veritask.task import load_dataset


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    data, traj = tmp_path / "ds", tmp_path / "t.jsonl"
    code, _ = _run("generate", "--domain", "mock", "--n", "8", "--seed", "3", "--out", str(data))
    assert code == 0
    code, _ = _run("rollout", str(data), "--agent", "faithful", "--out", str(traj))
    assert code == 0
    return data, traj


def test_user_rows_have_the_profile_as_system_and_the_user_turns_as_targets(
    tmp_path: Path,
) -> None:
    data, traj = _setup(tmp_path)
    out = tmp_path / "user.jsonl"
    args = ["export-sft", str(traj), "--format", "openai", "--role", "user"]
    code, text = _run(*args, "--dataset", str(data), "--out", str(out))
    assert code == 0, text
    packages = {p.id: p for p in load_dataset(data)}
    trajectories = [t for t in read_trajectories(traj) if t.reward == 1.0]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and len(rows) == len(trajectories)
    for row, t in zip(rows, trajectories, strict=True):
        messages = row["messages"]
        assert messages[0] == {"role": "system", "content": user_system_prompt(packages[t.task_id])}
        assert messages[1] == {"role": "user", "content": USER_OPENING}
        targets = [m["content"] for m in messages if m["role"] == "assistant"]
        said = [m["content"] or "" for m in t.messages if m["role"] == "user"]
        assert targets == said and targets
        inputs = [m["content"] for m in messages[2:] if m["role"] == "user"]
        assert inputs == [
            m["content"] for m in t.messages if m["role"] == "assistant" and m["content"]
        ]
        assert row["tools"] == [] and all("tool_calls" not in m for m in messages)


def test_user_rows_keep_only_verified_trajectories_in_every_format(tmp_path: Path) -> None:
    data, _ = _setup(tmp_path)
    noop = tmp_path / "noop.jsonl"
    assert _run("rollout", str(data), "--agent", "noop", "--out", str(noop))[0] == 0
    verified = [t for t in read_trajectories(noop) if t.reward == 1.0]
    for fmt in ("hf", "openai", "sharegpt"):
        out = tmp_path / f"{fmt}.jsonl"
        args = ["export-sft", str(noop), "--format", fmt, "--role", "user", "--dataset", str(data)]
        code, text = _run(*args, "--out", str(out))
        assert code == 0, text
        assert len(out.read_text().splitlines()) == len(verified)
    row = json.loads((tmp_path / "sharegpt.jsonl").read_text().splitlines()[0])
    assert row["system"].startswith(user_system_prompt(load_dataset(data)[0])[:20])


def test_user_role_needs_the_dataset_and_its_tasks(tmp_path: Path) -> None:
    _, traj = _setup(tmp_path)
    args = ["export-sft", str(traj), "--format", "hf", "--role", "user", "--out", "x.jsonl"]
    code, text = _run(*args)
    assert code != 0 and "--dataset" in text
    other = tmp_path / "other"
    assert (
        _run("generate", "--domain", "mock", "--n", "2", "--seed", "9", "--out", str(other))[0] == 0
    )
    code, text = _run(*args[:-2], "--dataset", str(other), "--out", str(tmp_path / "x.jsonl"))
    assert code != 0 and "is not in the dataset" in text
