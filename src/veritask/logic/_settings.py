"""The settings of the gate run and of the evolution loop, one frozen object each.

:func:`~veritask.logic.run_gates` and :func:`~veritask.logic.run_gates_async` take a
:class:`GateSettings`; :func:`~veritask.logic.evolve` and :func:`~veritask.logic.evolve_async`
take an :class:`EvolveSettings`. The sync and async forms share these objects and one
implementation. The objects hold plain values only (no ledgers, no providers), so a run's
settings can be recorded and compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from veritask.logic._registry import DirLike
from veritask.model import GenerateConfig

DEFAULT_PROBES = (1, 3, 5, 5, 7)
"""Blind-review probe difficulties (SSLogic's released pipeline)."""
DEFAULT_REVIEW_DIFFICULTIES = (1, 5, 10)
"""Difficulties of the samples the quality reviewer sees."""


@dataclass(frozen=True)
class GateSettings:
    """How the gates run on one family (see :func:`~veritask.logic.run_gates_async`).

    Attributes:
        n: Blind solver samples per instance.
        tau: Right answers that confirm an instance.
        difficulties: Blind-review probe difficulties.
        attempts: Fresh instances a probe may use before it counts as not confirmed.
        per_level: Instances per difficulty for Gate 1 static.
        consensus_per_level: Instances per difficulty for the consensus check.
        review_difficulties: Difficulties of the samples the quality reviewer sees.
        seed: Seed of every instance the gates make.
        budget_us: Gate 1's runtime budget per instance (default 2000 us, plus 1000 us per
            sandbox call for family files).
        short_circuit: Skip the model stages once a stage failed.
        config: Sampling settings for model calls.
        review_code_calls: ``run_python`` calls the quality reviewer may make, its code run in
            the OS sandbox with the family importable (0: the reviewer only reads).
        blind_code_calls: ``run_python`` calls each blind solver may make, in a sandbox of its
            own where the family is not importable (0: solvers answer from text alone).
    """

    n: int = 5
    tau: int = 3
    difficulties: tuple[int, ...] = DEFAULT_PROBES
    attempts: int = 3
    per_level: int = 100
    consensus_per_level: int = 20
    review_difficulties: tuple[int, ...] = DEFAULT_REVIEW_DIFFICULTIES
    seed: int = 0
    budget_us: float | None = None
    short_circuit: bool = True
    config: GenerateConfig | None = None
    review_code_calls: int = 0
    blind_code_calls: int = 0

    def __post_init__(self) -> None:
        if min(self.review_code_calls, self.blind_code_calls) < 0:
            raise ValueError("review_code_calls and blind_code_calls must be 0 or more")

    def recorded(self) -> dict[str, Any]:
        """The settings a gate record keeps, in the record's key order (JSON-ready;
        the code-call budgets only when a reviewer may run code, so records made without the
        tool keep their bytes)."""
        budgets = {
            "review_code_calls": self.review_code_calls,
            "blind_code_calls": self.blind_code_calls,
        }
        tool = {k: v for k, v in budgets.items() if v}
        return {
            "n": self.n,
            "tau": self.tau,
            "difficulties": list(self.difficulties),
            "attempts": self.attempts,
            "per_level": self.per_level,
            "consensus_per_level": self.consensus_per_level,
            "review_difficulties": list(self.review_difficulties),
            "seed": self.seed,
            **tool,
        }


@dataclass(frozen=True)
class EvolveSettings:
    """How one evolution run goes (see :func:`~veritask.logic.evolve_async`).

    Attributes:
        out_dir: Where an accepted family is written (also searched for taken ids).
        t_max: Rounds at most (the first proposes, the others refine).
        playbook_path: Where the playbook is loaded from and saved to (default
            ``<out_dir>/playbook.json``).
        playbook_limit: The playbook's bound.
        seed: Seed of the sample and gate instances.
        extra_validators: Independent validators the builder writes per round.
        gates: Gate settings. The gates run with this object's ``seed`` and ``config``; setting
            a different seed or config on ``gates`` itself is an error.
        families_dirs: More family-file directories (seed lookup, taken ids).
        config: Sampling settings for every model call.
        rounds_dir: Where a plain copy of each round's record is also written as
            ``<round id>.json`` (not copied when None; the run directory always holds the
            records).
        run_dir: The run directory: the run manifest and each committed round with the state
            the next round starts from, so a killed run resumes after its last committed round
            (default ``<out_dir>/runs/<seed family>``).
        curator: Who curates the playbook after each round: ``rules`` (fixed lessons, no model
            call) or ``model`` (the run's model, with the round's evidence; see ``_curate``).
    """

    out_dir: str | Path
    t_max: int = 3
    playbook_path: str | Path | None = None
    playbook_limit: int = 20
    seed: int = 0
    extra_validators: int = 2
    gates: GateSettings = field(default_factory=GateSettings)
    families_dirs: tuple[DirLike, ...] = ()
    config: GenerateConfig | None = None
    rounds_dir: str | Path | None = None
    run_dir: str | Path | None = None
    curator: Literal["rules", "model"] = "rules"

    def __post_init__(self) -> None:
        if self.curator not in ("rules", "model"):
            raise ValueError(f"curator must be 'rules' or 'model', got {self.curator!r}")
        own = (self.gates.seed, self.gates.config)
        if own not in ((0, None), (self.seed, self.config)):
            raise ValueError(
                "set seed and config on EvolveSettings; its gates use them "
                f"(gates have seed={self.gates.seed}, config={self.gates.config!r})"
            )

    @property
    def out(self) -> Path:
        """``out_dir`` as a path."""
        return Path(self.out_dir)

    @property
    def playbook_file(self) -> Path:
        """The playbook's path (``playbook_path`` or ``<out_dir>/playbook.json``)."""
        if self.playbook_path is not None:
            return Path(self.playbook_path)
        return self.out / "playbook.json"

    @property
    def search_dirs(self) -> list[DirLike]:
        """Family-file directories for the seed lookup and taken ids: ``families_dirs``, then
        ``out_dir``."""
        return [*self.families_dirs, self.out]

    def run_dir_for(self, seed_family: str) -> Path:
        """The run directory of evolving ``seed_family`` (``run_dir``, or
        ``<out_dir>/runs/<seed family>``)."""
        if self.run_dir is not None:
            return Path(self.run_dir)
        return self.out / "runs" / seed_family

    def gate_settings(self) -> GateSettings:
        """The gate settings of a round: ``gates`` with this run's seed and config."""
        return replace(self.gates, seed=self.seed, config=self.config)
