"""Export a dataset directory as tau2-bench tasks.

The output is a JSON array of objects with the field names of tau2-bench's ``Task`` model
(``src/tau2/data_model/tasks.py`` in sierra-research/tau2-bench)::

    {"id", "description": {"purpose", "relevant_policies", "notes"},
     "user_scenario": {"persona", "instructions": {"domain", "reason_for_call", "known_info",
                                                   "unknown_info", "task_instructions"}},
     "ticket", "initial_state": {"initialization_data": {"agent_data", "user_data"},
                                 "initialization_actions", "message_history"},
     "evaluation_criteria": {"actions": [{"action_id", "requestor", "name", "arguments"}],
                             "env_assertions", "communicate_info", "nl_assertions",
                             "reward_basis"}}

Mapping choices:

* ``evaluation_criteria.actions`` are the witness's successful write calls (``insert_*`` /
  ``update_*``, or the spec's write procedures: an imported τ²-bench domain's tools keep
  τ²-bench's names and arguments), in order; queries and rejected calls are left out. A refusal
  task has none.
* A package made on an imported τ²-bench domain (generator ``veritask-procedural/...``) starts
  from the domain's seed state, which is τ²-bench's own database: its ``initial_state`` is
  null, so τ²-bench's runner and evaluator start from the database they load themselves.
* ``reward_basis`` maps veritask basis names to tau2's: ``state_exact`` -> ``DB``,
  ``actions`` -> ``ACTION``, ``communicate`` -> ``COMMUNICATE`` (also ``env_assertions`` ->
  ``ENV_ASSERTION``, ``nl_assertions`` -> ``NL_ASSERTION``).
* tau2 initializes its environments from JSON database patches, not SQLite images, so the
  initial state cannot be expressed natively. ``initial_state.initialization_data.agent_data``
  carries one veritask-specific key, ``"veritask_state"``: ``{"domain", "origin",
  "state_path"}``, where ``state_path`` is ``states/<origin>.sqlite`` relative to the dataset
  directory. A tau2 environment adapter for veritask domains must load that image; stock tau2
  domains would merge the key into their database and ignore it.
* tau2's models are pydantic models with the default ``extra="ignore"``: unknown keys load
  without error but are dropped. veritask metadata (difficulty, tags, origin/target sha, ...) is
  therefore not put under an extra key but serialized as JSON into ``description.notes``, which
  survives a load/dump round trip.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from veritask._util import atomic_write
from veritask.policy import DomainSpec
from veritask.task._dataset import DatasetDir, load_dataset
from veritask.task._package import TaskDescription, TaskPackage, WitnessCall

REWARD_BASIS = {
    "state_exact": "DB",
    "actions": "ACTION",
    "communicate": "COMMUNICATE",
    "env_assertions": "ENV_ASSERTION",
    "nl_assertions": "NL_ASSERTION",
}
"""veritask reward basis name -> tau2 ``RewardType`` value."""
_WRITE_PREFIXES = ("insert_", "update_")


def _reward_basis(pkg: TaskPackage) -> list[str]:
    unknown = [b for b in pkg.reward_basis if b not in REWARD_BASIS]
    if unknown:
        raise ValueError(f"{pkg.id}: reward basis {unknown} has no tau2 equivalent")
    return [REWARD_BASIS[b] for b in pkg.reward_basis]


def _actions(witness: Sequence[WitnessCall], procedures: frozenset[str]) -> list[dict[str, Any]]:
    writes = [
        c for c in witness if c.ok and (c.tool.startswith(_WRITE_PREFIXES) or c.tool in procedures)
    ]
    return [
        {
            "action_id": f"{i}_{call.tool}",
            "requestor": "assistant",
            "name": call.tool,
            "arguments": dict(call.args),
        }
        for i, call in enumerate(writes)
    ]


def _task_instructions(task: TaskDescription) -> str:
    lines = ["Complete these steps in order:"]
    for i, sub in enumerate(task.sub_goals, 1):
        lines.append(f"{i}. {sub.title}: {sub.request}")
        lines += [f"   - If this happens: {t}" for t in sub.reactive_triggers]
    if task.false_beliefs:
        lines.append("You believe the following (hold on to it until the agent shows otherwise):")
        lines += [f"- {b}" for b in task.false_beliefs]
    return "\n".join(lines)


def _tau2_domain(pkg: TaskPackage) -> str:
    """τ²-bench's name of the domain (``airline`` for an imported ``tau2_airline``)."""
    if pkg.generator.startswith(PROCEDURAL_GENERATOR):
        return pkg.domain.removeprefix("tau2_")
    return pkg.domain


def _user_scenario(pkg: TaskPackage) -> dict[str, Any]:
    task = pkg.task
    return {
        "persona": None,
        "instructions": {
            "domain": _tau2_domain(pkg),
            "reason_for_call": task.total_goal,
            "known_info": task.who_you_are,
            "unknown_info": "\n".join(task.cognitive_gaps) or None,
            "task_instructions": _task_instructions(task),
        },
    }


