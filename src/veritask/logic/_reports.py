"""The gate records: what each gate found, and every gate's outcome for one family.

:class:`ReviewReport` (Gate 1's LLM quality review), :class:`ConsensusReport` (Gate 2a) and
:class:`BlindReport` (Gate 2b) each say whether the family passed, list the problems and give a
JSON-ready dict; :class:`FamilyGateRecord` holds them all, with the static report, the settings
and the costs, and is what ``gates.json`` records. The pass rules are in design note 0009.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from veritask.logic._gates import GateReport
from veritask.logic._records import write_json

MIN_CONFIRMED_SHARE = 0.6
"""Share of probes that must be confirmed (SSLogic: 3 of 5)."""


CRITERIA = (
    "well_posed",
    "unambiguous_answer_format",
    "answer_derivable",
    "difficulty_scaling",
    "no_leaked_answer",
)
"""What the quality reviewer judges."""


class CriterionVerdict(BaseModel):
    """The reviewer's verdict on one criterion."""

    passed: bool
    reason: str


class QualityVerdict(BaseModel):
    """The reviewer's structured answer."""

    well_posed: CriterionVerdict
    unambiguous_answer_format: CriterionVerdict
    answer_derivable: CriterionVerdict
    difficulty_scaling: CriterionVerdict
    no_leaked_answer: CriterionVerdict
    verdict: Literal["pass", "fail"]
    feedback: str = ""


@dataclass
class ReviewReport:
    """Gate 1's LLM quality review of a family."""

    family: str
    criteria: dict[str, dict[str, Any]] = field(default_factory=dict)
    verdict: str | None = None
    feedback: str = ""
    error: str | None = None
    samples: list[dict[str, int]] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] | None = None
    """The reviewer's ``run_python`` calls (None when it had no code tool)."""

    @property
    def passed(self) -> bool:
        """True when the reviewer passed the family on every criterion."""
        return (
            self.error is None
            and self.verdict == "pass"
            and all(c["passed"] for c in self.criteria.values())
        )

    @property
    def problems(self) -> list[str]:
        """One line per failed criterion (or the reason there is no verdict)."""
        if self.error is not None:
            return [f"no usable review: {self.error}"]
        out = [f"{name}: {c['reason']}" for name, c in self.criteria.items() if not c["passed"]]
        if self.verdict != "pass" and not out:
            out.append(f"reviewer verdict {self.verdict}: {self.feedback}")
        return out

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "passed": self.passed,
            "verdict": self.verdict,
            "criteria": self.criteria,
            "feedback": self.feedback,
            "error": self.error,
            "samples": self.samples,
            **({} if self.tool_calls is None else {"tool_calls": self.tool_calls}),
        }


@dataclass
class ConsensusReport:
    """Gate 2's consensus check: the validator pool's majority vote over many instances."""

    family: str
    validators: list[str] = field(default_factory=list)
    instances: int = 0
    disagreeing: int = 0
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    split: str = "consensus"
    seed: int = 0

    @property
    def passed(self) -> bool:
        """True when every instance was made and every validator agreed on each."""
        return self.instances > 0 and not self.disagreeing and not self.errors

    @property
    def problems(self) -> list[str]:
        """One line per disagreement or error (the first few)."""
        out = list(self.errors)
        for d in self.disagreements:
            where = f"d={d['difficulty']} #{d['index']}"
            if d["majority"] is None:
                out.append(f"{where}: no strict majority among {d['answers']}")
            else:
                out.append(
                    f"{where}: {', '.join(d['minority'])} disagree with the majority "
                    f"{d['majority']!r}: {d['answers']}"
                )
        if self.instances == 0 and not out:
            out.append("no instance was checked")
        return out

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "passed": self.passed,
            "validators": self.validators,
            "instances": self.instances,
            "split": self.split,
            "seed": self.seed,
            "disagreeing": self.disagreeing,
            "disagreements": self.disagreements,
            "errors": self.errors,
        }


