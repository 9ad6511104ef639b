"""A simulated environment: a model answers each tool call; a model judges the episode.

:class:`SimSession` implements the session protocol of :class:`~veritask.task.Session`, so the
episode loop, the rollout job and ``veritask eval`` run on it unchanged. Each observation is
asked of a model from the tool specification, the testbed data (the rows of the task's start
state) and the interaction history (SimAgent, Appendix D), then checked like a real tool result:
JSON syntax repaired with ``json-repair``, the shape ``{"ok", "result"}`` / ``{"ok", "error"}``
enforced, the result's fields checked against the tool's return schema with lossless coercion.
An answer that cannot be repaired becomes a ``SIMULATION_ERROR`` tool error (and is counted).
At the end a judge model decides from the interaction history and the task's goals whether the
task was done (Appendix D, Figure 11); its verdict is the trajectory's reward.

No state is measured in a simulated episode: a simulated trajectory's ``final_distance`` is its
``initial_distance``, its ``agent_diff`` is empty, and ``reward_breakdown`` holds ``judge``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from veritask._util import repair_untrusted
from veritask.env import CompiledDomain, Environment, Snapshot, ToolError, ToolResult, diff
from veritask.model import GenerateConfig, ModelProvider, Usage
from veritask.rollout import EpisodeTask, SessionFactory
from veritask.simulate._catalog import ToolCatalog, ToolDef, catalog_from_spec
from veritask.simulate._check import UNCOERCIBLE, coerce, type_ok
from veritask.task import EpisodeEnd, Session, TaskPackage, ToolStep, Trajectory

SIMULATOR_MARK = "You are the environment simulator"
JUDGE_MARK = "You judge whether an agent completed a task"
TESTBED_ROWS = 40
"""Rows per table shown to the simulator as testbed data."""

_SIMULATOR = f"""{SIMULATOR_MARK} of a business application. An agent calls tools; you return
what the real system would return.

Available tools (name, description with preconditions and side effects, parameters, returns):
{{tools}}

Testbed data (the database when the task started, as JSON rows per table):
{{testbed}}

Simulate the execution of the action below. You need to:
1. FIRST check that the action is valid: the tool exists, the arguments match its parameters.
   An invalid action fails with code UNKNOWN_TOOL, UNKNOWN_ARGUMENT, INVALID_TYPE or
   MISSING_ARGUMENT.
2. Check the tool's preconditions against the data and the earlier actions' effects; a
   violated precondition fails with the rule's error code and id.
3. Otherwise simulate a realistic result in the tool's return format, consistent with the
   testbed data and the history.

