"""The model-driven task synthesis agent: explore read-only, propose, have the witness executed.

A multi-turn tool-calling conversation through :mod:`veritask.model`. The agent is given the
policy, the synthesis plan (domain, tier, rules, archetypes, styles) and the domain's read
tools, which run on the domain's seed state (s_origin); a write tool is refused without
touching the state, so exploration is read-only. It submits candidates through the
``propose_task`` tool: the user (profile and archetype), the instruction (who the user is, the
total goal, sub-goals with their structured asks), and the witness, the tool calls that
complete the task. The witness is executed on a scratch copy of s_origin; the state it leaves
is s_target, and the completion criteria are the per-task SQL checkers of that diff. A
candidate is accepted only when it is a certified, grounded package: the witness replays
(:func:`veritask.task.certify`), its text determines its target
(:func:`veritask.task.grounding`), it is spoiler-free, it changes the state and its checkers
separate s_target from s_origin. Otherwise the tool answers with the reasons, and the agent may
repair the candidate; malformed arguments are rejected the same way. Tool calls never raise.

The accepted packages are written as a dataset directory, like the symbolic generator's, so
the stream treats both alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from veritask._util import loads_untrusted, write_lines_atomic
from veritask.domains import builtin_domains, load_domain
from veritask.env import CompiledDomain, Environment
from veritask.evolve._plans import SynthesisPlan
from veritask.model import CostLedger, ModelProvider
from veritask.policy import render_wiki
from veritask.task import (
    Ask,
    DatasetDir,
    SubGoal,
    TaskDescription,
    TaskPackage,
    UserProfile,
    WitnessCall,
    certify,
    find_spoilers,
    grounding,
    text_keys,
)
from veritask.verify import CheckerError, make_checkers

GENERATOR = "evolve-task-agent/1"
PROPOSE = "propose_task"
FINISH = "finish"


class ProposedSubGoal(BaseModel):
    """One sub-goal: its title, the request in the user's words, and its structured ask."""

    model_config = ConfigDict(extra="forbid")

    title: str
    request: str
    ask: Ask


class ProposedCall(BaseModel):
    """One witness call."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class Proposal(BaseModel):
    """The arguments of ``propose_task``: a candidate task and its witness."""

    model_config = ConfigDict(extra="forbid")

    user_id: str
    name: str
    archetype: Literal["mismatch", "entangled", "rookie", "edge"]
    who_you_are: str
    total_goal: str
    sub_goals: list[ProposedSubGoal] = Field(min_length=1)
    witness: list[ProposedCall] = Field(min_length=1)
    difficulty: Literal["L1", "L2", "L3"] = "L1"
    tags: list[str] = Field(default_factory=list)
    known_ids: list[str] = Field(default_factory=list)


def _tool(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


PROPOSE_TOOL = _tool(
    PROPOSE,
    "Submit a candidate task with its witness; the witness is executed on a scratch copy and "
    "the candidate is certified and checked for grounding. Returns accepted or the reasons.",
    Proposal.model_json_schema(),
)
FINISH_TOOL = _tool(
    FINISH, "End the conversation.", {"type": "object", "properties": {}, "required": []}
)

SYSTEM = """You synthesize verifiable tool-use tasks for the system whose policy is below.
Explore the current state with the read tools (they are read-only; write tools are refused). Then \
submit each task with {propose}: a user of the system, what they want in their own words \
(sub-goals whose structured asks name the procedure, the values the user states and the records \
by the values the user knows, never internal ids), and the witness, the tool calls that \
complete the task. The witness runs on a scratch copy; a task is kept only when it replays, \
changes the state, and its text determines every value written. Call {finish} when done.

