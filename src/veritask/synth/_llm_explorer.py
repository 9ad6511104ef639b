"""The LLM Explorer: a Client and a Consultant discover an episode together (LOGIGEN 3.5.2).

The Consultant is policy-aware and state-grounded: it reads the state through the read tools,
consults the wiki policy, proposes a menu of feasible options, resolves the Client's descriptions
to ids, and makes the writes. The Client owns the goal: it commits to one option and makes
progressive, imperfect requests (vague details, a change of mind). Every tool call the Consultant
makes is a real environment call, validated by the environment, with structured errors sent back
to the model; the calls become the witness and the state they leave is s_target.

The loop is bounded (client turns, consultant steps per turn) and ends early when the Client
declares its goal done, gives it up, or when it diverges for good: repeated policy violations
that bring no new information, or an irreversible write (a record that can no longer be changed)
after which the Client says its goal is out of reach.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from veritask._util import loads_untrusted
from veritask.env import Environment, ToolResult
from veritask.model import CostLedger, GenerateConfig, ModelProvider
from veritask.policy import Rule, Transaction
from veritask.synth._analysis import DomainModel, find_tool, humanize
from veritask.synth._episode import Episode, Hit, SubGoalTrace, witness_call
from veritask.synth._projector import SymbolicProjector, plain
from veritask.synth._sampler import StateView
from veritask.task import WitnessCall

STOP = "###STOP###"
"""What the Client says when its goal is done (or accepted as impossible)."""
ABANDON = "###ABANDON###"
"""What the Client says when its goal has become unreachable."""
GREETING = "Hello! How can I help you today?"
"""The Consultant's fixed opening line (not a model call)."""
IRREVERSIBLE_NOTE = (
    "[Note: the change just made is irreversible; that record can no longer be modified. "
    f"If this defeats your goal, reply {ABANDON} alone.]"
)

CONSULTANT_PROMPT = """You are the Consultant in a task-synthesis exploration: a policy-aware, \
state-grounded agent serving one client of the system whose policy is below.
You act only through the tools: read tools (query_*) inspect the current state, write tools \
(insert_*, update_*) change it. The database enforces the policy: a rejected write returns a \
structured error (code, message, violated_rule, hint) and changes nothing.

Work in this loop:
1. Menu: authenticate the client, read their records, and propose a short menu of options that \
are feasible in the current state.
2. Preferences: answer attribute-level questions (cheapest, earliest, ...) with further reads.
3. Parameters: the client describes things by name, label or amount; resolve the concrete ids \
yourself through queries. Never ask the client for internal ids.
4. Operation: summarize each write and get the client's confirmation, then make it. On success, \
confirm it and summarize the outcome, side effects included, then offer the next options. On a \
policy violation, explain it from the evidence in the state and propose viable alternatives.
Make one tool call at a time and keep your messages short. Never show the client tool names, \
table or column names.

POLICY:
{policy}"""

CLIENT_PROMPT = """You are the Client in a task-synthesis exploration: a goal-oriented user of a \
service, talking to its consultant.

<USER_PROFILE>
{profile}
</USER_PROFILE>

Inspiration for anything new you need to name or describe: "{inspiration}".
{focus}
Rules:
- First ask what the consultant can do for you; then commit to ONE goal among the options \
offered and pursue it.
- Make progressive, imperfect requests, as real users do: leave a detail out, be vague about a \
choice, or change your mind once before confirming.
- Describe things by name, label or amount; you do not know internal record ids.
- Write one short line at a time, in your own words. Do not invent facts about yourself.
- When your goal is done, or the consultant shows it cannot be done and you accept that, reply \
with {stop} alone.
- If something irreversible happened that defeats your goal, reply with {abandon} alone."""

FOCUS_LINE = "Where it fits your goal, test this limit of the service: {rule}.\n"

ExplorationStop = Literal[
    "done",
    "abandoned",
    "irreversible divergence",
    "repeated violations",
    "turn limit",
    "step limit",
]


@dataclass(frozen=True)
class ExplorerLimits:
    """Bounds of one exploration."""

    max_turns: int = 12
    """Client turns."""
    max_steps: int = 10
    """Consultant messages (tool calls) between two client turns."""
    max_violations: int = 3
    """Policy rejections in a row (without an accepted write) before the episode is given up."""


