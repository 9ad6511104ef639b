"""Verification of trajectories against their tasks: end states, actions, communicated facts.

Each component returns a ``ComponentResult`` that explains itself (missing gold rows, unmatched
gold actions with their closest candidate, facts never stated); ``verify`` evaluates exactly the
components of a task's ``reward_basis`` and multiplies their scores.
"""

from veritask.verify._actions import actions
from veritask.verify._checkers import (
    Checker,
    CheckerError,
    evaluate_checkers,
    make_checkers,
    partial_credit,
)
from veritask.verify._communicate import communicate
from veritask.verify._compare import values_match
from veritask.verify._composite import COMPONENTS, verify
from veritask.verify._confirm import confirmation, is_confirmation, unconfirmed_writes
from veritask.verify._judge import TAXONOMY, Finding, JudgeAnswer, JudgeVerdict, judge, transcript
from veritask.verify._metrics import pass_at_k, pass_hat_k, pass_hat_k_scored, pass_hat_k_table
from veritask.verify._prune import PruneStep, is_write, prune, required_calls
from veritask.verify._state import gold_diff_for, state_exact, state_subset
from veritask.verify._verdict import ComponentResult, Verdict, VerificationError

__all__ = [
    "COMPONENTS",
    "TAXONOMY",
    "Checker",
    "CheckerError",
    "ComponentResult",
    "Finding",
    "JudgeAnswer",
    "JudgeVerdict",
    "PruneStep",
    "Verdict",
    "VerificationError",
    "actions",
    "communicate",
    "confirmation",
    "evaluate_checkers",
    "gold_diff_for",
    "is_confirmation",
    "is_write",
    "judge",
    "make_checkers",
    "partial_credit",
    "pass_at_k",
    "pass_hat_k",
    "pass_hat_k_scored",
    "pass_hat_k_table",
    "prune",
    "required_calls",
    "state_exact",
    "state_subset",
    "transcript",
    "unconfirmed_writes",
    "values_match",
    "verify",
]
