"""Hand-built task packages of the ``mock`` domain, for tests that need a package with exactly
the description, witness and user they state."""

from __future__ import annotations

from typing import Any

from veritask.env import Environment
from veritask.task import TaskDescription, TaskPackage, UserProfile, WitnessCall

ZERO_HASH = "0" * 64


def witness_of(env: Environment, calls: list[tuple[str, dict[str, Any]]]) -> list[WitnessCall]:
    """Run ``calls`` on ``env`` in order; each as a witness call with its result or error."""
    witness = []
    for tool, args in calls:
        got = env.call(tool, args).to_json()
        witness.append(
            WitnessCall(
                tool=tool, args=args, ok=got["ok"], result=got["result"], error=got["error"]
            )
        )
    return witness


def hand_built(
    task: TaskDescription, witness: list[WitnessCall], user: str | UserProfile, **fields: Any
) -> TaskPackage:
    """A ``mock`` package for ``task`` and ``witness``. A user given by id is a rookie of that
    name; the rest defaults to id ``t``, zero hashes, L1, no tags or rules, seed 0, generator
    ``test``; ``fields`` override any of it."""
    profile = (
        user
        if isinstance(user, UserProfile)
        else UserProfile(user_id=user, name=user, archetype="rookie")
    )
    data: dict[str, Any] = {
        "id": "t",
        "domain": "mock",
        "spec_hash": ZERO_HASH,
        "policy": ZERO_HASH,
        "task": task,
        "task_description": task.render(),
        "user_profile": profile,
        "origin": ZERO_HASH,
        "target": ZERO_HASH,
        "witness": witness,
        "difficulty": "L1",
        "tags": [],
        "rules_exercised": [],
        "boundary_hits": 0,
        "seed": 0,
        "generator": "test",
    }
    data.update(fields)
    return TaskPackage(**data)
