"""Records the viewer tests look at: a small dataset, trajectories on it, logic instances and
gate records, an evolve run and a blueprint run."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from veritask._cli.main import cli
from veritask.blueprint import BlueprintDag, DagConfig
from veritask.logic import GateSettings, get_family, run_gates
from veritask.model import ScriptedProvider


def _run(*args: str) -> None:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="session")
def dataset(generated: Callable[[str, int, int], Path]) -> Path:
    """Twelve certified tasks of the ``mock`` domain."""
    return generated("mock", 12, 5)


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


@pytest.fixture(scope="session")
def evolve_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two streams x three iterations of the symbolic evolve engine on ``mock`` with the oracle
    assistant: accepted tasks with verified trajectories, and candidates the reflected plans
    reject."""
    out = tmp_path_factory.mktemp("evolve") / "run"
    _run(
        "evolve", "run", "--domains", "mock", "--plans", "2", "--iterations", "3",
        "--candidates", "12", "--batch", "4", "--agent", "oracle", "--out", str(out),
    )  # fmt: skip
    return out


@pytest.fixture(scope="session")
def blueprint_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The blueprint DAG on the scripted answers of the blueprint tests: three services, one
    blueprint rejected."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "blueprint"))
    import dag_script

    out = tmp_path_factory.mktemp("blueprint") / "run"
    config = DagConfig(topics=tuple(dag_script.TOPICS), batch=4)
    BlueprintDag(out, config, ScriptedProvider(dag_script.answer), "scripted").run()
    return out


@pytest.fixture(scope="session")
def gate_records(logic_file: Path) -> Path:
    """Static gate records of two families in ``gates/`` next to the logic file."""
    out = logic_file.parent / "gates"
    settings = GateSettings(per_level=5, consensus_per_level=3)
    for family in ("arithmetic_chain", "cnf_model_count"):
        run_gates(get_family(family), settings=settings, record_path=out / f"{family}.json")
    return out
