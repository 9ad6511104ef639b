"""The evolution engine: streams of synthesize/verify/reflect iterations, committed and resumed."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from veritask.pipeline import EvolutionStage, RunConflict, Step, run_evolution


class Killed(Exception):
    """Stands for a kill between two units."""


@dataclass
class Counting:
    """Each stream doubles a number until it passes a bound (then the stream is finished)."""

    bound: int = 20
    kill_at: str | None = None
    name: str = "counting"
    opening: str | None = "start"
    played: list[str] = field(default_factory=list)
    committed: list[str] = field(default_factory=list)
    resumed_at: dict[str, int] = field(default_factory=dict)

    def streams(self) -> list[str]:
        return ["a", "b"]

    def iterations(self) -> int:
        return 4

    def unit_id(self, stream: str, k: int) -> str:
        return f"{stream}.{k}"

    def dump(self, artifact: dict[str, Any]) -> str:
        return json.dumps(artifact, sort_keys=True) + "\n"

    async def open(self) -> dict[str, Any]:
        return {"a": 3, "b": 5}

    def start(self, stream: str, opening: dict[str, Any] | None) -> int:
        assert opening is not None
        return int(opening[stream])

    async def synthesize(self, stream: str, k: int, state: int) -> int:
        unit = self.unit_id(stream, k)
        if unit == self.kill_at:
            raise Killed(unit)
        self.played.append(unit)
        return state * 2

    async def verify(self, stream: str, k: int, state: int, candidates: int) -> bool:
        return candidates > self.bound

    async def reflect(self, stream: str, k: int, state: int, verified: bool) -> Step[int]:
        return Step({"value": state * 2}, state * 2, final=verified)

    def failed(self, stream: str, k: int, state: int) -> None:
        self.committed.append(f"failed {stream}.{k}")

    def restore(self, stream: str, k: int, artifact: dict[str, Any], state: int) -> Step[int]:
        value = int(artifact["value"])
        return Step(artifact, value, final=value > self.bound)

    def commit(self, stream: str, k: int, step: Step[int]) -> None:
        self.committed.append(self.unit_id(stream, k))

    def resumed(self, stream: str, k: int, step: Step[int]) -> None:
        self.resumed_at[stream] = k


def _files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.iterdir())}


def test_streams_run_in_order_stop_when_final_and_resume_to_the_same_bytes(
    tmp_path: Path,
) -> None:
    whole = Counting()
    ran = asyncio.run(run_evolution(EvolutionStage(whole, tmp_path / "whole"), {"x": 1}))
    # a: 3 -> 6 -> 12 -> 24 (final); b: 5 -> 10 -> 20 -> 40 (final)
    assert whole.played == ["a.0", "a.1", "a.2", "b.0", "b.1", "b.2"]
    assert whole.committed == whole.played and (ran.units, ran.resumed) == (9, 0)
    killed = Counting(kill_at="b.1")
    with pytest.raises(Killed):
        asyncio.run(run_evolution(EvolutionStage(killed, tmp_path / "cut"), {"x": 1}))
    assert killed.committed[-1] == "failed b.1"
    again = Counting()
    ran = asyncio.run(run_evolution(EvolutionStage(again, tmp_path / "cut"), {"x": 1}))
    assert again.played == ["b.1", "b.2"] and again.resumed_at == {"a": 2, "b": 0}
    assert ran.resumed == 6  # the opening, a's four units (a.3 is past its final), b.0
    assert _files(tmp_path / "cut") == _files(tmp_path / "whole")


def test_a_rerun_with_another_config_is_refused(tmp_path: Path) -> None:
    asyncio.run(run_evolution(EvolutionStage(Counting(), tmp_path), {"x": 1}))
    with pytest.raises(RunConflict):
        asyncio.run(run_evolution(EvolutionStage(Counting(), tmp_path), {"x": 2}))
