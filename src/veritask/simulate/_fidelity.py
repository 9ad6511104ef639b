"""Fidelity of a simulated environment against the real one, on certified witnesses.

Each task's witness is replayed side by side: every call goes to the SQLite environment and to
the simulator, which sees the real history (teacher forcing, so one wrong answer does not
corrupt the next comparisons). Per call: agreement on accept/reject; on the error code and the
violated rule when both reject; on the returned fields and on the whole result when both
accept. Then the judge is asked twice per task, on the full witness (the state-certified
outcome: success iff the final state equals s_target) and on an episode with no action (success
iff s_origin already equals s_target), and its verdicts are compared with those outcomes.

The job runs on the pipeline: one unit per task (id = task id), one JSON line per unit in the
records file, the run manifest beside it (``OUT.run.json``), so a killed run resumes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veritask._util import canonical_json, sha256
from veritask.env import Environment, Snapshot, ToolResult
from veritask.model import GenerateConfig, ModelProvider
from veritask.pipeline import AsyncExecutor, JsonlUnits, RunManifest, Unit, pending
from veritask.rollout import TaskSource
from veritask.simulate._simenv import SimSession, observation_payload
from veritask.task import TaskPackage

ASPECTS = ("accept_reject", "error_code", "rule", "fields", "values")


def _fields(result: Any) -> Any:
    """The field names of a result (and of its rows, for a query)."""
    if not isinstance(result, dict):
        return None
    rows = result.get("rows")
    row_keys = sorted({k for r in rows for k in r}) if isinstance(rows, list) and rows else []
    return [sorted(result), row_keys]


def compare(real: ToolResult, sim: ToolResult) -> dict[str, bool]:
    """Which aspects a simulated result agrees on (aspects that do not apply are left out)."""
    out = {"accept_reject": real.ok == sim.ok}
    if not real.ok and not sim.ok and real.error and sim.error:
        out["error_code"] = real.error.code == sim.error.code
        out["rule"] = real.error.violated_rule == sim.error.violated_rule
    if real.ok and sim.ok:
        out["fields"] = _fields(real.result) == _fields(sim.result)
        out["values"] = canonical_json(real.result) == canonical_json(sim.result)
    return out


async def _replay(
    session: SimSession, env: Environment, package: TaskPackage
) -> list[dict[str, Any]]:
    calls = []
    for witness in package.witness:
        real = env.call(witness.tool, witness.args)
        sim = await session.simulate(witness.tool, witness.args)
        session.history[-1] = (witness.tool, witness.args, observation_payload(real))
        calls.append({"tool": witness.tool, "agree": compare(real, sim)})
    return calls


def _conversation(package: TaskPackage, env_calls: Sequence[tuple[Any, Any]]) -> list[Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": package.task_description}]
    for n, (witness, payload) in enumerate(env_calls):
        call_id = f"call_{n}"
        fn = {"name": witness.tool, "arguments": json.dumps(witness.args)}
        messages.append({"role": "assistant", "tool_calls": [{"id": call_id, "function": fn}]})
        messages.append({"role": "tool", "tool_call_id": call_id, "content": json.dumps(payload)})
    return messages


@dataclass
class FidelityStage:
    """One unit per task: the side-by-side replay and the two judgements."""

    source: TaskSource
    provider: ModelProvider
    config: GenerateConfig
    store: JsonlUnits | None = None
    name: str = "simulate-fidelity"
    results: dict[str, dict[str, Any]] = field(default_factory=dict)

    def units(self) -> Sequence[Unit[TaskPackage]]:
        """One unit per task, in dataset order."""
        return [Unit(p.id, p) for p in self.source.packages]

    def done(self, unit: Unit[TaskPackage]) -> bool:
        """True when the records file holds the task."""
        return unit.id in self.results or (self.store is not None and unit.id in self.store)

    def setup(self) -> None:
        """Nothing to build (the task source caches compiled domains)."""

    async def run(self, unit: Unit[TaskPackage]) -> dict[str, Any]:
        """Replay one task's witness on both environments and judge two episodes."""
        package = unit.params
        task = self.source.episode_task(package)
        session = SimSession(package, task.domain, task.origin, self.provider, self.config)
        with Environment(task.domain, task.origin) as env:
            calls = await _replay(session, env, package)
            reached = env.distance(Snapshot(task.target, task.domain.layout)) == 0
            done = [(w, h[2]) for w, h in zip(package.witness, session.history, strict=True)]
        untouched = task.origin == task.target or _same_state(task.domain, task.origin, task.target)
        full = await session.judge(_conversation(package, done))
        empty = await session.judge(_conversation(package, []))
        record = {
            "task_id": package.id,
            "calls": calls,
            "unusable": session.unusable,
            "judge": [
                {"episode": "witness", "certified": reached, "judged": full.success},
                {"episode": "no_action", "certified": untouched, "judged": empty.success},
            ],
            "cost": session.usage.cost,
        }
        self.results[unit.id] = record
        if self.store is not None:
            self.store.append(unit.id, json.dumps(record))
        return record


