"""Verification of trajectories against their tasks: end states, actions, communicated facts.

Each component returns a ``ComponentResult`` that explains itself (missing gold rows, unmatched
gold actions with their closest candidate, facts never stated); ``verify`` evaluates exactly the
components of a task's ``reward_basis`` and multiplies their scores.
"""

from veritask.verify._actions import actions
from veritask.verify._communicate import communicate
from veritask.verify._compare import values_match
from veritask.verify._composite import COMPONENTS, verify
from veritask.verify._metrics import pass_at_k, pass_hat_k, pass_hat_k_table
from veritask.verify._state import gold_diff_for, state_exact, state_subset
from veritask.verify._verdict import ComponentResult, Verdict, VerificationError

__all__ = [
    "COMPONENTS",
    "ComponentResult",
    "Verdict",
    "VerificationError",
    "actions",
    "communicate",
    "gold_diff_for",
    "pass_at_k",
    "pass_hat_k",
    "pass_hat_k_table",
    "state_exact",
    "state_subset",
    "values_match",
    "verify",
]
