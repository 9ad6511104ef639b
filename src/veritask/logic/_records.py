"""What the evolution loop keeps: round and run records, and their atomic writes.

Every file the loop writes goes through :func:`write_json` or :func:`write_text`, which write
a temporary file and rename it, so a killed run leaves the old file or the new one, never a
torn one. The JSON carries no timings, so the same seed and the same model answers give the
same bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from veritask._util import atomic_write_text


def write_json(path: str | Path, data: Any) -> Path:
    """Write ``data`` as indented JSON (UTF-8, a final newline) atomically; returns the path."""
    return write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` as UTF-8 atomically, creating the parent folders; returns the path."""
    out = Path(path)
    atomic_write_text(out, text)
    return out


def round_id(seed_family: str, round_no: int) -> str:
    """The stable id of round ``round_no`` (1-based) of evolving ``seed_family``."""
    return f"{seed_family}.round{round_no}"


@dataclass
class RoundRecord:
    """What happened in one round."""

    round: int
    stage: Literal["propose", "refine"]
    outcome: Literal["accepted", "rejected", "error"]
    family: str | None = None
    problems: list[str] = field(default_factory=list)
    gates: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "round": self.round,
            "stage": self.stage,
            "outcome": self.outcome,
            "family": self.family,
            "problems": self.problems,
            "gates": self.gates,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RoundRecord:
        """Read back :meth:`to_json` (or :meth:`unit_json`; the id is not kept)."""
        gates = data.get("gates")
        return cls(
            round=int(data["round"]),
            stage=data["stage"],
            outcome=data["outcome"],
            family=None if data.get("family") is None else str(data["family"]),
            problems=[str(p) for p in data.get("problems", [])],
            gates=None if gates is None else dict(gates),
        )

    def unit_json(self, seed_family: str) -> dict[str, Any]:
        """:meth:`to_json` with the round's stable id and seed family first."""
        return {
            "id": round_id(seed_family, self.round),
            "seed_family": seed_family,
            **self.to_json(),
        }


def write_round(rounds_dir: str | Path, seed_family: str, record: RoundRecord) -> Path:
    """Write one round's :meth:`RoundRecord.unit_json` as ``<rounds_dir>/<round id>.json``."""
    name = round_id(seed_family, record.round)
    return write_json(Path(rounds_dir) / f"{name}.json", record.unit_json(seed_family))


@dataclass
class EvolutionResult:
    """The outcome of evolving one seed family."""

    seed_family: str
    accepted: bool = False
    family: str | None = None
    path: str | None = None
    gates_path: str | None = None
    rounds: list[RoundRecord] = field(default_factory=list)
    costs: dict[str, Any] = field(default_factory=dict)
    playbook: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "seed_family": self.seed_family,
            "accepted": self.accepted,
            "family": self.family,
            "path": self.path,
            "gates_path": self.gates_path,
            "rounds": [r.to_json() for r in self.rounds],
            "costs": self.costs,
            "playbook": self.playbook,
        }


def write_accepted(
    out_dir: Path, family_id: str, source: str, gates: dict[str, Any]
) -> tuple[Path, Path]:
    """Write an accepted family as ``<id>.py`` and its gate record as ``<id>.gates.json``."""
    path = write_text(out_dir / f"{family_id}.py", source)
    gates_path = write_json(out_dir / f"{family_id}.gates.json", gates)
    return path, gates_path
