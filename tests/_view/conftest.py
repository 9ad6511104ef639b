"""Records the viewer tests look at: a small dataset, trajectories on it, logic instances."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.synth import generate


def _run(*args: str) -> None:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="session")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Twelve certified tasks of the ``mock`` domain."""
    out = tmp_path_factory.mktemp("view") / "ds"
    generate("mock", 12, 5, out)
    return out


@pytest.fixture(scope="session")
def trajectories(dataset: Path) -> Path:
    """Two trials of the oracle and two of the do-nothing agent on every task, in one file."""
    parts = []
    for agent in ("oracle", "noop"):
        path = dataset.parent / f"{agent}.jsonl"
        _run("rollout", str(dataset), "--agent", agent, "--trials", "2", "--out", str(path))
        parts.append(path.read_text(encoding="utf-8"))
    both = dataset.parent / "trajectories.jsonl"
    both.write_text("".join(parts), encoding="utf-8")
    return both


@pytest.fixture(scope="session")
def logic_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four instances of every built-in logic family."""
    out = tmp_path_factory.mktemp("logic") / "logic.jsonl"
    _run("logic", "generate", "all", "--n", "4", "--mix", "easy=0.5,hard=0.5", "--out", str(out))
    return out