def _write_procedures(spec: DomainSpec | None) -> frozenset[str]:
    """The names of the spec's procedures that write."""
    if spec is None:
        return frozenset()
    return frozenset(p.name for p in spec.procedures if p.access == "write")


PROCEDURAL_GENERATOR = "veritask-procedural/"
"""Generator prefix of packages made on a procedural (imported τ²-bench) domain."""


def _initial_state(pkg: TaskPackage) -> dict[str, Any] | None:
    if pkg.generator.startswith(PROCEDURAL_GENERATOR):
        return None  # the domain's seed state: τ²-bench's own database
    return {
        "initialization_data": {
            "agent_data": {
                "veritask_state": {
                    "domain": pkg.domain,
                    "origin": pkg.origin,
                    "state_path": f"states/{pkg.origin}.sqlite",
                }
            },
            "user_data": None,
        },
        "initialization_actions": None,
        "message_history": None,
    }


def _relevant_policies(pkg: TaskPackage, spec: DomainSpec | None) -> str | None:
    lines = []
    for rule_id in pkg.rules_exercised:
        message = next((r.message for r in spec.rules if r.id == rule_id), None) if spec else None
        lines.append(f"{rule_id}: {message}" if message else rule_id)
    return "\n".join(lines) or None


def _notes(pkg: TaskPackage) -> str:
    meta = {
        "id": pkg.id,
        "domain": pkg.domain,
        "spec_hash": pkg.spec_hash,
        "policy": pkg.policy,
        "origin": pkg.origin,
        "target": pkg.target,
        "difficulty": pkg.difficulty,
        "tags": pkg.tags,
        "rules_exercised": pkg.rules_exercised,
        "boundary_hits": pkg.boundary_hits,
        "refusal": pkg.refusal,
        "reward_basis": pkg.reward_basis,
        "seed": pkg.seed,
        "generator": pkg.generator,
    }
    return json.dumps({"veritask": meta}, sort_keys=True)


def _purpose(pkg: TaskPackage) -> str:
    kind = "refuse the request" if pkg.refusal else "reach the target database state"
    return f"{pkg.difficulty} {pkg.domain} task ({', '.join(pkg.tags)}): the agent must {kind} within policy."


def to_tau2(pkg: TaskPackage, spec: DomainSpec | None = None) -> dict[str, Any]:
    """One package as a tau2-bench ``Task`` object (see the module docstring for the mapping).

    Args:
        pkg: The package.
        spec: Its domain spec, used to quote the exercised rules in
            ``description.relevant_policies``; rule ids alone when None.

    Returns:
        A JSON-ready dict with tau2's ``Task`` field names.

    Raises:
        ValueError: The package uses a reward basis tau2 has no equivalent for.
    """
    return {
        "id": pkg.id,
        "description": {
            "purpose": _purpose(pkg),
            "relevant_policies": _relevant_policies(pkg, spec),
            "notes": _notes(pkg),
        },
        "user_scenario": _user_scenario(pkg),
        "ticket": None,
        "initial_state": _initial_state(pkg),
        "evaluation_criteria": {
            "actions": _actions(pkg.witness, _write_procedures(spec)),
            "env_assertions": None,
            "communicate_info": [],
            "nl_assertions": None,
            "reward_basis": _reward_basis(pkg),
        },
    }


def _spec(ds: DatasetDir, name: str, cache: dict[str, DomainSpec | None]) -> DomainSpec | None:
    if name not in cache:
        try:
            cache[name] = ds.domain_spec(name)
        except (ValueError, OSError):
            cache[name] = None
    return cache[name]


def export_tau2(root: str | Path, out_path: str | Path) -> int:
    """Write every package of a dataset directory as a JSON array of tau2-bench tasks.

    The SQLite states stay in the dataset directory: each task's
    ``initial_state.initialization_data.agent_data["veritask_state"]["state_path"]`` is relative
    to ``root``, and every origin is materialized there as a whole SQLite file (compact datasets
    keep origins compressed). The file is written atomically.

    Args:
        root: The dataset directory.
        out_path: Where to write the JSON array.

    Returns:
        The number of tasks written.

    Raises:
        DatasetError: The manifest is invalid or refers to missing states or policies.
        ValueError: A package uses a reward basis tau2 has no equivalent for.
    """
    packages = load_dataset(root)
    specs: dict[str, DomainSpec | None] = {}
    ds = DatasetDir(Path(root))
    for origin in sorted({p.origin for p in packages}):
        ds.materialize(origin)
    tasks = [to_tau2(p, _spec(ds, p.domain, specs)) for p in packages]
    body = json.dumps(tasks, indent=2, ensure_ascii=False) + "\n"
    atomic_write(Path(out_path), body.encode("utf-8"))
    return len(tasks)
