"""Trajectory synthesis from seeds (SimAgent, Section 2.1.2 and Appendix C).

A model reads the tool specification, the format rules and one seed trajectory (in the paper's
``HUMAN:`` / ``ASSISTANT:`` / ``FUNCTION_CALL:`` / ``OBSERVATION:`` text format) and writes a new
task with a whole trajectory: calls and the observations it imagines for them. Each answer is
parsed, checked and repaired by the strict checker (:func:`check_turns`), then filtered:

- ``check``: what the checker could not repair (its classes name why);
- ``invalid_tool_use``: no tool call at all, an observation that is not JSON, or one that does
  not fit the tool's return schema;
- ``repetition``: the same call made more than ``max_repeats`` times, or the seed's own task;
- ``consistency``: a model judge finds the observations or the assistant's conclusions
  inconsistent (or gives no verdict).

Accepted answers become :class:`~veritask.task.Trajectory` rows (unverified: ``reward`` None) that
``veritask.export`` writes in every SFT format. The job runs on the pipeline: one unit per
(seed, sample) with a stable id, one JSON record per unit (its answer, issues, reasons, usage),
the run manifest beside it, so a killed run resumes without asking the model again.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veritask._util import (
    canonical_json,
    loads_untrusted,
    parse_json,
    repair_untrusted,
    sha256,
    sha256_text,
)
from veritask.model import CostLedger, GenerateConfig, ModelProvider, Usage
from veritask.pipeline import AsyncExecutor, JsonlUnits, RunManifest, Unit, pending
from veritask.simulate._catalog import ToolCatalog
from veritask.simulate._check import CheckOptions, Issue, check_turns
from veritask.simulate._formats import (
    FormatError,
    Turn,
    iter_records,
    parse_text,
    read_row,
    render_text,
)
from veritask.simulate._simenv import fields_problem
from veritask.task import Trajectory

SYNTH_MARK = "You generate multi-turn conversation data for agent training"
CONSISTENCY_MARK = "You review a synthesized agent trajectory"
FILTERS = ("parse", "check", "invalid_tool_use", "repetition", "consistency")
"""Why an answer is rejected, in the order the filters run."""

_PROMPT = """{mark}. Create a new agent trajectory based on the example below.

## Example trajectory:
{sample}

## Available tools (name, description, parameters, returns):
{tools}

## Format rules (absolute):
1. Keep the exact format of the example: HUMAN:, ASSISTANT:, FUNCTION_CALL: and OBSERVATION:
   blocks, each starting a line.
2. Do NOT write a SYSTEM block: the example's system prompt is kept separately.
3. Use ONLY the tools listed above, with exactly their parameter names and types. Do not
   invent tools or parameters.
4. A FUNCTION_CALL block holds one JSON object {{"name": ..., "arguments": {{...}}}}, optionally
   after brief reasoning (1-3 sentences) in <think> </think>. <think> appears nowhere else.
5. Every FUNCTION_CALL is followed by exactly one OBSERVATION: the tool's JSON result in its
   return format, or {{"error": {{"code": ..., "message": ...}}}} when the call would fail.
6. Write about as many blocks as the example ({blocks}).

## Requirements:
1. A completely NEW task, different from the example, needing similar problem solving.
2. Start directly with a HUMAN message; continue until the task is finished.
3. Observations consistent with the calls, with each other and with the tool descriptions;
   the assistant's statements follow from the observations.

Write the conversation only."""

_JUDGE = f"""{CONSISTENCY_MARK} for training data. Check that every observation is a
plausible result of its call given the tool's description and the earlier observations, that
the assistant's statements and final answer follow from the observations, and that the
assistant does what the user asked.

