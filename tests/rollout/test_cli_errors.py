"""eval and rollout on the command line: errored episodes, --max-errors, dead endpoints, typos."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from veritask._cli.main import cli
from veritask.agent import ScriptedUser
from veritask.model import ProviderError, ScriptedProvider
from veritask.model import _registry as registry
from veritask.rollout import BUILTIN_AGENTS, BUILTIN_USERS, TaskSource
from veritask.synth import generate

N = 4


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli-errors") / "mock"
    generate("mock", N, 5, root)
    return root


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize("command", ["eval", "rollout"])
def test_a_closed_port_is_one_line_and_a_failure(
    dataset: Path, tmp_path: Path, command: str
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    out = tmp_path / "t.jsonl"
    args = [command, str(dataset), "--agent", "openai:m", "--base-url", url, "--limit", "2"]
    result = invoke(*args, "--out", str(out), "--max-errors", "5")
    assert result.exit_code == 1
    assert "Traceback" not in result.output and "pass^" not in result.output
    (line,) = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert line.startswith(
        f"Error: could not reach the model at {url} (connection refused); "
        "check --base-url or start the server"
    )
    assert "2 of 2 episodes errored, none was scored" in line
    assert [e["kind"] for e in errors_lines(out)] == ["connection", "connection"]
    assert not out.exists() or out.read_text() == ""


def errors_lines(out: Path) -> list[dict[str, Any]]:
    path = out.with_name(out.name + ".errors.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def flaky(dataset: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """``flaky:m``: times out on the first task's conversation, declines everywhere else."""
    first = TaskSource.load(dataset).packages[0]
    opening = asyncio.run(ScriptedUser(first).open()).message["content"]

    def answer(messages: list[dict[str, Any]], _tools: Any) -> Any:
        if any(m.get("content") == opening for m in messages):
            return ProviderError("timed out", kind="timeout", base_url="http://slow.test/v1")
        return "Sorry, I cannot help with that."

    factory = lambda _arg, **_o: ScriptedProvider(answer, model="m")  # noqa: E731
    monkeypatch.setitem(registry._FACTORIES, "flaky", factory)
    return "flaky:m"


def test_max_errors_scores_the_rest_and_says_so(dataset: Path, flaky: str) -> None:
    refused = invoke("eval", str(dataset), "--agent", flaky, "--concurrency", "1")
    assert refused.exit_code == 1 and "pass^" not in refused.output
    assert "did not answer in time" in refused.output
    assert f"1 of 1 episodes errored, {N - 1} more not run" in refused.output  # stopped early

    ok = invoke("eval", str(dataset), "--agent", flaky, "--max-errors", "1", "--json")
    assert ok.exit_code == 0, ok.output
    summary = json.loads(ok.output)
    assert (summary["episodes"], summary["scored"], summary["errors"]) == (N, N - 1, 1)
    rows = summary["per_task"]
    (errored,) = [r for r in rows if r["errors"]]
    assert errored["id"] == summary["first_error"]["task_id"] and errored["trials"] == 0
    assert summary["pass^1"] == pytest.approx(sum(r["successes"] for r in rows) / (N - 1))
    assert summary["first_error"]["kind"] == "timeout" and summary["ok"] is True

    text = invoke("eval", str(dataset), "--agent", flaky, "--max-errors", "1")
    expected = f"pass^1 {summary['pass^1']:.3f} over {N - 1} scored episodes; 1 errored (excluded)"
    assert text.exit_code == 0 and expected in text.output


def test_over_the_tolerance_json_carries_the_errors_and_no_metric(
    dataset: Path, flaky: str
) -> None:
    result = invoke("eval", str(dataset), "--agent", flaky, "--json")
    assert result.exit_code == 1
    summary = json.loads(result.output[: result.output.rindex("}") + 1])
    assert summary["pass^1"] is None and summary["ok"] is False and summary["errors"] == 1


@pytest.mark.parametrize(
    ("flag", "names"), [("--agent", BUILTIN_AGENTS), ("--user", BUILTIN_USERS)]
)
def test_a_typo_in_a_role_lists_the_valid_names(
    dataset: Path, flag: str, names: dict[str, Any]
) -> None:
    result = invoke("eval", str(dataset), flag, "oracel")
    assert result.exit_code == 1 and "Traceback" not in result.output
    (line,) = result.output.strip().splitlines()
    assert all(name in line for name in names) and "openai:MODEL" in line