POLICY:
{policy}"""


def _plan_message(plan: SynthesisPlan, domain: str, n: int) -> str:
    want = {
        "domain": domain,
        "tier": plan.tier,
        "difficulty_mix": plan.difficulty_mix,
        "rules": plan.rules,
        "tool_patterns": plan.tool_patterns,
        "archetypes": plan.archetypes,
        "styles": plan.styles,
    }
    return (
        f"Synthesize {n} tasks following this plan (weights: what to favour): "
        f"{json.dumps(want, sort_keys=True)}"
    )


@dataclass
class AgentLog:
    """What one synthesis conversation did."""

    turns: int = 0
    explored: int = 0
    proposed: int = 0
    accepted: list[str] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    """``{"proposal": k, "reasons": [...]}`` per rejected proposal."""

    def to_json(self) -> dict[str, Any]:
        """The log as an iteration's artifact stores it."""
        return {
            "turns": self.turns,
            "explored": self.explored,
            "proposed": self.proposed,
            "accepted": self.accepted,
            "rejected": self.rejected,
        }


@dataclass
class _Conversation:
    """One conversation's environment, origin and accepted packages."""

    compiled: CompiledDomain
    ds: DatasetDir
    seed: int
    origin: bytes
    explore: Environment
    scratch: Environment
    log: AgentLog = field(default_factory=AgentLog)
    packages: list[TaskPackage] = field(default_factory=list)

    def close(self) -> None:
        self.explore.close()
        self.scratch.close()

    def read_call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """A read tool on s_origin (a write tool is refused without running)."""
        spec = self.compiled.tools.get(name)
        if spec is None or spec.writes:
            why = "unknown tool" if spec is None else "exploration is read-only"
            return {"ok": False, "error": {"code": "READ_ONLY", "message": f"{name}: {why}"}}
        self.log.explored += 1
        return self.explore.call(name, args).to_json()

    def run_witness(self, calls: list[ProposedCall]) -> tuple[list[WitnessCall], bytes]:
        """Execute the witness on a scratch copy of s_origin; the calls as recorded and s_target."""
        self.scratch.restore(self.origin)
        out: list[WitnessCall] = []
        for call in calls:
            got = self.scratch.call(call.tool, call.args).to_json()
            out.append(
                WitnessCall(
                    tool=call.tool,
                    args=call.args,
                    ok=got["ok"],
                    result=got["result"],
                    error=got["error"],
                )
            )
        return out, self.scratch.image()


def _package(
    s: _Conversation, p: Proposal, witness: list[WitnessCall], target: bytes
) -> TaskPackage:
    task = TaskDescription(
        who_you_are=p.who_you_are,
        total_goal=p.total_goal,
        sub_goals=[SubGoal(title=g.title, request=g.request, ask=g.ask) for g in p.sub_goals],
    )
    failed = [w for w in witness if not w.ok]
    domain = s.compiled.spec.name
    return TaskPackage(
        id=f"{domain}-a{s.seed:06d}-{len(s.packages):03d}",
        domain=domain,
        spec_hash=s.compiled.spec.spec_hash(),
        policy=s.ds.put_policy(render_wiki(s.compiled.spec)),
        task=task,
        task_description=task.render(),
        user_profile=UserProfile(
            user_id=p.user_id, name=p.name, archetype=p.archetype, known_ids=p.known_ids
        ),
        origin=s.ds.put_state(s.origin),
        target=s.ds.put_state(target),
        witness=witness,
        difficulty=p.difficulty,
        tags=sorted(set(p.tags)),
        rules_exercised=sorted(
            {
                str(w.error["violated_rule"])
                for w in failed
                if w.error and w.error.get("violated_rule")
            }
        ),
        boundary_hits=len(failed),
        seed=s.seed,
        generator=GENERATOR,
    )


def _problems(s: _Conversation, pkg: TaskPackage, target: bytes) -> list[str]:
    """Why a candidate is not a certified, grounded package (empty: accepted)."""
    if target == s.origin:
        return ["the witness does not change the state"]
    cert = certify(pkg, s.scratch, s.origin, target)
    if not cert.certified:
        return [f"certificate: {cert.detail}"]
    out = [f"ungrounded: {u.describe()}" for u in grounding(pkg, s.scratch, s.origin)]
    keys = text_keys(s.compiled.spec, s.origin)
    spoilers = find_spoilers(
        pkg.task_description, s.compiled.spec, keys, pkg.user_profile.known_ids
    )
    out += [f"spoiler: {x}" for x in spoilers]
    try:
        make_checkers(s.scratch, s.origin, target)
    except CheckerError as exc:
        out.append(f"checker: {exc}")
    return out


