"""Reading trajectories and writing SFT exports as JSONL."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from veritask.export._chat import dumps
from veritask.export._sft import to_hf_row, to_openai_row, to_sharegpt_row
from veritask.simulate import schema_variants
from veritask.task import Trajectory, atomic_write

SftFormat = Literal["hf", "openai", "sharegpt"]
FORMATS: dict[str, Callable[[Trajectory], dict[str, Any]]] = {
    "hf": to_hf_row,
    "openai": to_openai_row,
    "sharegpt": to_sharegpt_row,
}
"""Export format name -> row builder."""


def is_verified(traj: Trajectory) -> bool:
    """True when the trajectory was verified with reward 1 (None: not verified)."""
    return traj.reward is not None and math.isclose(traj.reward, 1.0)


def verified(trajs: Iterable[Trajectory]) -> list[Trajectory]:
    """The trajectories whose reward is 1; unverified ones (reward None) are left out.

    Args:
        trajs: Trajectories, verified or not.

    Returns:
        Those with reward 1, in input order.
    """
    return [t for t in trajs if is_verified(t)]


def export_sft(
    trajs: Iterable[Trajectory],
    fmt: SftFormat,
    out: Path,
    verified_only: bool = False,
    *,
    perturb_schemas: int = 0,
    perturb_seed: int = 0,
) -> int:
    """Write one SFT row per trajectory to a JSONL file (atomically).

    Args:
        trajs: The trajectories.
        fmt: ``"hf"`` (``to_hf_row``), ``"openai"`` (``to_openai_row``) or ``"sharegpt"``
            (``to_sharegpt_row``).
        out: The JSONL file to write; parent directories are created.
        verified_only: Keep only trajectories with reward 1.
        perturb_schemas: Also write this many schema-perturbed variants after each trajectory
            (tools and parameters renamed and reordered, observation noise; see
            :func:`veritask.simulate.perturb_trajectory`).
        perturb_seed: The seed of the variants (the same seed gives the same bytes).

    Returns:
        The number of rows written.

    Raises:
        ValueError: For an unknown format.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown SFT format {fmt!r}; choose from {sorted(FORMATS)}")
    selected = verified(trajs) if verified_only else list(trajs)
    if perturb_schemas:
        selected = schema_variants(selected, perturb_schemas, perturb_seed)
    body = "".join(dumps(FORMATS[fmt](t)) + "\n" for t in selected)
    atomic_write(Path(out), body.encode("utf-8"))
    return len(selected)


def read_trajectories(path: str | Path) -> list[Trajectory]:
    """Load a trajectories JSONL file (one ``Trajectory`` per line; blank lines skipped).

    Args:
        path: The file.

    Returns:
        The trajectories in file order.

    Raises:
        ValueError: Naming the line of the first invalid trajectory.
    """
    out: list[Trajectory] = []
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(Trajectory.model_validate_json(line))
        except ValidationError as exc:
            raise ValueError(f"{path}:{lineno}: not a trajectory: {exc}") from exc
    return out