Answer with one JSON object only:
{{{{"ok": true, "result": <the tool's result>}}}}
or
{{{{"ok": false, "error": {{{{"code": "...", "message": "...", "violated_rule": "<rule id or null>",
"hint": "..."}}}}}}}}"""

_JUDGE = f"""{JUDGE_MARK}. Decide from the interaction history whether the task is
completed: whether the final outcome meets every goal if all the actions took effect. Do NOT
judge success from the agent claiming it is done.

Answer with one JSON object only:
{{"reasoning": "...", "evidence": "...", "task_success": true or false, "confidence": 0.0-1.0}}"""


def simulator_prompt(catalog: ToolCatalog, testbed: Mapping[str, Any]) -> str:
    """The simulator's system prompt: tool specification and testbed data."""
    tools = json.dumps([t.to_json() for t in catalog.tools.values()], ensure_ascii=False)
    return _SIMULATOR.format(tools=tools, testbed=json.dumps(testbed, ensure_ascii=False))


def action_text(tool: str, args: Any) -> str:
    """How an action is shown to the simulator (and found again by scripted simulators)."""
    return "Action to simulate:\n" + json.dumps({"tool": tool, "arguments": args}, default=str)


def testbed_rows(
    domain: CompiledDomain, origin: bytes, limit: int = TESTBED_ROWS
) -> dict[str, Any]:
    """The first ``limit`` rows of every table of a state."""
    with Environment(domain, origin) as env:
        return {t.name: env.rows(t.name)[:limit] for t in domain.spec.tables}


def task_goals(package: TaskPackage) -> str:
    """The task's success criteria as the judge reads them."""
    lines = [f"Overall goal: {package.task.total_goal}"]
    lines += [f"- {g.title}: {g.request}" for g in package.task.sub_goals]
    if package.refusal:
        lines.append("The right outcome may be to refuse: the policy forbids what is asked.")
    return "\n".join(lines)


# -- checking a simulated observation ----------------------------------------------------------


def _error(payload: Any) -> ToolError | None:
    if not isinstance(payload, Mapping) or not isinstance(payload.get("code"), str):
        return None
    rule = payload.get("violated_rule")
    return ToolError(
        code=payload["code"],
        message=str(payload.get("message") or ""),
        violated_rule=rule if isinstance(rule, str) and rule else None,
        hint=str(payload.get("hint") or ""),
    )


def _fields(tool: ToolDef | None, result: Any) -> tuple[Any, str | None]:
    """The result checked against the tool's return schema (lossless coercion of fields)."""
    schema = tool.returns if tool else None
    if not schema or schema.get("type") != "object":
        return result, None
    if not isinstance(result, Mapping):
        return result, "the result is not an object"
    missing = [k for k in schema.get("required", []) if k not in result]
    if missing:
        return result, f"the result lacks {missing}"
    fixed = dict(result)
    for key, sub in (schema.get("properties") or {}).items():
        kind = sub.get("type")
        if key in fixed and fixed[key] is not None and kind and not type_ok(kind, fixed[key]):
            value = coerce(kind, fixed[key])
            if value is UNCOERCIBLE:
                return result, f"field {key!r} is not {kind}"
            fixed[key] = value
    return fixed, None


def fields_problem(tool: ToolDef | None, result: Any) -> str | None:
    """Why a successful result does not fit the tool's return schema (None when it fits,
    lossless coercions allowed)."""
    return _fields(tool, result)[1]


def observation(tool_name: str, tool: ToolDef | None, text: str) -> tuple[ToolResult, str | None]:
    """A simulator's answer as a tool result, and why it was unusable (None when usable)."""
    parsed = repair_untrusted(text)
    if not isinstance(parsed, Mapping) or not isinstance(parsed.get("ok"), bool):
        return _unusable(tool_name, "the answer is not {ok, result|error}")
    if not parsed["ok"]:
        err = _error(parsed.get("error"))
        if err is None:
            return _unusable(tool_name, "an error without a code")
        return ToolResult(tool=tool_name, ok=False, error=err), None
    result, why = _fields(tool, parsed.get("result"))
    if why is not None:
        return _unusable(tool_name, why)
    return ToolResult(tool=tool_name, ok=True, result=result), None


def _unusable(tool: str, why: str) -> tuple[ToolResult, str]:
    err = ToolError("SIMULATION_ERROR", f"the simulated environment failed: {why}")
    return ToolResult(tool=tool, ok=False, error=err), why


def observation_payload(result: ToolResult) -> Any:
    """What a tool message carries for a result (as in the SQLite environment)."""
    return (
        result.result if result.ok else {"error": result.error.to_json() if result.error else None}
    )


# -- the session --------------------------------------------------------------------------------


@dataclass
class Judgement:
    """A judge's verdict on an episode."""

    success: bool | None
    confidence: float | None = None
    reasoning: str = ""


@dataclass
class SimSession:
    """The environment side of an episode, answered by a model (see the module docstring).

    Attributes:
        package: The task (None when the session serves a domain's tools with no task: the
            simulator then sees no goal, and the judge gives no verdict).
        domain: Its compiled domain (tool specifications, and the testbed's tables).
        origin: The start state image (testbed data); nothing is executed on it.
        provider: The simulator and judge model.
        config: Sampling settings for both.
        sample_index: Keeps repeated samples apart in caches (the trial).
        target: s_target, used only to state ``initial_distance`` in the trajectory.
        tool_catalog: The tools the simulator answers for (default: the domain's).
    """

    package: TaskPackage | None
    domain: CompiledDomain
    origin: bytes
    provider: ModelProvider
    config: GenerateConfig = field(default_factory=GenerateConfig)
    sample_index: int = 0
    target: bytes | None = None
    tool_catalog: ToolCatalog | None = None
    history: list[tuple[str, Any, Any]] = field(default_factory=list)
    steps: list[ToolStep] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    unusable: int = 0
    calls: int = 0
    _catalog: ToolCatalog | None = None
    _system: str | None = None

    @property
    def catalog(self) -> ToolCatalog:
        """The domain's tools."""
        if self._catalog is None:
            self._catalog = self.tool_catalog or catalog_from_spec(self.domain.spec)
        return self._catalog

    @property
    def tools(self) -> list[dict[str, Any]]:
        """OpenAI tool schemas offered to the agent."""
        return self.catalog.openai_tools()

    def _prompt(self, tool: str, args: Any) -> list[dict[str, Any]]:
        if self._system is None:
            testbed = testbed_rows(self.domain, self.origin)
            self._system = simulator_prompt(self.catalog, testbed)
        history = [{"tool": name, "arguments": a, "observation": o} for name, a, o in self.history]
        goal = "" if self.package is None else f"Current task: {self.package.task.total_goal}\n\n"
        user = (
            goal
            + f"Previous actions and observations:\n{json.dumps(history, default=str)}\n\n"
            + action_text(tool, args)
        )
        return [{"role": "system", "content": self._system}, {"role": "user", "content": user}]

    async def simulate(self, tool: str, args: Any) -> ToolResult:
        """One simulated call: ask, check, record in the history."""
        output = await self.provider.generate(
            self._prompt(tool, args), None, self.config, self.sample_index
        )
        self.usage.add(output.usage)
        result, why = observation(tool, self.catalog.get(tool), output.text)
        self.unusable += why is not None
        self.history.append((tool, args, observation_payload(result)))
        self.calls += 1
        return result

    async def astep(self, call: Mapping[str, Any], turn: int) -> tuple[dict[str, Any], ToolResult]:
        """Answer one OpenAI-style tool call with a simulated observation."""
        fn = call.get("function") or {}
        name, raw = str(fn.get("name", "")), fn.get("arguments") or "{}"
        parsed = repair_untrusted(raw) if isinstance(raw, str) else raw
        args = parsed if isinstance(parsed, dict) else None
        result = await self.simulate(name, args if args is not None else raw)
        call_id = str(call.get("id", ""))
        spec = self.domain.tools.get(name)
        self.steps.append(
            ToolStep(
                turn=turn,
                call_id=call_id,
                tool=name,
                args=args,
                raw_arguments=raw if isinstance(raw, str) else json.dumps(raw),
                ok=result.ok,
                result=result.result,
                error=result.error.to_json() if result.error else None,
                writes=bool(spec and spec.writes),
            )
        )
        payload = json.dumps(observation_payload(result), default=str)
        return {"role": "tool", "tool_call_id": call_id, "content": payload}, result

    async def judge(self, messages: list[dict[str, Any]]) -> Judgement:
        """The judge's verdict on an interaction history, against the task's goals (no verdict
        without a task)."""
        if self.package is None:
            return Judgement(None, reasoning="no task to judge against")
        history = [
            {k: m[k] for k in ("role", "content", "tool_calls") if m.get(k) is not None}
            for m in messages
            if m.get("role") != "system"
        ]
        user = (
            f"Task:\n{task_goals(self.package)}\n\n"
            f"Complete interaction history:\n{json.dumps(history, default=str)}"
        )
        prompt = [{"role": "system", "content": _JUDGE}, {"role": "user", "content": user}]
        output = await self.provider.generate(prompt, None, self.config, self.sample_index)
        self.usage.add(output.usage)
        verdict = repair_untrusted(output.text)
        if not isinstance(verdict, Mapping) or not isinstance(verdict.get("task_success"), bool):
            return Judgement(None, reasoning="the judge's answer has no task_success")
        confidence = verdict.get("confidence")
        return Judgement(
            verdict["task_success"],
            float(confidence) if isinstance(confidence, int | float) else None,
            str(verdict.get("reasoning") or ""),
        )

    def _initial_distance(self) -> int:
        if self.target is None:
            return 0
        layout = self.domain.layout
        return diff(Snapshot(self.origin, layout), Snapshot(self.target, layout)).distance

    async def atrajectory(self, end: EpisodeEnd) -> Trajectory:
        """The episode as a trajectory whose reward is the judge's verdict (0 when it gave none)."""
        verdict = await self.judge(end.messages)
        initial = self._initial_distance()
        reward = 1.0 if verdict.success else 0.0
        problem = end.error or (None if verdict.success is not None else verdict.reasoning)
        return Trajectory(
            task_id=self.package.id if self.package else "",
            domain=self.package.domain if self.package else self.domain.spec.name,
            trial=end.trial,
            seed=end.seed,
            agent=end.agent,
            user=end.user,
            messages=end.messages,
            tools=self.tools,
            steps=self.steps,
            stop_reason=end.stop_reason,
            initial_distance=initial,
            final_distance=initial,
            agent_usage=end.agent_usage or Usage(),
            user_usage=end.user_usage or Usage(),
            reward=reward,
            reward_breakdown={"judge": reward},
            error=problem,
        )

    def close(self) -> None:
        """Nothing to release (no database is opened for an episode)."""


def simulated_sessions(
    provider: ModelProvider, config: GenerateConfig | None = None
) -> SessionFactory:
    """A session factory for the rollout job: every episode on a :class:`SimSession`."""
    settings = config or GenerateConfig()

    def build(task: EpisodeTask, trial: int, _seed: int) -> Session:
        return SimSession(
            task.package,
            task.domain,
            task.origin,
            provider,
            settings,
            sample_index=trial,
            target=task.target,
        )

    return build
