"""Fidelity of a simulated environment against the real one, on certified witnesses and on the
faithful agent's trajectories.

Two kinds of trajectories are replayed per task (``replays``): the certified witness, and the
episode the faithful agent (``veritask eval --agent faithful``) plays on the real environment,
which also makes the calls a witness never makes (reads, refused writes, retries). Each is
replayed side by side: every call goes to the SQLite environment (fresh, at s_origin) and to the
simulator, which sees the real history (teacher forcing, so one wrong answer does not corrupt
the next comparisons). Per call: agreement on accept/reject; on the error code and the violated
rule when both reject; on the returned fields and on the whole result when both accept; and on
the whole call (every aspect that applies). Then the judge is asked per task on the full witness
(the state-certified outcome: success iff the final state equals s_target), on an episode with
no action (success iff s_origin already equals s_target) and on the faithful agent's episode
(success iff its verified reward is 1), and its verdicts are compared with those outcomes.

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

from veritask._util import canonical_json, parse_json, sha256
from veritask.env import Environment, Snapshot, ToolResult
from veritask.model import GenerateConfig, ModelProvider
from veritask.pipeline import AsyncExecutor, JsonlUnits, RunManifest, Unit, pending
from veritask.rollout import EpisodeTask, RoleFactory, TaskSource, run_episode, score
from veritask.simulate._simenv import SimSession, observation_payload
from veritask.task import TaskPackage

ASPECTS = ("call", "accept_reject", "error_code", "rule", "fields", "values")
"""What a simulated call is compared on; ``call`` is every aspect that applies at once."""
REPLAYS = ("witness", "faithful")
"""The trajectories replayed per task."""


def _fields(result: Any) -> Any:
    """The field names of a result (and of its rows, for a query)."""
    if not isinstance(result, dict):
        return None
    rows = result.get("rows")
    row_keys = sorted({k for r in rows for k in r}) if isinstance(rows, list) and rows else []
    return [sorted(result), row_keys]


def compare(real: ToolResult, sim: ToolResult) -> dict[str, bool]:
    """Which aspects a simulated result agrees on (aspects that do not apply are left out;
    ``call`` is true when every one that applies is)."""
    out = {"accept_reject": real.ok == sim.ok}
    if not real.ok and not sim.ok and real.error and sim.error:
        out["error_code"] = real.error.code == sim.error.code
        out["rule"] = real.error.violated_rule == sim.error.violated_rule
    if real.ok and sim.ok:
        out["fields"] = _fields(real.result) == _fields(sim.result)
        out["values"] = canonical_json(real.result) == canonical_json(sim.result)
    return {"call": all(out.values()), **out}


async def _replay(
    session: SimSession, env: Environment, calls: Sequence[tuple[str, Any]], replay: str
) -> list[dict[str, Any]]:
    """Each call on both sides; the simulator's history then holds the real observation."""
    out = []
    for tool, args in calls:
        real = env.call(tool, args)
        sim = await session.simulate(tool, args)
        session.history[-1] = (tool, args, observation_payload(real))
        out.append({"tool": tool, "replay": replay, "agree": compare(real, sim)})
    return out


