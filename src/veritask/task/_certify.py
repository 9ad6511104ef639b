"""The certificate of a task package: its witness, replayed on s_origin, reproduces s_target.

This is the one definition used by generation (symbolic and LLM mode), ``veritask check`` and
every producer: a package is *certified* when every witness call behaves as recorded (the ok
flag; for rejections the error code and violated rule; for accepted calls the result payload)
and the state after the last call is at distance 0 from s_target.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from veritask.env import Environment, Snapshot, StateDiff, ToolResult
from veritask.task._package import TaskPackage, WitnessCall

CertificateFailure = Literal["replay", "diff"]


@dataclass(frozen=True)
class Certificate:
    """The outcome of :func:`certify`.

    Attributes:
        certified: True when the witness replays as recorded and ends at s_target.
        kind: What failed (``replay``: a call behaved differently; ``diff``: the end state is
            not s_target); None when certified.
        detail: A short explanation of the failure; None when certified.
    """

    certified: bool
    kind: CertificateFailure | None = None
    detail: str | None = None


def _normalize(value: Any) -> Any:
    """A value as it reads back from JSON (tuples become lists, keys become strings)."""
    return json.loads(json.dumps(value))


def outcome_mismatch(expected: WitnessCall, got: ToolResult) -> str | None:
    """How a replayed call's outcome differs from the recorded one, or None when it matches.

    Args:
        expected: The call as the witness recorded it.
        got: What the environment answered on replay.

    Returns:
        A short explanation, or None when the ok flag agrees and, for rejected calls, the error
        code and violated rule agree; for accepted calls, the result payload agrees.
    """
    if expected.ok != got.ok:
        seen = "accepted" if got.ok else f"rejected ({got.error.code if got.error else '?'})"
        return f"recorded {'accepted' if expected.ok else 'rejected'}, replay {seen}"
    if got.ok:
        same = expected.result == got.result  # equal values stay equal read back from JSON
        if not same and _normalize(expected.result) != _normalize(got.result):
            return f"result differs: recorded {expected.result!r}, replay {got.result!r}"
        return None
    recorded = expected.error or {}
    actual = got.error
    assert actual is not None
    for name, value in (("code", actual.code), ("violated_rule", actual.violated_rule)):
        if recorded.get(name) != value:
            return f"error {name} differs: recorded {recorded.get(name)!r}, replay {value!r}"
    return None


def replay_witness(env: Environment, origin: bytes, witness: Sequence[WitnessCall]) -> str | None:
    """Restore ``origin`` into ``env`` and replay the witness; the first mismatch, or None."""
    env.restore(origin)
    for i, call in enumerate(witness):
        problem = outcome_mismatch(call, env.call(call.tool, call.args))
        if problem is not None:
            return f"call {i} {call.tool}: {problem}"
    return None


def replay(env: Environment, origin: bytes, witness: Sequence[WitnessCall]) -> bool:
    """Replay a witness from ``origin``; True when every call behaves as recorded."""
    return replay_witness(env, origin, witness) is None


def describe_diff(d: StateDiff) -> str:
    """One line saying how far a state is from s_target, table by table."""
    parts = [f"{name} +{len(t.added)} -{len(t.removed)}" for name, t in d.tables.items()]
    return f"final state is {d.distance} row(s) from s_target ({', '.join(parts)})"


def certify(
    witness: TaskPackage | Sequence[WitnessCall],
    env: Environment,
    origin: bytes,
    target: bytes | Snapshot,
) -> Certificate:
    """Certify a package (or a bare witness): replay it on ``origin`` and diff with ``target``.

    Args:
        witness: The package, or its witness calls before a package exists (generation
            certifies candidates before projecting them).
        env: An environment of the package's domain; it is restored to ``origin`` and left in
            the replayed state, so callers reuse one environment across packages.
        origin: The s_origin image.
        target: The s_target image (or a snapshot of it).

    Returns:
        The certificate; a target image that cannot be read is a ``diff`` failure.
    """
    calls = witness.witness if isinstance(witness, TaskPackage) else witness
    problem = replay_witness(env, origin, calls)
    if problem is not None:
        return Certificate(False, "replay", problem)
    return end_certificate(env, target)


def end_certificate(env: Environment, target: bytes | Snapshot) -> Certificate:
    """The certificate of a witness already replayed into ``env`` (every call as recorded):
    certified when the state is at distance 0 from ``target``.

    A target whose tracked changes are known already (a snapshot taken from an environment) is
    diffed on the rows either side touched, which costs less than copying out the whole image.
    Otherwise a state byte-identical to the target holds the same rows, so it is at distance 0
    without a diff; any other state is diffed (equal rows can sit in other pages)."""
    snap = target if isinstance(target, Snapshot) else Snapshot(target, env.domain.layout)
    if snap.known_tracked is None and env.image() == snap.data:
        return Certificate(True)
    try:
        d = env.diff(snap)
    except sqlite3.Error as exc:
        return Certificate(False, "diff", f"s_target is not readable: {exc}")
    if d.distance:
        return Certificate(False, "diff", describe_diff(d))
    return Certificate(True)