@dataclass
class ExploredCall:
    """One witness call with what the explorer saw around it."""

    call: WitnessCall
    before: dict[str, Any] | None = None
    """For updates: the target row before the call."""
    irreversible: bool = False
    """An accepted write after which the written record can no longer be changed."""


@dataclass
class Exploration:
    """What one Client-Consultant exploration produced."""

    actor: Any
    stop: ExplorationStop
    calls: list[ExploredCall]
    dialogue: list[tuple[str, str]] = field(default_factory=list)
    """The public conversation: ``(speaker, text)`` with speaker ``client`` or ``consultant``."""
    episode: Episode | None = None
    """The episode, when the Client declared its goal done and something happened."""

    @property
    def witness(self) -> list[WitnessCall]:
        """The calls in order."""
        return [c.call for c in self.calls]

    @property
    def reason(self) -> str | None:
        """Why this exploration cannot become a package (None when it can)."""
        if self.stop != "done":
            return self.stop
        if self.episode is None:
            return "no reachable goal"
        return None


def _canonical(args: Any) -> str:
    return json.dumps(args, sort_keys=True, default=str)


def transaction_for_call(model: DomainModel, tool: str, args: dict[str, Any]) -> Transaction:
    """The SOP a write call performs: among the spec's transactions on ``tool``, the one whose
    parameters cover the call's arguments best; a plain one when the spec has none."""
    options = [tx for tx in model.write_transactions if tx.tool == tool]
    if options:
        return max(
            options, key=lambda tx: (len(set(args) & set(tx.parameters)), -len(tx.parameters))
        )
    spec = model.tool(tool)
    return Transaction(
        id=tool,
        name=f"{spec.kind.capitalize()} {humanize(spec.table)}",
        goal="",
        tool=tool,
        parameters=sorted(args),
    )


def _rule_of(call: WitnessCall) -> str | None:
    rule = (call.error or {}).get("violated_rule") if not call.ok else None
    return str(rule) if rule else None


def _refusal(
    model: DomainModel, item: ExploredCall
) -> tuple[Transaction, dict[str, Any], dict[str, Any] | None, Rule]:
    call = item.call
    rule = model.spec.rule(_rule_of(call) or "")
    return transaction_for_call(model, call.tool, call.args), dict(call.args), item.before, rule


def _hit(rejected: WitnessCall, accepted: WitnessCall) -> Hit:
    """What changed between a rejected call and the accepted one that got past it."""
    changed = {
        k: (rejected.args.get(k), v) for k, v in accepted.args.items() if rejected.args.get(k) != v
    }
    return Hit(_rule_of(rejected) or "", changed)


def build_episode(model: DomainModel, actor: Any, calls: list[ExploredCall]) -> Episode | None:
    """The episode a list of calls amounts to, in the shape the projector and packaging use.

    Every accepted write is a goal reached; the policy rejections of the same tool before it are
    its hits (what changed to get past them). A rejected write that no later call of its tool
    got past is a goal given up: the first one before any accepted write is the declined goal,
    or, when nothing was written, the refusal the whole task is about. None when the calls
    neither wrote anything nor met the policy.
    """
    subgoals: list[SubGoalTrace] = []
    pending: dict[str, list[int]] = {}
    first_write: int | None = None
    for i, item in enumerate(calls):
        call = item.call
        if not model.writes(call.tool):
            continue
        if not call.ok:
            if _rule_of(call):
                pending.setdefault(call.tool, []).append(i)
            continue
        first_write = i if first_write is None else first_write
        tx = transaction_for_call(model, call.tool, call.args)
        subgoals.append(
            SubGoalTrace(
                tx=tx,
                args=dict(call.args),
                result=call.result if isinstance(call.result, dict) else {},
                target=item.before,
                hits=[_hit(calls[j].call, call) for j in pending.pop(call.tool, [])],
                decided=model.agent_decides(tx),
            )
        )
    given_up = sorted(j for js in pending.values() for j in js)
    witness = [c.call for c in calls]
    if first_write is None:
        if not given_up:
            return None
        return Episode(actor, witness, [], refusal=_refusal(model, calls[given_up[0]]))
    early = [j for j in given_up if j < first_write]
    declined = _refusal(model, calls[early[0]]) if early else None
    return Episode(actor, witness, subgoals, declined=declined)