def _conversation(package: TaskPackage, env_calls: Sequence[tuple[Any, Any]]) -> list[Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": package.task_description}]
    for n, ((tool, args), payload) in enumerate(env_calls):
        call_id = f"call_{n}"
        fn = {"name": tool, "arguments": json.dumps(args)}
        messages.append({"role": "assistant", "tool_calls": [{"id": call_id, "function": fn}]})
        messages.append({"role": "tool", "tool_call_id": call_id, "content": json.dumps(payload)})
    return messages


@dataclass
class FidelityStage:
    """One unit per task: the side-by-side replays and the judgements."""

    source: TaskSource
    provider: ModelProvider
    config: GenerateConfig
    store: JsonlUnits | None = None
    name: str = "simulate-fidelity"
    replays: tuple[str, ...] = REPLAYS
    results: dict[str, dict[str, Any]] = field(default_factory=dict)

    def units(self) -> Sequence[Unit[TaskPackage]]:
        """One unit per task, in dataset order."""
        return [Unit(p.id, p) for p in self.source.packages]

    def done(self, unit: Unit[TaskPackage]) -> bool:
        """True when the records file holds the task."""
        return unit.id in self.results or (self.store is not None and unit.id in self.store)

    def setup(self) -> None:
        """Nothing to build (the task source caches compiled domains)."""

    def _session(self, task: EpisodeTask) -> SimSession:
        return SimSession(task.package, task.domain, task.origin, self.provider, self.config)

    async def _side_by_side(
        self, task: EpisodeTask, calls: Sequence[tuple[str, Any]], replay: str
    ) -> tuple[SimSession, list[dict[str, Any]], bool]:
        """A replay on a fresh environment and a fresh simulator: the session (its history
        holds the real observations), the per-call records, and whether s_target was reached."""
        session = self._session(task)
        with Environment(task.domain, task.origin) as env:
            records = await _replay(session, env, calls, replay)
            reached = env.distance(Snapshot(task.target, task.domain.layout)) == 0
        return session, records, reached

    async def _witness(self, task: EpisodeTask) -> tuple[SimSession, list[Any], list[Any]]:
        package = task.package
        calls = [(w.tool, w.args) for w in package.witness]
        session, records, reached = await self._side_by_side(task, calls, "witness")
        payloads = [h[2] for h in session.history]
        full = await session.judge(_conversation(package, list(zip(calls, payloads, strict=True))))
        judged = [{"episode": "witness", "certified": reached, "judged": full.success}]
        return session, records, judged

    async def _faithful(
        self, task: EpisodeTask
    ) -> tuple[SimSession, list[Any], list[Any], dict[str, Any]]:
        agent, user = RoleFactory(agent="faithful").build(task, 0, 0)
        traj = score(await run_episode(task, agent, user), self.source, task.package)
        calls = [(s.tool, s.args if s.args is not None else s.raw_arguments) for s in traj.steps]
        session, records, _reached = await self._side_by_side(task, calls, "faithful")
        verdict = await session.judge(traj.messages)
        certified = traj.reward == 1.0
        judged = [{"episode": "faithful", "certified": certified, "judged": verdict.success}]
        episode = {"reward": traj.reward, "steps": len(traj.steps), "stop": traj.stop_reason}
        return session, records, judged, episode

    async def run(self, unit: Unit[TaskPackage]) -> dict[str, Any]:
        """Replay one task's trajectories on both environments and judge its episodes."""
        package = unit.params
        task = self.source.episode_task(package)
        sessions, calls, judge = [], [], []
        record: dict[str, Any] = {"task_id": package.id}
        if "witness" in self.replays:
            session, records, judged = await self._witness(task)
            sessions.append(session)
            calls += records
            judge += judged
        if "faithful" in self.replays:
            session, records, judged, record["faithful"] = await self._faithful(task)
            sessions.append(session)
            calls += records
            judge += judged
        untouched = task.origin == task.target or _same_state(task.domain, task.origin, task.target)
        empty = self._session(task)
        sessions.append(empty)
        verdict = await empty.judge(_conversation(package, []))
        judge.append({"episode": "no_action", "certified": untouched, "judged": verdict.success})
        record.update(
            calls=calls,
            unusable=sum(s.unusable for s in sessions),
            judge=judge,
            cost=sum(s.usage.cost for s in sessions),
        )
        self.results[unit.id] = record
        if self.store is not None:
            self.store.append(unit.id, json.dumps(record))
        return record


def _same_state(domain: Any, origin: bytes, target: bytes) -> bool:
    with Environment(domain, origin) as env:
        return env.distance(Snapshot(target, domain.layout)) == 0


def _key(line: str) -> str | None:
    try:
        return str(parse_json(line)["task_id"])
    except (ValueError, KeyError, TypeError):
        return None


def _rate(agree: int, total: int) -> dict[str, Any]:
    return {"agree": agree, "total": total, "rate": agree / total if total else None}


def _aspects(calls: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for aspect in ASPECTS:
        seen = [c["agree"][aspect] for c in calls if aspect in c["agree"]]
        out[aspect] = _rate(sum(seen), len(seen))
    return out


def _confusion(pairs: Sequence[tuple[bool, bool | None]]) -> dict[str, Any]:
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


def _judge(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The judge's precision and recall of "success" against the certified outcome, over all
    episodes and per kind of episode."""
    judged = [j for r in records for j in r["judge"]]
    episodes = sorted({j["episode"] for j in judged})
    return {
        **_confusion([(j["certified"], j["judged"]) for j in judged]),
        "per_episode": {
            e: _confusion([(j["certified"], j["judged"]) for j in judged if j["episode"] == e])
            for e in episodes
        },
    }


def _tool_row(calls: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {"calls": len(calls), **_aspects(calls)}


def _faithful_outcomes(records: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """How the faithful agent did on the real environment (None when it did not play)."""
    played = [r["faithful"] for r in records if "faithful" in r]
    if not played:
        return None
    solved = sum(1 for f in played if f["reward"] == 1.0)
    return {"episodes": len(played), "solved": solved, "steps": sum(f["steps"] for f in played)}


def fidelity_report(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The report over per-task records: agreement overall, per tool and per replayed kind of
    trajectory; the faithful agent's outcomes; the judge's precision and recall."""
    calls = [c for r in records for c in r["calls"]]
    tools = sorted({c["tool"] for c in calls})
    replays = [r for r in REPLAYS if any(c.get("replay", "witness") == r for c in calls)]
    return {
        "tasks": len(records),
        "calls": len(calls),
        "unusable_observations": sum(r["unusable"] for r in records),
        "overall": _aspects(calls),
        "per_tool": {t: _tool_row([c for c in calls if c["tool"] == t]) for t in tools},
        "per_replay": {
            r: _tool_row([c for c in calls if c.get("replay", "witness") == r]) for r in replays
        },
        "faithful": _faithful_outcomes(records),
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
    replays: Sequence[str] = REPLAYS,
) -> dict[str, Any]:
    """Replay every task of ``source`` through the simulator and the real environment.

    Args:
        source: A certified dataset.
        provider: The simulator and judge model.
        model: The model's spec, recorded in the run manifest's config.
        config: Sampling settings.
        out: Per-task records (JSONL, resumable); the manifest goes to ``OUT.run.json``.
        concurrency: Tasks at once.
        replays: Which trajectories to replay (a subset of :data:`REPLAYS`).

    Returns:
        The :func:`fidelity_report` over all tasks.
    """
    unknown = sorted(set(replays) - set(REPLAYS))
    if unknown or not replays:
        raise ValueError(f"replays must be a non-empty subset of {REPLAYS}, not {list(replays)}")
    chosen = tuple(r for r in REPLAYS if r in replays)
    stage = FidelityStage(source, provider, config or GenerateConfig(), replays=chosen)
    units = stage.units()
    if out is not None:
        manifest_config = {
            "dataset": sha256(source.dataset.manifest.read_bytes()),
            "model": model,
            "config": repr(stage.config),
            "replays": list(chosen),
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
