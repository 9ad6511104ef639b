"""Reading trajectories and writing SFT exports as JSONL."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from veritask._util import read_text
from veritask.export._chat import dumps
from veritask.export._sft import to_hf_row, to_openai_row, to_sharegpt_row
from veritask.export._user import user_views
from veritask.simulate import schema_variants
from veritask.task import TaskPackage, Trajectory, atomic_write

SftFormat = Literal["hf", "openai", "sharegpt"]
SftRole = Literal["assistant", "user"]
ROLES: tuple[SftRole, ...] = ("assistant", "user")
"""Whose turns are the targets: the assistant's, or the user simulator's."""
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
    role: SftRole = "assistant",
    packages: Mapping[str, TaskPackage] | None = None,
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
        role: ``"assistant"`` (the assistant's turns are the targets) or ``"user"``: user-
            simulator data from verified trajectories only, whatever ``verified_only`` says
            (see :func:`veritask.export.user_view`; needs ``packages``).
        packages: The tasks of the trajectories by id (the hidden user profiles), for ``user``.

    Returns:
        The number of rows written.

    Raises:
        ValueError: For an unknown format or role, a user export without packages, or a
            verified trajectory whose task is not among ``packages``.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown SFT format {fmt!r}; choose from {sorted(FORMATS)}")
    if role not in ROLES:
        raise ValueError(f"unknown SFT role {role!r}; choose from {list(ROLES)}")
    selected = verified(trajs) if verified_only or role == "user" else list(trajs)
    if role == "user":
        if packages is None:
            raise ValueError("a user-simulator export needs the tasks (the dataset)")
        selected = user_views(selected, packages)
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
    lines = read_text(Path(path), what=str(path)).splitlines()
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(Trajectory.model_validate_json(line))
        except ValidationError as exc:
            raise ValueError(f"{path}:{lineno}: not a trajectory: {exc}") from exc
    return out
