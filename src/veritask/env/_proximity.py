"""LOGIGEN's state proximity P_t (section 4.2): how close a state is to s_target, in [0, 1].

It lives next to the DIFF distance it is computed from, so that a session over a task (floor 4)
and the rewards (floor 5) share one definition.
"""

from __future__ import annotations

DEFAULT_EPS = 1e-6
"""Default epsilon in the proximity denominator ``D0 + eps``."""


def proximity(distance: int, d0: int, eps: float = DEFAULT_EPS) -> float:
    """State proximity P_t = 1 - min(DIFF(s_t, s_target), D0) / (D0 + eps).

    ``D0 = DIFF(s_origin, s_target)`` (``Trajectory.initial_distance``). P_t = 1 exactly at the
    target; at (or beyond) the starting distance P_t = 1 - D0 / (D0 + eps), i.e. 0 up to eps.

    Refusal tasks have D0 = 0 (the right outcome is to change nothing), where the formula
    degenerates to 1 for every state. There P is defined as 1.0 when ``distance == 0`` and
    0.0 otherwise: any change away from s_origin (= s_target) loses all proximity.

    Args:
        distance: DIFF(s_t, s_target), >= 0.
        d0: DIFF(s_origin, s_target), >= 0.
        eps: Smoothing term of the denominator, >= 0.

    Returns:
        P_t in [0, 1].

    Raises:
        ValueError: On a negative distance, D0 or eps.
    """
    if distance < 0 or d0 < 0:
        raise ValueError(f"distances must be >= 0, got distance={distance}, d0={d0}")
    if eps < 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    if d0 == 0:
        return 1.0 if distance == 0 else 0.0
    return 1.0 - min(distance, d0) / (d0 + eps)