@dataclass
class BlindReport:
    """Gate 2's blind review: probes, attempts and counts per difficulty."""

    family: str
    n: int
    tau: int
    attempts: int
    probes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def required(self) -> int:
        """How many probes must be confirmed (3 of 5 by default)."""
        return math.ceil(MIN_CONFIRMED_SHARE * len(self.probes))

    @property
    def by_difficulty(self) -> dict[int, dict[str, int]]:
        """Per difficulty: probes, confirmed probes, attempts, right answers, answers asked."""
        out: dict[int, dict[str, int]] = {}
        for probe in self.probes:
            row = out.setdefault(
                probe["difficulty"],
                {"probes": 0, "confirmed": 0, "attempts": 0, "correct": 0, "asked": 0},
            )
            row["probes"] += 1
            row["confirmed"] += int(probe["confirmed"])
            row["attempts"] += len(probe["attempts"])
            row["correct"] += sum(a["correct"] for a in probe["attempts"])
            row["asked"] += sum(a["asked"] for a in probe["attempts"])
        return dict(sorted(out.items()))

    @property
    def passed(self) -> bool:
        """Every difficulty bucket has a confirmed probe and enough probes are confirmed."""
        if not self.probes:
            return False
        confirmed = sum(p["confirmed"] for p in self.probes)
        buckets = self.by_difficulty.values()
        return confirmed >= self.required and all(b["confirmed"] > 0 for b in buckets)

    @property
    def problems(self) -> list[str]:
        """One line per unconfirmed probe."""
        out = []
        for probe in self.probes:
            if not probe["confirmed"]:
                counts = ", ".join(
                    a.get("error") or f"{a['correct']}/{a['asked']}" for a in probe["attempts"]
                )
                out.append(
                    f"probe {probe['slot']} (d={probe['difficulty']}) not confirmed after "
                    f"{len(probe['attempts'])} instance(s): {counts} right (need {self.tau})"
                )
        return out

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (``by_difficulty`` keys are difficulties as strings)."""
        return {
            "passed": self.passed,
            "n": self.n,
            "tau": self.tau,
            "attempts": self.attempts,
            "required": self.required,
            "rule": (
                f"a probe is confirmed when >= {self.tau} of {self.n} blind answers are right on "
                f"one of up to {self.attempts} fresh instances; the family passes when every "
                f"difficulty has a confirmed probe and >= {self.required} of "
                f"{len(self.probes)} probes are confirmed"
            ),
            "by_difficulty": {str(d): row for d, row in self.by_difficulty.items()},
            "probes": self.probes,
        }


@dataclass
class FamilyGateRecord:
    """Every gate's outcome for one family, as recorded next to a family file.

    ``mode`` is ``static`` without a model provider (Gate 1 static and consensus only) and
    ``full`` with one (the family must then also pass the quality review and blind review).
    """

    family: str
    version: str
    mode: Literal["static", "full"]
    static: GateReport
    consensus: ConsensusReport | None = None
    review: ReviewReport | None = None
    blind: BlindReport | None = None
    skipped: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    costs: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """True when every gate the mode requires ran and passed."""
        base = self.static.passed and self.consensus is not None and self.consensus.passed
        if self.mode == "static":
            return base
        return bool(
            base and self.review and self.review.passed and self.blind and self.blind.passed
        )

    @property
    def problems(self) -> list[str]:
        """Every problem found, each prefixed with its gate."""
        out = [f"gate1_static: {p}" for p in self.static.problems]
        if self.consensus is not None:
            out += [f"consensus: {p}" for p in self.consensus.problems]
        if self.review is not None:
            out += [f"review: {p}" for p in self.review.problems]
        if self.blind is not None:
            out += [f"blind_review: {p}" for p in self.blind.problems]
        return out

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict with no timing figures (the same run gives the same JSON)."""
        static = self.static.to_json()
        static["figures"] = {
            k: v for k, v in static["figures"].items() if k != "mean_us_per_instance"
        }
        static.pop("family", None)
        return {
            "family": self.family,
            "version": self.version,
            "mode": self.mode,
            "passed": self.passed,
            "problems": self.problems,
            "gates": {
                "gate1_static": static,
                "consensus": None if self.consensus is None else self.consensus.to_json(),
                "review": None if self.review is None else self.review.to_json(),
                "blind_review": None if self.blind is None else self.blind.to_json(),
            },
            "skipped": self.skipped,
            "settings": self.settings,
            "costs": self.costs,
        }

    def write(self, path: str | Path) -> Path:
        """Write :meth:`to_json` as indented JSON (atomically); returns the path."""
        return write_json(path, self.to_json())