def propose(s: _Conversation, raw: str) -> dict[str, Any]:
    """The ``propose_task`` tool: accept a certified, grounded candidate or say why not."""
    s.log.proposed += 1
    try:
        proposal = Proposal.model_validate_json(raw or "{}")
        witness, target = s.run_witness(proposal.witness)
        pkg = _package(s, proposal, witness, target)
    except (ValidationError, ValueError) as exc:
        reasons = [f"malformed: {str(exc).splitlines()[0]}"]
    else:
        reasons = _problems(s, pkg, target)
        if not reasons:
            s.packages.append(pkg)
            s.log.accepted.append(pkg.id)
            return {"accepted": True, "id": pkg.id}
    s.log.rejected.append({"proposal": s.log.proposed, "reasons": reasons})
    return {"accepted": False, "reasons": reasons}


def _dispatch(s: _Conversation, call: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """One tool call's result, and whether the agent finished."""
    fn = call.get("function") or {}
    name, raw = str(fn.get("name", "")), str(fn.get("arguments") or "")
    if name == FINISH:
        return {"ok": True}, True
    if name == PROPOSE:
        return propose(s, raw), False
    try:
        args = loads_untrusted(raw or "{}")
    except ValueError as exc:
        return {"ok": False, "error": {"code": "BAD_ARGUMENTS", "message": str(exc)}}, False
    if not isinstance(args, dict):
        return {"ok": False, "error": {"code": "BAD_ARGUMENTS", "message": "not an object"}}, False
    return s.read_call(name, args), False


@dataclass
class TaskAgent:
    """The synthesis agent over one provider (see the module docstring)."""

    provider: ModelProvider
    ledger: CostLedger = field(default_factory=CostLedger)
    max_turns: int = 24
    """Model turns per conversation, at most."""
    logs: dict[str, AgentLog] = field(default_factory=dict)
    """Each finished conversation's log, by output directory."""

    async def synthesize(
        self, plan: SynthesisPlan, domain: str, n: int, seed: int, out: Path
    ) -> AgentLog:
        """Hold one conversation; write the accepted packages (at most ``n``) to ``out``."""
        compiled = CompiledDomain.from_spec(load_domain(domain))
        explore = Environment(compiled)
        origin = explore.image()
        s = _Conversation(compiled, DatasetDir(out), seed, origin, explore, Environment(compiled))
        try:
            await self._converse(s, plan, n)
        finally:
            s.close()
        write_lines_atomic(
            s.ds.manifest, (p.model_dump_json().encode() + b"\n" for p in s.packages)
        )
        if domain not in builtin_domains():
            s.ds.put_spec(Path(domain).read_text(encoding="utf-8"))
        s.ds.seal(s.packages)  # last: the seal lists every file of the directory
        self.logs[str(out)] = s.log
        return s.log

    async def _converse(self, s: _Conversation, plan: SynthesisPlan, n: int) -> None:
        tools = [*(t for t in s.explore.openai_tools() if not _writes(s, t)), PROPOSE_TOOL]
        tools.append(FINISH_TOOL)
        messages: list[dict[str, Any]] = [
            {
                "role": "system",
                "content": SYSTEM.format(
                    propose=PROPOSE, finish=FINISH, policy=render_wiki(s.compiled.spec)
                ),
            },
            {"role": "user", "content": _plan_message(plan, s.compiled.spec.name, n)},
        ]
        while s.log.turns < self.max_turns and len(s.packages) < n:
            s.log.turns += 1
            out = await self.provider.generate(messages, tools=tools)
            self.ledger.charge("evolve.synthesize", out.usage)
            message = {"role": "assistant", **out.message}
            messages.append(message)
            calls = message.get("tool_calls") or []
            if not calls:
                return
            done = False
            for call in calls:
                result, finished = _dispatch(s, call)
                done = done or finished
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.get("id", ""),
                        "content": json.dumps(result, sort_keys=True, default=str),
                    }
                )
            if done:
                return


def _writes(s: _Conversation, tool: dict[str, Any]) -> bool:
    spec = s.compiled.tools.get(str(tool.get("function", {}).get("name")))
    return spec is None or spec.writes
