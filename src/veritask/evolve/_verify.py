"""Plan-driven selection of candidates, and the deterministic task verification.

Selection scores each certified candidate by the synthesis plan's weights (its archetype, its
difficulty, the rules it exercises and its tool-use patterns), the plan's tier (the tier the
stream centers on counts double) and its styles (each style the candidate fits counts 1.5
times), and keeps the best ``batch``; a
candidate whose user archetype the plan does not name is not taken. Verification checks each
selected candidate against the evaluation plan: certificate (witness replay), grounded (the text
determines the target), spoiler-free, not a duplicate of an earlier task of the stream,
difficulty in range, enough boundary hits, and per-task checkers that separate s_target from
s_origin. Every failed check is a reason; a candidate passes when there is none.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from veritask.env import Environment
from veritask.evolve._plans import TIERS, EvaluationPlan, SynthesisPlan
from veritask.rollout import TaskSource
from veritask.task import TaskPackage, certify, find_spoilers, grounding, text_keys
from veritask.verify import Checker, CheckerError, make_checkers

TIER_FACTOR = 2.0
"""A candidate at the plan's tier scores this many times more (the tier the stream centers on)."""
STYLE_FACTOR = 1.5
"""A candidate scores this many times more for each of the plan's styles it fits."""
TERSE_WORDS = 150
"""A description of at most this many words fits a terse style, a longer one a detailed style
(symbolic descriptions of the built-in domains run 94-358 words, median about 160)."""
_TERSE = {"terse", "short", "concise", "brief"}
_DETAILED = {"detailed", "verbose", "long", "elaborate"}


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z][a-z0-9_-]+", text.lower()) if len(w) >= 3}


def style_fits(style: str, pkg: TaskPackage) -> bool:
    """Whether a candidate fits a style: ``terse`` (or short, concise, brief) and ``detailed``
    (or verbose, long, elaborate) by the description's length; any other style when one of its
    words is one of the candidate's tags, its user archetype or a word of its description."""
    words = _words(style)
    length = len(pkg.task_description.split())
    if words & _TERSE:
        return length <= TERSE_WORDS
    if words & _DETAILED:
        return length > TERSE_WORDS
    own = {t.lower() for t in pkg.tags} | {pkg.user_profile.archetype}
    return bool(words & (own | _words(pkg.task_description)))


def score_parts(plan: SynthesisPlan, pkg: TaskPackage) -> dict[str, float]:
    """The factors of a candidate's score, by name (their product is the score)."""
    rules = sum(plan.rules.get(r, 0.0) for r in pkg.rules_exercised)
    patterns = sum(plan.tool_patterns.get(t, 0.0) for t in pkg.tags)
    fits = sum(1 for style in plan.styles if style_fits(style, pkg))
    return {
        "archetype": plan.archetypes.get(pkg.user_profile.archetype, 0.0),
        "difficulty": plan.difficulty_mix.get(pkg.difficulty, 0.0),
        "rules": 1 + rules,
        "patterns": 1 + patterns,
        "tier": TIER_FACTOR if pkg.difficulty == plan.tier else 1.0,
        "styles": STYLE_FACTOR**fits,
    }


def candidate_score(plan: SynthesisPlan, pkg: TaskPackage) -> float:
    """How well a candidate fits the plan (0: its user archetype is not in the plan): the
    product of :func:`score_parts`, so a plan's tier and styles change what is selected."""
    return math.prod(score_parts(plan, pkg).values())


def select(plan: SynthesisPlan, candidates: list[TaskPackage]) -> list[TaskPackage]:
    """The ``plan.batch`` best-scoring candidates with a positive score (ties: by id)."""
    scored = [(candidate_score(plan, p), p.id, p) for p in candidates]
    ranked = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))
    return [p for _, _, p in ranked[: plan.batch]]


