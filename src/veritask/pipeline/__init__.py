"""Floor 7: every long job as stages over units with stable ids.

- ``Stage`` / ``AsyncStage``: a job's units, which are done, a per-worker ``setup`` and
  ``run(unit)`` writing the unit's artifact atomically.
- ``RunManifest``: the run's config, its hash and the unit ids, stored with the outputs; a rerun
  with another config raises ``RunConflict`` naming the fields that differ; a second live
  process writing the same output raises ``RunInUse`` at once (an OS lock, ``release_runs``).
- Executors: ``InProcessExecutor`` and ``ProcessPoolExecutor`` behind ``Executor.map``;
  ``AsyncExecutor`` for stages that await model calls; ``RayExecutor`` for both (a
  ``RecordingStage``'s async units run on Ray actors while the caller writes their results).
- ``run_batch``: the rollout job (episodes on ``veritask.rollout``'s loop); ``run_rollout``
  also returns the errored episodes.
- ``Evolution`` / ``EvolutionStage`` / ``run_evolution``: the self-evolving loop (streams of
  iterations that synthesize, verify and reflect, each committed as a unit) that ``evolve`` and
  ``logic evolve`` both run on.

Producers (``synth``, ``logic``, ``evolve``) define their own stages on top of this package.
"""

from veritask.pipeline._evolution import (
    Evolution,
    EvolutionRun,
    EvolutionStage,
    Step,
    run_evolution,
)
from veritask.pipeline._executors import (
    AsyncExecutor,
    Executor,
    InProcessExecutor,
    ProcessPoolExecutor,
    executor_for,
    remote_executor,
    use_executor,
)
from veritask.pipeline._jsonl import JsonlUnits
from veritask.pipeline._manifest import (
    RunConflict,
    RunInUse,
    RunManifest,
    config_diff,
    config_hash,
    release_runs,
)
from veritask.pipeline._ray import RayExecutor
from veritask.pipeline._rollout import (
    RolloutReport,
    RolloutStage,
    errors_path,
    rollout_config,
    run_batch,
    run_rollout,
)
from veritask.pipeline._stage import (
    AsyncStage,
    RecordingStage,
    Stage,
    Unit,
    pending,
    unit_ids,
)

__all__ = [
    "AsyncExecutor",
    "AsyncStage",
    "Evolution",
    "EvolutionRun",
    "EvolutionStage",
    "Executor",
    "InProcessExecutor",
    "JsonlUnits",
    "ProcessPoolExecutor",
    "RayExecutor",
    "RecordingStage",
    "RolloutReport",
    "RolloutStage",
    "RunConflict",
    "RunInUse",
    "RunManifest",
    "Stage",
    "Step",
    "Unit",
    "config_diff",
    "config_hash",
    "errors_path",
    "executor_for",
    "pending",
    "release_runs",
    "remote_executor",
    "rollout_config",
    "run_batch",
    "run_evolution",
    "run_rollout",
    "unit_ids",
    "use_executor",
]