def _same_state(domain: Any, origin: bytes, target: bytes) -> bool:
    with Environment(domain, origin) as env:
        return env.distance(Snapshot(target, domain.layout)) == 0


def _key(line: str) -> str | None:
    try:
        return str(json.loads(line)["task_id"])
    except (json.JSONDecodeError, KeyError, TypeError):
        return None


def _rate(agree: int, total: int) -> dict[str, Any]:
    return {"agree": agree, "total": total, "rate": agree / total if total else None}


def _aspects(calls: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for aspect in ASPECTS:
        seen = [c["agree"][aspect] for c in calls if aspect in c["agree"]]
        out[aspect] = _rate(sum(seen), len(seen))
    return out


def _judge(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    pairs = [(j["certified"], j["judged"]) for r in records for j in r["judge"]]
    tp = sum(1 for c, j in pairs if c and j is True)
    fp = sum(1 for c, j in pairs if not c and j is True)
    fn = sum(1 for c, j in pairs if c and j is not True)
    tn = sum(1 for c, j in pairs if not c and j is not True)
    return {
        "judged": len(pairs),
        "no_verdict": sum(1 for _c, j in pairs if j is None),
        "agreement": _rate(tp + tn, len(pairs))["rate"],
        "precision": tp / (tp + fp) if tp + fp else None,
        "recall": tp / (tp + fn) if tp + fn else None,
        "confusion": {"tp": tp, "fp": fp, "fn": fn, "tn": tn},
    }


def _tool_row(calls: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {"calls": len(calls), **_aspects(calls)}


def fidelity_report(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The report over per-task records: overall and per-tool agreement, and the judge's."""
    calls = [c for r in records for c in r["calls"]]
    tools = sorted({c["tool"] for c in calls})
    return {
        "tasks": len(records),
        "calls": len(calls),
        "unusable_observations": sum(r["unusable"] for r in records),
        "overall": _aspects(calls),
        "per_tool": {t: _tool_row([c for c in calls if c["tool"] == t]) for t in tools},
        "judge": _judge(records),
        "cost": sum(r["cost"] for r in records),
    }


async def measure_fidelity(
    source: TaskSource,
    provider: ModelProvider,
    *,
    model: str,
    config: GenerateConfig | None = None,
    out: Path | None = None,
    concurrency: int = 4,
) -> dict[str, Any]:
    """Replay every task of ``source`` through the simulator and the real environment.

    Args:
        source: A certified dataset.
        provider: The simulator and judge model.
        model: The model's spec, recorded in the run manifest's config.
        config: Sampling settings.
        out: Per-task records (JSONL, resumable); the manifest goes to ``OUT.run.json``.
        concurrency: Tasks at once.

    Returns:
        The :func:`fidelity_report` over all tasks.
    """
    stage = FidelityStage(source, provider, config or GenerateConfig())
    units = stage.units()
    if out is not None:
        manifest_config = {
            "dataset": sha256(source.dataset.manifest.read_bytes()),
            "model": model,
            "config": repr(stage.config),
        }
        manifest = RunManifest(stage.name, manifest_config, [u.id for u in units])
        manifest.open(out.with_name(out.name + ".run.json"), where=str(out), grow=True)
        stage.store = JsonlUnits(out, _key)
    await AsyncExecutor(concurrency).map(stage, pending(stage))
    records = []
    for unit in units:
        record = stage.results.get(unit.id)
        if record is None and stage.store is not None and unit.id in stage.store:
            record = json.loads(stage.store.lines[unit.id])
        if record is not None:
            records.append(record)
    if stage.store is not None:
        stage.store.finish([u.id for u in units])
    return fidelity_report(records)


def run_fidelity(source: TaskSource, provider: ModelProvider, **options: Any) -> dict[str, Any]:
    """:func:`measure_fidelity` from synchronous code."""
    return asyncio.run(measure_fidelity(source, provider, **options))