@dataclass
class TaskVerdict:
    """The outcome of task verification for one candidate."""

    task_id: str
    reasons: list[dict[str, str]] = field(default_factory=list)
    checkers: list[Checker] = field(default_factory=list)
    rationale: str = ""
    """A model's rationale, when a model verified too."""

    @property
    def passed(self) -> bool:
        """True when no check failed."""
        return not self.reasons

    def fail(self, kind: str, detail: str) -> None:
        """Record one failed check."""
        self.reasons.append({"kind": kind, "detail": detail})

    def to_json(self) -> dict[str, Any]:
        """The verdict as stored in an iteration's artifact (checkers are stored apart)."""
        return {
            "id": self.task_id,
            "verdict": "PASS" if self.passed else "FAIL",
            "reasons": self.reasons,
            "rationale": self.rationale,
        }


def _difficulty(plan: EvaluationPlan, pkg: TaskPackage, verdict: TaskVerdict) -> None:
    low, high = TIERS.index(plan.min_difficulty), TIERS.index(plan.max_difficulty)
    if not low <= TIERS.index(pkg.difficulty) <= high:
        verdict.fail(
            "difficulty",
            f"{pkg.difficulty} outside {plan.min_difficulty}..{plan.max_difficulty}",
        )
    if pkg.boundary_hits < plan.min_boundary_hits:
        verdict.fail("difficulty", f"{pkg.boundary_hits} boundary hits < {plan.min_boundary_hits}")


def _state_checks(
    env: Environment, pkg: TaskPackage, origin: bytes, target: bytes, verdict: TaskVerdict
) -> None:
    cert = certify(pkg, env, origin, target)
    if not cert.certified:
        verdict.fail("certificate", cert.detail or str(cert.kind))
        return
    try:
        verdict.checkers = make_checkers(env, origin, target)
    except CheckerError as exc:
        verdict.fail("checker", str(exc))


def verify_task(
    source: TaskSource,
    pkg: TaskPackage,
    plan: EvaluationPlan,
    seen: dict[tuple[str, str], str],
) -> TaskVerdict:
    """Run the deterministic checks of ``plan`` on one candidate.

    Args:
        source: The candidate's dataset (its states and domain).
        pkg: The candidate.
        plan: The evaluation plan (thresholds, whether grounding is required).
        seen: (origin, target) -> id of the tasks the stream already holds; a passing
            candidate is added.
    """
    verdict = TaskVerdict(pkg.id)
    compiled = source.domain(pkg.domain)
    env = Environment(compiled)
    try:
        origin, target = (
            source.dataset.read_state(pkg.origin),
            source.dataset.read_state(pkg.target),
        )
        _state_checks(env, pkg, origin, target, verdict)
        if plan.require_grounded:
            for problem in grounding(pkg, env, origin)[:3]:
                verdict.fail("ungrounded", problem.describe())
        keys = text_keys(compiled.spec, origin)
        spoilers = find_spoilers(
            pkg.task_description, compiled.spec, keys, pkg.user_profile.known_ids
        )
        if spoilers:
            verdict.fail("spoiler", "; ".join(spoilers))
    finally:
        env.close()
    _difficulty(plan, pkg, verdict)
    pair = (pkg.origin, pkg.target)
    if pair in seen:
        verdict.fail("duplicate", f"same origin and target as {seen[pair]!r}")
    if verdict.passed:
        seen[pair] = pkg.id
    return verdict


def unverified(source: TaskSource, pkg: TaskPackage) -> TaskVerdict:
    """The verdict without task verification (an ablation): a pass, with checkers when the
    candidate's diff yields them."""
    verdict = TaskVerdict(pkg.id)
    env = Environment(source.domain(pkg.domain))
    try:
        origin, target = (
            source.dataset.read_state(pkg.origin),
            source.dataset.read_state(pkg.target),
        )
        verdict.checkers = make_checkers(env, origin, target)
    except CheckerError:
        verdict.checkers = []
    finally:
        env.close()
    return verdict
