"""Tasks from fused trajectories (AgentSkiller section 3.11): ``fuse ... --tasks N``.

Each source service runs its own path pipeline into a validated task registry; pairs of
write paths of two services are fused with a joining motivation and pruned ex ante when a
segment is not in its registry (:mod:`veritask.blueprint._trajectory_fusion`). The survivors
are the kept paths of the fused spec's tasks stage (:func:`path_tasks`): each is grounded on a
fused scene, executed, and becomes a package only when its witness replays, reaches its target
and is grounded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from veritask._cli.blueprint_path_tasks import path_tasks
from veritask._cli.blueprint_run_cmds import checked_counts
from veritask.blueprint import Fusion
from veritask.blueprint._trajectory_fusion import fuse_trajectories, registry
from veritask.policy import DomainSpec

Json = dict[str, Any]


def fused_trajectory_tasks(
    sources: list[DomainSpec],
    fusion: Fusion,
    fused_path: Path,
    n: int,
    seed: int,
    out: Path,
    max_pairs: int,
) -> Json:
    """Make up to ``n`` packages of the fused spec at ``fused_path`` from fused trajectories.

    Returns:
        The fusion counts (``candidates``, ``pruned_ex_ante``, ``unmapped``, ``fused``), then
        ``asked``, ``tasks``, ``from_fused`` (packages whose trajectory is recorded),
        ``trajectories_used`` (distinct trajectories that made a package), ``discarded`` and
        what ``check`` finds (``certified``, ``grounded``, ``spoiler_free``).
    """
    registries = [registry(spec, seed) for spec in sources]
    trajectories, counts = fuse_trajectories(
        fusion.spec, registries, fusion.person, seed, max_pairs
    )
    made = path_tasks(fused_path, [t.to_path() for t in trajectories], n, seed, out)
    return {
        **counts,
        "registries": {r.service: len(r.kept) for r in registries},
        "asked": n,
        "tasks": made["tasks"],
        "from_fused": made["from_paths"],
        "trajectories_used": len(set(made["origins"].values())),
        "discarded": made["discarded"],
        **checked_counts(out),
    }


__all__ = ["fused_trajectory_tasks"]