class _Session:
    """The state of one exploration: two conversations, the witness and the stop rules."""

    def __init__(
        self,
        explorer: LLMExplorer,
        actor: Any,
        client_system: str,
    ) -> None:
        self.x = explorer
        self.actor = actor
        self.view = StateView(explorer.model, explorer.env)
        self.tools = explorer.env.openai_tools()
        self.consultant: list[dict[str, Any]] = [
            {"role": "system", "content": explorer.consultant_system},
            {"role": "assistant", "content": GREETING},
        ]
        self.client: list[dict[str, Any]] = [
            {"role": "system", "content": client_system},
            {"role": "user", "content": GREETING},
        ]
        self.dialogue: list[tuple[str, str]] = [("consultant", GREETING)]
        self.calls: list[ExploredCall] = []
        self.rejected: set[str] = set()
        self.streak = 0
        self.call_ids = 0

    # -- the Client ---------------------------------------------------------------------

    async def client_says(self) -> str:
        """The Client's next line (charged to ``client``)."""
        out = await self.x.provider.generate(list(self.client), None, self.x.config, 0)
        self.x.ledger.charge("client", out.usage)
        text = out.text.strip()
        self.client.append({"role": "assistant", "content": text})
        self.dialogue.append(("client", text))
        self.consultant.append({"role": "user", "content": text})
        return text

    def tell_client(self, text: str, irreversible: bool) -> None:
        """Show the Consultant's words (and an irreversibility note) to the Client."""
        shown = f"{text}\n\n{IRREVERSIBLE_NOTE}" if irreversible else text
        self.client.append({"role": "user", "content": shown})

    # -- the Consultant -----------------------------------------------------------------

    async def consultant_turn(self) -> tuple[str, bool, ExplorationStop | None]:
        """Let the Consultant act until it speaks: (its words, whether an irreversible write
        happened, a stop reason when the episode must end)."""
        irreversible = False
        for _ in range(self.x.limits.max_steps):
            out = await self.x.provider.generate(
                list(self.consultant), self.tools, self.x.config, 0
            )
            self.x.ledger.charge("consultant", out.usage)
            calls = out.tool_calls
            message = self._normalized(out.text, calls)
            self.consultant.append(message)
            if not calls:
                self.dialogue.append(("consultant", out.text.strip()))
                return out.text.strip(), irreversible, None
            for wire in message["tool_calls"]:
                done = self._run(wire)
                irreversible = irreversible or done.irreversible
                if self._diverged(done):
                    return "", irreversible, "repeated violations"
        return "", irreversible, "step limit"

    def _normalized(self, text: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
        """The assistant message with call ids numbered within this episode (so conversations,
        hashes and token counts do not depend on how a provider numbers its calls)."""
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            wires = []
            for call in calls:
                self.call_ids += 1
                fn = call.get("function") or {}
                wires.append(
                    {
                        "id": f"call_{self.call_ids}",
                        "type": "function",
                        "function": {
                            "name": str(fn.get("name", "")),
                            "arguments": fn.get("arguments") or "{}",
                        },
                    }
                )
            message["tool_calls"] = wires
        return message

    def _run(self, wire: dict[str, Any]) -> ExploredCall:
        """Execute one tool call for real, record it, and answer the model."""
        fn = wire["function"]
        name, raw = str(fn["name"]), fn["arguments"]
        raw_text = raw if isinstance(raw, str) else json.dumps(raw)
        try:
            parsed = loads_untrusted(raw_text)
        except ValueError:
            parsed = None
        before = self._before(name, parsed)
        result = self.x.env.call(name, parsed if isinstance(parsed, dict) else raw_text)
        item = ExploredCall(witness_call(name, parsed, result), before)
        if isinstance(parsed, dict) and name in self.x.env.tools:
            # a call the environment evaluated: it is part of the witness
            self.calls.append(item)
            if result.ok and self.x.env.tools[name].writes:
                self.view.invalidate()
                item.irreversible = self.x.is_final(name, result)
        payload = (
            result.result
            if result.ok
            else {"error": result.error.to_json() if result.error else None}
        )
        self.consultant.append(
            {
                "role": "tool",
                "tool_call_id": wire["id"],
                "content": json.dumps(payload, sort_keys=True, default=str),
            }
        )
        return item

    def _before(self, tool: str, args: Any) -> dict[str, Any] | None:
        spec = self.x.env.tools.get(tool)
        if spec is None or spec.kind != "update" or not isinstance(args, dict) or spec.key is None:
            return None
        row = self.view.get(spec.table, args.get(spec.key))
        return dict(row) if row is not None else None

    def _diverged(self, item: ExploredCall) -> bool:
        """Repeated hard violations without new information end the episode."""
        call = item.call
        tool = self.x.env.tools.get(call.tool)
        if tool is not None and not tool.writes:
            return False
        if call.ok:
            self.streak = 0
            return False
        if _rule_of(call) is None:
            return False
        self.streak += 1
        fingerprint = f"{call.tool} {_canonical(call.args)}"
        repeated = fingerprint in self.rejected
        self.rejected.add(fingerprint)
        return repeated or self.streak >= self.x.limits.max_violations


class LLMExplorer:
    """Explores one task from the environment's current state with two LLM roles.

    Args:
        model: The domain analysis (actor table, transactions, rules).
        env: The environment, at s_origin when :meth:`explore` is called; it is left at the
            state the episode reached.
        provider: The model behind both roles.
        policy: The wiki policy text the Consultant follows.
        ledger: Where model calls are charged (modules ``client`` and ``consultant``).
        limits: Turn, step and violation bounds.
        config: Sampling settings for every call (e.g. a per-task seed).
    """

    def __init__(
        self,
        model: DomainModel,
        env: Environment,
        provider: ModelProvider,
        policy: str,
        ledger: CostLedger | None = None,
        limits: ExplorerLimits | None = None,
        config: GenerateConfig | None = None,
    ) -> None:
        self.model = model
        self.env = env
        self.provider = provider
        self.ledger = ledger if ledger is not None else CostLedger()
        self.limits = limits or ExplorerLimits()
        self.config = config
        self.consultant_system = CONSULTANT_PROMPT.format(policy=policy)
        self._projector = SymbolicProjector(model)

    def client_system(self, actor: Any, focus: Rule | None, inspiration: str) -> str:
        """The Client's system prompt: its profile, an inspiration and an optional focus."""
        who, _ = self._projector.who(StateView(self.model, self.env), actor)
        line = FOCUS_LINE.format(rule=plain(focus.message)) if focus is not None else ""
        return CLIENT_PROMPT.format(
            profile=who, inspiration=inspiration, focus=line, stop=STOP, abandon=ABANDON
        )

    def is_final(self, tool: str, result: ToolResult) -> bool:
        """True when the record a write left behind can no longer be changed: an update that
        only restates its current values is rejected by an irreversibility rule (a probe,
        undone and never part of the witness)."""
        spec = self.env.tools.get(tool)
        update = find_tool(self.env.tools, "update", spec.table) if spec is not None else None
        row = result.result
        if (
            update is None
            or update.key is None
            or not isinstance(row, dict)
            or update.key not in row
        ):
            return False
        restated = {c: row[c] for c in update.params if c != update.key and row.get(c) is not None}
        if not restated:
            return False
        snap = self.env.image()
        probe = self.env.call(update.name, {update.key: row[update.key], **restated})
        if probe.ok:
            self.env.restore(snap)
            return False
        rule = probe.error.violated_rule if probe.error else None
        return rule is not None and self.model.spec.rule(rule).category == "irreversibility"

    async def explore(
        self, actor: Any, *, focus: Rule | None = None, inspiration: str = ""
    ) -> Exploration:
        """Run the Client-Consultant loop for ``actor`` and return what it produced.

        The outcome (whether the Client reached its goal) is counted for module ``client``.
        """
        session = _Session(self, actor, self.client_system(actor, focus, inspiration))
        stop = await self._loop(session)
        self.ledger.outcome("client", stop == "done")
        episode = build_episode(self.model, actor, session.calls) if stop == "done" else None
        return Exploration(actor, stop, session.calls, session.dialogue, episode)

    async def _loop(self, session: _Session) -> ExplorationStop:
        said = await session.client_says()
        for _ in range(self.limits.max_turns):
            if STOP in said:
                return "done"
            if ABANDON in said:
                return "abandoned"
            text, irreversible, stop = await session.consultant_turn()
            if stop is not None:
                return stop
            session.tell_client(text, irreversible)
            said = await session.client_says()
            if ABANDON in said and irreversible:
                return "irreversible divergence"
        return "done" if STOP in said else "abandoned" if ABANDON in said else "turn limit"


__all__ = [
    "ABANDON",
    "CLIENT_PROMPT",
    "CONSULTANT_PROMPT",
    "GREETING",
    "STOP",
    "Exploration",
    "ExplorationStop",
    "ExploredCall",
    "ExplorerLimits",
    "LLMExplorer",
    "build_episode",
    "transaction_for_call",
]
