"""Rollout statistics per agent: counts per episode, their distribution, errors, and the
``report --rollouts`` section built from trajectory files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.rollout import read_rollouts, rollout_stats, stats_of_files
from veritask.rollout._stats import describe, episode_counts, histogram, percentile
from veritask.task import StopReason, ToolStep, Trajectory


def _traj(
    agent: str, calls: int, *, rejected: int = 0, stop: StopReason = "user_stop"
) -> Trajectory:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "hello"},
    ]
    steps = []
    for i in range(calls):
        messages.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}"}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "{}"})
        steps.append(
            ToolStep(
                turn=len(messages) - 2,
                call_id=f"c{i}",
                tool="t",
                args={},
                raw_arguments="{}",
                ok=i >= rejected,
            )
        )
    messages.append({"role": "assistant", "content": "done"})
    return Trajectory(
        task_id=f"task-{calls}", domain="mock", agent=agent, user="scripted", messages=messages,
        steps=steps, stop_reason=stop, initial_distance=1, final_distance=0, reward=1.0,
    )  # fmt: skip


def test_episode_counts_follow_the_messages() -> None:
    counts = episode_counts(_traj("a", 3, rejected=1))
    assert counts == {"turns": 4, "messages": 8, "tool_calls": 3, "rejected_calls": 1}


def test_percentile_histogram_and_describe() -> None:
    assert percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9) == 9.0
    assert percentile([], 0.9) == 0.0
    assert histogram([0, 0, 1, 5]) == [
        {"low": 0, "high": 0, "count": 2},
        {"low": 1, "high": 1, "count": 1},
        *[{"low": v, "high": v, "count": 0} for v in (2, 3, 4)],
        {"low": 5, "high": 5, "count": 1},
    ]
    wide = histogram(list(range(100)))
    assert len(wide) == 10 and all(b["count"] == 10 for b in wide)
    assert sum(b["count"] for b in histogram([3, 7, 7, 40])) == 4
    summary = describe([1, 2, 3, 10])
    assert (summary["mean"], summary["median"], summary["p90"]) == (4.0, 2.5, 10.0)


def test_stats_per_agent_with_errors() -> None:
    trajs = [_traj("oracle", 2), _traj("oracle", 4), _traj("llm", 1, rejected=1)]
    trajs.append(_traj("llm", 0, stop="agent_error"))
    failures = [{"task_id": "x", "role": "agent", "kind": "timeout", "agent": "llm"}]
    stats = rollout_stats(trajs, failures)
    assert stats["episodes"] == 5 and list(stats["agents"]) == ["llm", "oracle"]
    oracle, llm = stats["agents"]["oracle"], stats["agents"]["llm"]
    assert oracle["episodes"] == 2 and oracle["tool_calls"]["mean"] == 3.0
    assert oracle["turns"]["median"] == 4.0 and oracle["errors"]["errored_episodes"] == 0
    assert llm["episodes"] == 3 and llm["errors"]["errored_episodes"] == 2
    assert llm["errors"]["rejected_calls"] == 1 and llm["stop_reasons"]["agent_error"] == 1


def test_read_rollouts_names_a_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    good = _traj("a", 1).model_dump_json()
    path.write_text(good + "\n" + json.dumps({"task_id": "t", "kind": "timeout"}) + "\n")
    trajectories, failures = read_rollouts([path])
    assert len(trajectories) == 1 and failures == [{"task_id": "t", "kind": "timeout"}]
    path.write_text(good + "\n" + json.dumps({"task_id": "t"}) + "\n")
    with pytest.raises(ValueError, match=r"r\.jsonl:2: not a trajectory"):
        read_rollouts([path])


def test_same_files_same_bytes(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text("".join(_traj("a", n).model_dump_json() + "\n" for n in (1, 5, 2)))
    first = json.dumps(stats_of_files([path]), sort_keys=True)
    assert first == json.dumps(stats_of_files([path]), sort_keys=True)


def test_report_rollouts_option_and_discovery(tmp_path: Path) -> None:
    data = tmp_path / "ds"
    runner = CliRunner()
    made = runner.invoke(cli, ["generate", "--domain", "mock", "--n", "4", "--out", str(data)])
    assert made.exit_code == 0, made.output
    runs = tmp_path / "runs.jsonl"
    runs.write_text("".join(_traj(a, 2).model_dump_json() + "\n" for a in ("x", "y", "y")))
    shown = runner.invoke(cli, ["report", str(data), "--rollouts", str(runs), "--json"])
    assert shown.exit_code == 0, shown.output
    section = json.loads(shown.output)["rollouts"]
    assert section["files"] == ["runs.jsonl"] and section["agents"]["y"]["episodes"] == 2
    text = runner.invoke(cli, ["report", str(data), "--rollouts", str(runs)])
    assert "rollouts y: 2 episodes" in text.output
    none = runner.invoke(cli, ["report", str(data), "--json"])
    assert "rollouts" not in json.loads(none.output)
    (data / "trajectories.jsonl").write_text(runs.read_text())
    found = json.loads(runner.invoke(cli, ["report", str(data), "--json"]).output)
    assert found["rollouts"]["files"] == ["trajectories.jsonl"]