Answer with one JSON object only:
{{"consistent": true or false, "reason": "..."}}"""

_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n(.*?)\n```\s*$", re.DOTALL)


@dataclass(frozen=True)
class Seed:
    """A seed trajectory: a stable id, its system turn (kept apart) and the other turns."""

    id: str
    system: Turn | None
    turns: tuple[Turn, ...]

    @property
    def task(self) -> str:
        """The first user message (the seed's task)."""
        return next((t.text or "" for t in self.turns if t.role == "user"), "")


def seed_from_turns(turns: Sequence[Turn]) -> Seed:
    """A seed from one trajectory's turns (its id is a hash of their canonical text)."""
    system = next((t for t in turns if t.role == "system"), None)
    rest = tuple(t for t in turns if t.role != "system")
    digest = sha256_text(canonical_json([t.key() for t in turns]))
    return Seed(digest[:12], system, rest)


def load_seeds(path: Path) -> list[Seed]:
    """The seed trajectories of a file in any supported format (rows of no format skipped)."""
    seeds = []
    for _source, record in iter_records(path):
        try:
            seeds.append(seed_from_turns(read_row(record).turns))
        except FormatError:
            continue
    return seeds


@dataclass(frozen=True)
class SynthOptions:
    """How synthesis samples and filters.

    Attributes:
        config: Sampling settings of the synthesizing model (temperature 1.0, as in the paper).
        judge: Run the model-judged consistency filter.
        max_repeats: Most times one call (tool and arguments) may occur in a trajectory.
        check: The checker's settings.
    """

    config: GenerateConfig = field(default_factory=lambda: GenerateConfig(temperature=1.0))
    judge: bool = True
    max_repeats: int = 2
    check: CheckOptions = field(default_factory=CheckOptions)


def synthesis_prompt(seed: Seed, catalog: ToolCatalog) -> list[dict[str, Any]]:
    """The Appendix C prompt for one seed: tool specification, format rules, the example."""
    tools = json.dumps([t.to_json() for t in catalog.tools.values()], ensure_ascii=False)
    blocks = sum(max(1, len(t.calls)) for t in seed.turns)
    text = _PROMPT.format(
        mark=SYNTH_MARK, sample=render_text(_decoded_calls(seed.turns)), tools=tools, blocks=blocks
    )
    return [{"role": "user", "content": text}]


def _decoded_calls(turns: Sequence[Turn]) -> list[Turn]:
    """Copies whose calls show their arguments as objects (chat rows hold JSON text)."""
    out = [t.copy() for t in turns]
    for call in (c for t in out for c in t.calls):
        decoded = _decoded(call.raw) if isinstance(call.raw, str) else call.raw
        if isinstance(decoded, dict):
            call.args = decoded
    return out


def parse_answer(text: str) -> list[Turn]:
    """The turns of a model's text-format answer (a fenced block is unwrapped; a SYSTEM block
    the model wrote anyway is dropped)."""
    body = text.strip()
    match = _FENCE.match(body)
    if match is not None:
        body = match.group(1)
    return [t for t in parse_text(body) if t.role != "system"]


def _decoded(text: str | None) -> Any:
    try:
        return loads_untrusted(text or "")
    except ValueError:
        return None


def invalid_tool_use(turns: Sequence[Turn], catalog: ToolCatalog) -> list[str]:
    """Reasons the trajectory misuses tools: no call, non-JSON or off-schema observations."""
    calls = [c for t in turns for c in t.calls]
    if not calls:
        return ["the trajectory makes no tool call"]
    reasons = []
    answered = [t for t in turns if t.role == "tool"]
    for call, obs in zip(calls, answered, strict=False):
        payload = _decoded(obs.text)
        if not isinstance(payload, dict | list):
            reasons.append(f"the observation of {call.name!r} is not JSON")
        elif not (isinstance(payload, dict) and "error" in payload):
            why = fields_problem(catalog.get(call.name), payload)
            if why is not None:
                reasons.append(f"the observation of {call.name!r}: {why}")
    return reasons


def repetition(turns: Sequence[Turn], seed: Seed, max_repeats: int) -> list[str]:
    """Reasons the trajectory is trivial: a call repeated too often, or the seed's task."""
    counts = Counter(
        (c.name, canonical_json(c.args if c.args is not None else c.raw))
        for t in turns
        for c in t.calls
    )
    reasons = [
        f"call {name!r} made {n} times with the same arguments"
        for (name, _args), n in counts.items()
        if n > max_repeats
    ]
    first = next((t.text or "" for t in turns if t.role == "user"), "")
    if first.strip() and first.strip() == seed.task.strip():
        reasons.append("the task is the seed's own")
    return reasons


def assign_ids(turns: Sequence[Turn], prefix: str) -> list[Turn]:
    """Copies of the turns whose calls and observations carry ids (by position)."""
    out = [t.copy() for t in turns]
    pending_ids: list[str] = []
    number = 0
    for turn in out:
        for call in turn.calls:
            call.call_id = f"{prefix}_{number}"
            pending_ids.append(call.call_id)
            number += 1
        if turn.role == "tool" and pending_ids:
            turn.call_id = pending_ids.pop(0)
    return out


def chat_messages(turns: Sequence[Turn]) -> list[dict[str, Any]]:
    """OpenAI chat messages of checked turns (arguments as JSON text)."""
    messages: list[dict[str, Any]] = []
    for turn in turns:
        message: dict[str, Any] = {"role": turn.role, "content": turn.text}
        if turn.calls:
            message["tool_calls"] = [
                {
                    "id": c.call_id,
                    "type": "function",
                    "function": {
                        "name": c.name,
                        "arguments": json.dumps(c.args or {}, ensure_ascii=False),
                    },
                }
                for c in turn.calls
            ]
        if turn.role == "tool":
            message["tool_call_id"] = turn.call_id
            message["content"] = turn.text or ""
        messages.append(message)
    return messages


@dataclass
class Synthesized:
    """One unit's outcome (its JSON record is what the records file holds)."""

    unit_id: str
    seed: str
    sample: int
    answer: str | None = None
    messages: list[dict[str, Any]] | None = None
    issues: list[Issue] = field(default_factory=list)
    reasons: dict[str, list[str]] = field(default_factory=dict)
    usage: dict[str, Usage] = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        """True when a trajectory passed every filter."""
        return self.messages is not None and not self.reasons

    def to_json(self) -> dict[str, Any]:
        """The unit's record."""
        return {
            "unit_id": self.unit_id,
            "seed": self.seed,
            "sample": self.sample,
            "status": "accepted" if self.accepted else "rejected",
            "reasons": self.reasons,
            "issues": [i.to_json() for i in self.issues],
            "answer": self.answer,
            "messages": self.messages if self.accepted else None,
            "usage": {k: v.model_dump() for k, v in self.usage.items()},
        }


@dataclass
class SynthesisStage:
    """One unit per (seed, sample): ask, parse, check, filter, judge."""

    seeds: Sequence[Seed]
    catalog: ToolCatalog
    provider: ModelProvider
    n: int
    options: SynthOptions = field(default_factory=SynthOptions)
    store: JsonlUnits | None = None
    name: str = "simulate-synthesize"
    results: dict[str, dict[str, Any]] = field(default_factory=dict)

    def units(self) -> Sequence[Unit[tuple[Seed, int]]]:
        """Unit ``i`` takes seed ``i % len(seeds)`` as its ``i // len(seeds)``-th sample, so a
        larger ``n`` keeps the ids of a smaller one."""
        out = []
        for index in range(self.n):
            seed, sample = self.seeds[index % len(self.seeds)], index // len(self.seeds)
            out.append(Unit(f"{seed.id}-{sample}", (seed, sample)))
        return out

    def done(self, unit: Unit[tuple[Seed, int]]) -> bool:
        """True when the records file holds the unit."""
        return unit.id in self.results or (self.store is not None and unit.id in self.store)

    def setup(self) -> None:
        """Nothing to build."""

    async def _ask(self, messages: list[dict[str, Any]], out: Synthesized, module: str) -> str:
        output = await self.provider.generate(messages, None, self.options.config, out.sample)
        out.usage.setdefault(module, Usage()).add(output.usage)
        return output.text

    async def run(self, unit: Unit[tuple[Seed, int]]) -> dict[str, Any]:
        """Synthesize one trajectory from one seed and record the outcome."""
        seed, sample = unit.params
        out = Synthesized(unit.id, seed.id, sample)
        out.answer = await self._ask(synthesis_prompt(seed, self.catalog), out, "synthesize")
        turns = self._filtered(seed, out)
        if turns is not None and self.options.judge:
            await self._judge(turns, out)
        record = out.to_json()
        self.results[unit.id] = record
        if self.store is not None:
            self.store.append(unit.id, json.dumps(record, ensure_ascii=False))
        return record

    def _filtered(self, seed: Seed, out: Synthesized) -> list[Turn] | None:
        turns = parse_answer(out.answer or "")
        if not any(t.role == "user" for t in turns):
            out.reasons["parse"] = ["no HUMAN / ASSISTANT / FUNCTION_CALL / OBSERVATION blocks"]
            return None
        head = [seed.system] if seed.system is not None else []
        checked = check_turns(head + turns, self.catalog, self.options.check)
        out.issues = checked.issues
        filters = {
            "check": checked.reasons,
            "invalid_tool_use": invalid_tool_use(checked.turns, self.catalog),
            "repetition": repetition(checked.turns, seed, self.options.max_repeats),
        }
        out.reasons = {k: v for k, v in filters.items() if v}
        out.messages = chat_messages(assign_ids(checked.turns, "call"))
        return None if out.reasons else checked.turns

    async def _judge(self, turns: list[Turn], out: Synthesized) -> None:
        tools = json.dumps([t.to_json() for t in self.catalog.tools.values()], ensure_ascii=False)
        user = f"Tools:\n{tools}\n\nTrajectory:\n{render_text(turns)}"
        prompt = [{"role": "system", "content": _JUDGE}, {"role": "user", "content": user}]
        verdict = repair_untrusted(await self._ask(prompt, out, "consistency"))
        consistent = verdict.get("consistent") if isinstance(verdict, dict) else None
        if consistent is not True:
            reason = str(verdict.get("reason") or "") if isinstance(verdict, dict) else ""
            why = "no verdict" if consistent is None else f"judged inconsistent: {reason}"
            out.reasons["consistency"] = [why]


def _key(line: str) -> str | None:
    try:
        return str(parse_json(line)["unit_id"])
    except (ValueError, KeyError, TypeError):
        return None


def synthesis_ledger(records: Sequence[dict[str, Any]]) -> CostLedger:
    """Spending per module (``synthesize``, ``consistency``) with attempts and acceptances."""
    ledger = CostLedger()
    for record in records:
        for module, usage in record["usage"].items():
            ledger.charge(module, Usage.model_validate(usage))
        ledger.outcome("synthesize", record["status"] == "accepted")
        if "consistency" in record["usage"]:
            ledger.outcome("consistency", "consistency" not in record["reasons"])
    return ledger


def synthesis_report(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts, rejections per filter, repairs, and the cost per accepted trajectory."""
    accepted = sum(1 for r in records if r["status"] == "accepted")
    ledger = synthesis_ledger(records)
    cost = ledger.total().cost
    return {
        "units": len(records),
        "accepted": accepted,
        "rejected": len(records) - accepted,
        "rejected_by": {f: sum(1 for r in records if f in r["reasons"]) for f in FILTERS},
        "repaired": sum(1 for r in records if r["status"] == "accepted" and any(r["issues"] or [])),
        "cost": round(cost, 8),
        "cost_per_accepted": round(cost / accepted, 8) if accepted else None,
        "ledger": ledger.to_json(),
    }


def synthesized_trajectory(record: dict[str, Any], catalog: ToolCatalog, model: str) -> Trajectory:
    """An accepted record as an (unverified) trajectory for the SFT exports."""
    return Trajectory(
        task_id=record["unit_id"],
        domain=catalog.source,
        trial=record["sample"],
        agent=f"synthesized:{model}",
        user="synthesized",
        messages=record["messages"],
        tools=catalog.openai_tools(),
        stop_reason="agent_done",
        initial_distance=0,
        final_distance=0,
    )


@dataclass
class SynthesisRun:
    """What a synthesis run produced: every unit's record, the report, accepted trajectories."""

    records: list[dict[str, Any]]
    report: dict[str, Any]
    trajectories: list[Trajectory]


def _manifest_config(
    seeds: Sequence[Seed], catalog: ToolCatalog, model: str, options: SynthOptions
) -> dict[str, Any]:
    return {
        "seeds": [s.id for s in seeds],
        "tools": sha256(canonical_json(catalog.to_json()).encode("utf-8")),
        "model": model,
        "config": repr(options.config),
        "judge": options.judge,
        "max_repeats": options.max_repeats,
        "check": repr(options.check),
    }


async def synthesize(
    seeds: Sequence[Seed],
    catalog: ToolCatalog,
    provider: ModelProvider,
    *,
    n: int,
    model: str,
    options: SynthOptions | None = None,
    out: Path | None = None,
    concurrency: int = 4,
) -> SynthesisRun:
    """Synthesize ``n`` trajectories from seed trajectories, checked and filtered.

    Args:
        seeds: The seed trajectories (see :func:`load_seeds`).
        catalog: The tools the new trajectories may use.
        provider: The synthesizing model (also the consistency judge).
        n: How many units (answers) to ask for; seeds are used in turn.
        model: The model's spec, recorded in the run manifest.
        options: Sampling and filter settings.
        out: The records file (JSONL, resumable); its manifest goes to ``OUT.run.json``.
        concurrency: Units at once.

    Returns:
        Every unit's record, the report, and the accepted trajectories in unit order.

    Raises:
        ValueError: No seeds.
    """
    if not seeds:
        raise ValueError("synthesis needs at least one seed trajectory")
    settings = options or SynthOptions()
    stage = SynthesisStage(seeds, catalog, provider, n, settings)
    units = stage.units()
    if out is not None:
        config = _manifest_config(seeds, catalog, model, settings)
        manifest = RunManifest(stage.name, config, [u.id for u in units])
        manifest.open(out.with_name(out.name + ".run.json"), where=str(out), grow=True)
        stage.store = JsonlUnits(out, _key)
    await AsyncExecutor(concurrency).map(stage, pending(stage))
    records = [_record(stage, u.id) for u in units]
    if stage.store is not None:
        stage.store.finish([u.id for u in units])
    trajectories = [
        synthesized_trajectory(r, catalog, model) for r in records if r["status"] == "accepted"
    ]
    return SynthesisRun(records, synthesis_report(records), trajectories)


def _record(stage: SynthesisStage, unit_id: str) -> dict[str, Any]:
    record = stage.results.get(unit_id)
    if record is None and stage.store is not None:
        record = json.loads(stage.store.lines[unit_id])
    if record is None:
        raise RuntimeError(f"unit {unit_id} has no record")
    return record


def run_synthesis(
    seeds: Sequence[Seed], catalog: ToolCatalog, provider: ModelProvider, **options: Any
) -> SynthesisRun:
    """:func:`synthesize` from synchronous code."""
    return asyncio.run(synthesize(seeds, catalog, provider, **options))
