"""The pipeline layer: run manifests refuse another config, stages resume exactly."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from veritask._util import atomic_write_text, derive_seed
from veritask.pipeline import (
    AsyncExecutor,
    InProcessExecutor,
    JsonlUnits,
    ProcessPoolExecutor,
    RunConflict,
    RunManifest,
    Unit,
    config_diff,
    pending,
)


class Interrupted(RuntimeError):
    """A simulated kill: the stage stops after a number of units."""


@dataclass
class SquareStage:
    """A toy stage: unit i writes ``derive_seed(seed, i)`` to its own file."""

    out: Path
    n: int
    seed: int = 0
    stop_after: int | None = None
    name: str = "square"
    ran: list[str] = field(default_factory=list)

    def units(self) -> Sequence[Unit[int]]:
        return [Unit(f"u{i}", i) for i in range(self.n)]

    def path(self, unit: Unit[int]) -> Path:
        return self.out / f"{unit.id}.txt"

    def done(self, unit: Unit[int]) -> bool:
        return self.path(unit).exists()

    def setup(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)

    def run(self, unit: Unit[int]) -> int:
        if self.stop_after is not None and len(self.ran) >= self.stop_after:
            raise Interrupted(unit.id)
        self.ran.append(unit.id)
        value = derive_seed(self.seed, unit.params) % 1000
        atomic_write_text(self.path(unit), f"{value}\n")
        return value


def _outputs(root: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(root.iterdir())}


def test_manifest_refuses_another_config_naming_the_fields(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    RunManifest("job", {"agent": "oracle", "seed": 0, "limits": {"turns": 30}}, ["a"]).open(path)
    RunManifest("job", {"seed": 0, "agent": "oracle", "limits": {"turns": 30}}, ["a"]).open(path)
    with pytest.raises(RunConflict) as caught:
        RunManifest("job", {"agent": "noop", "seed": 0, "limits": {"turns": 9}}, ["a"]).open(
            path, where="T.jsonl"
        )
    message = str(caught.value)
    assert "T.jsonl holds a different run of job" in message
    assert 'agent: was "oracle", now "noop"' in message and "limits.turns: was 30, now 9" in message
    assert set(caught.value.fields) == {"agent", "limits.turns"}
    with pytest.raises(RunConflict, match="job: was"):
        RunManifest("other", {"agent": "oracle"}, ["a"]).open(path)


def test_manifest_units_are_fixed_unless_the_run_may_grow(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    RunManifest("job", {"x": 1}, ["a", "b"]).open(path)
    with pytest.raises(RunConflict, match="units"):
        RunManifest("job", {"x": 1}, ["a", "b", "c"]).open(path)
    grown = RunManifest("job", {"x": 1}, ["c", "a"]).open(path, grow=True)
    assert grown.units == ["a", "b", "c"]
    stored = RunManifest.read(path)
    assert stored is not None and stored.units == ["a", "b", "c"]
    assert json.loads(path.read_text())["config_hash"] == stored.config_hash


def test_config_diff_names_missing_fields() -> None:
    diff = config_diff({"a": 1, "b": 2}, {"a": 1, "c": 3})
    assert set(diff) == {"b", "c"}


def test_interrupted_stage_resumes_without_redoing_work(tmp_path: Path) -> None:
    whole = SquareStage(tmp_path / "whole", 7)
    list(InProcessExecutor().map(whole, pending(whole)))
    killed = SquareStage(tmp_path / "killed", 7, stop_after=3)
    with pytest.raises(Interrupted):
        list(InProcessExecutor().map(killed, pending(killed)))
    assert killed.ran == ["u0", "u1", "u2"]
    again = SquareStage(tmp_path / "killed", 7)
    assert [u.id for u in pending(again)] == ["u3", "u4", "u5", "u6"]
    list(InProcessExecutor().map(again, pending(again)))
    assert again.ran == ["u3", "u4", "u5", "u6"]
    assert _outputs(tmp_path / "killed") == _outputs(tmp_path / "whole")


def test_process_pool_gives_the_in_process_results(tmp_path: Path) -> None:
    one = SquareStage(tmp_path / "one", 9, seed=4)
    pool = SquareStage(tmp_path / "pool", 9, seed=4)
    assert list(InProcessExecutor().map(one, one.units())) == list(
        ProcessPoolExecutor(3).map(pool, pool.units())
    )
    assert _outputs(tmp_path / "one") == _outputs(tmp_path / "pool")
    with pytest.raises(ValueError, match="at least 1"):
        ProcessPoolExecutor(0)


@dataclass
class EchoStage:
    """A toy async stage appending one line per unit."""

    store: JsonlUnits
    n: int
    name: str = "echo"

    def units(self) -> Sequence[Unit[int]]:
        return [Unit(str(i), i) for i in range(self.n)]

    def done(self, unit: Unit[int]) -> bool:
        return unit.id in self.store

    def setup(self) -> None:
        pass

    async def run(self, unit: Unit[int]) -> int:
        self.store.append(unit.id, json.dumps({"id": unit.id, "v": unit.params * 2}))
        return unit.params * 2


def _key(line: str) -> str | None:
    try:
        return str(json.loads(line)["id"])
    except (ValueError, KeyError):
        return None


def test_jsonl_units_drop_a_torn_line_and_finish_in_unit_order(tmp_path: Path) -> None:
    import asyncio

    path = tmp_path / "out.jsonl"
    path.write_text('{"id": "3", "v": 6}\n{"id": "1", "v": 2}\n{"id": "3", "v": 9}\n{"id": "0')
    stage = EchoStage(JsonlUnits(path, _key), 5)
    assert [u.id for u in pending(stage)] == ["0", "2", "4"]
    seen: list[int] = []
    results = asyncio.run(AsyncExecutor(2).map(stage, pending(stage), on_result=seen.append))
    assert results == [0, 4, 8] and sorted(seen) == [0, 4, 8]
    stage.store.finish([u.id for u in stage.units()])
    assert [json.loads(line)["id"] for line in path.read_text().splitlines()] == list("01234")
    assert json.loads(path.read_text().splitlines()[3])["v"] == 6  # the first line of an id wins
