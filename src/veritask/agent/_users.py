"""User simulators: a scripted one that runs offline, and an LLM one (LOGIGEN Appendix B.1)."""

from __future__ import annotations

import re
from typing import Any

from veritask.agent._base import PAYLOAD, STOP, Turn, text_message
from veritask.agent._dual import BY_USER, flipped_traffic, requested_call, user_tool_call_message
from veritask.task import Fallback, SubGoal, TaskPackage

_TRIGGER = re.compile(
    r"IF the agent (?:explains that this is not possible|says) \((?P<why>[^)]*)\),? THEN (?P<then>.*)",
    re.S,
)
_NO_ROOM = re.compile(r"IF the agent says there is no room left, THEN (?P<then>.*)", re.S)


def _as_request(sub: SubGoal) -> str:
    text = sub.request.removeprefix("Ask the agent to ").rstrip(".")
    return f"I'd like to {text[0].lower()}{text[1:]}." if text else sub.title


def _reaction(trigger: str) -> tuple[str, str] | None:
    m = _TRIGGER.match(trigger) or _NO_ROOM.match(trigger)
    if m is None:
        return None
    why = m.groupdict().get("why") or "no room left"
    then = m["then"].strip().rstrip(".")
    return why.lower(), then


class ScriptedUser:
    """Discloses the sub-goals in order, reacts to the explanations its triggers anticipate,
    answers questions with the facts of the current sub-goal, and stops once every sub-goal has
    been asked for and answered."""

    name = "scripted"

    def __init__(self, package: TaskPackage) -> None:
        self.package = package
        self._subs = package.task.sub_goals
        self._next = 0
        self._used: set[str] = set()
        self._answered: set[int] = set()

    async def open(self) -> Turn:
        """Introduce yourself and ask for the first sub-goal."""
        profile = self.package.user_profile
        hello = f'Hi, I\'m {profile.name} (user id "{profile.user_id}").'
        turn = self._advance()
        turn.message["content"] = f"{hello} {turn.message['content']}"
        turn.message.setdefault(PAYLOAD, {})["user_id"] = profile.user_id
        return turn

    def _advance(self) -> Turn:
        """Ask for the next sub-goal (with its structured request, when the package has one)."""
        sub = self._subs[self._next]
        self._next += 1
        message = text_message(_as_request(sub), role="user")
        if sub.ask is not None:
            message[PAYLOAD] = {"ask": sub.ask.model_dump(mode="json")}
        return Turn(message)

    def _fallback(self, said: dict[str, Any]) -> Turn | None:
        """The structured reaction to a refusal the agent named by its rule."""
        refused = (said.get(PAYLOAD) or {}).get("refused")
        if not refused or not 0 < self._next <= len(self._subs):
            return None
        sub = self._subs[self._next - 1]
        for i, fb in enumerate(sub.fallbacks):
            key = f"fallback:{self._next}:{i}"
            if fb.rule != refused or key in self._used:
                continue
            self._used.add(key)
            if i < len(sub.reactive_triggers):
                self._used.add(sub.reactive_triggers[i])
            return Turn(self._reaction_message(sub, i, fb))
        return None

    def _reaction_message(self, sub: SubGoal, index: int, fb: Fallback) -> dict[str, Any]:
        reaction = (
            _reaction(sub.reactive_triggers[index]) if index < len(sub.reactive_triggers) else None
        )
        then = reaction[1] if reaction else "let's leave it there"
        message = text_message(f"I see. In that case, {then[0].lower()}{then[1:]}.", role="user")
        if fb.then is None:
            message[PAYLOAD] = {"give_up": True}
        else:
            message[PAYLOAD] = {
                "ask": fb.then.model_dump(mode="json"),
                "first": [a.model_dump(mode="json") for a in fb.first],
            }
        return message

    def _react(self, said: str) -> str | None:
        if not 0 < self._next <= len(self._subs):
            return None
        for trigger in self._subs[self._next - 1].reactive_triggers:
            reaction = _reaction(trigger)
            if reaction is None or trigger in self._used:
                continue
            why, then = reaction
            if why[:40] in said:
                self._used.add(trigger)
                return f"I see. In that case, {then[0].lower()}{then[1:]}."
        return None

    async def respond(self, messages: list[dict[str, Any]]) -> Turn:
        """Run the user-side call the agent asked for and report what it showed; else react to
        the assistant's last text, else move to the next sub-goal, else stop."""
        own = _own_tools_turn(messages)
        if own is not None:
            return own
        last: dict[str, Any] = next(
            (m for m in reversed(messages) if m.get("role") == "assistant"), {}
        )
        structured = self._fallback(last)
        if structured is not None:
            return structured
        said = last.get("content") or ""
        reaction = self._react(said.lower())
        if reaction is not None:
            return Turn(text_message(reaction, role="user"))
        if "?" in said and self._next not in self._answered and 0 < self._next <= len(self._subs):
            # the agent asked something: answer once with the facts of the current request
            self._answered.add(self._next)
            facts = self._subs[self._next - 1].request.removeprefix("Ask the agent to ").rstrip(".")
            return Turn(
                text_message(
                    f"To be precise, I want to {facts[0].lower()}{facts[1:]}.", role="user"
                )
            )
        if self._next < len(self._subs):
            return self._advance()
        return Turn(text_message(STOP, role="user"))


def _own_tools_turn(messages: list[dict[str, Any]]) -> Turn | None:
    """Dual control: the call the agent just asked for, or the report of the user's own calls
    just made (None when the last message is neither)."""
    if not messages:
        return None
    last = messages[-1]
    if last.get("role") == "tool" and (last.get(PAYLOAD) or {}).get(BY_USER):
        shown = last.get("content") or "null"
        return Turn(text_message(f"I did it on my side. It shows: {shown}", role="user"))
    call = requested_call(last) if last.get("role") == "assistant" else None
    if call is None:
        return None
    given = call.get("args")
    args: dict[str, Any] = given if isinstance(given, dict) else {}
    return Turn(user_tool_call_message(str(call.get("id", "")), str(call.get("tool")), args))


USER_PROMPT = """You are a user interacting with an agent.

<USER_PROFILE>: This block contains the strict definition of your identity (Name, ID, Tier, etc.).
{profile}

<TASK_DESCRIPTION> (Your Soul & Goals): This is your master directive. It provides your goals.
You will live and breathe this script.

{task}

Rules:
- Just generate one line at a time to simulate the user's message.
- Do not give away all the instruction at once. Only provide the information that is necessary for the current step.
- Do not hallucinate information that is not provided in the instruction. For example, if the agent asks for the order id but it is not mentioned in the instruction, do not make up an order id, just say you do not remember or have it.
- If the instruction goal is satisfied, generate '###STOP###' as a standalone message without anything else to end the conversation.
- Do not repeat the exact instruction in the conversation. Instead, use your own words to convey the same information.
- Try to make the conversation as natural as possible, and stick to the personalities in the instruction."""


USER_TOOLS_RULE = """
- You have tools of your own (your device, your settings). Use them only when the agent asks you to do something on your side; then call the tool, and tell the agent in your own words what it showed."""


def user_system_prompt(package: TaskPackage, tools: list[dict[str, Any]] | None = None) -> str:
    """LOGIGEN's user-simulator prompt (Appendix B.1) for one task; with the user's own tools
    (dual control), one more rule saying when to use them."""
    p = package.user_profile
    profile = "\n".join(
        [
            f"Name: {p.name}",
            f"User ID: {p.user_id}",
            *(f"{k}: {v}" for k, v in p.attributes.items()),
        ]
    )
    text = USER_PROMPT.format(profile=profile, task=package.task_description)
    return text + USER_TOOLS_RULE if tools else text


def flip_roles(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation as the user simulator sees it: the assistant's words become the user's
    input; the agent's tool traffic and the policy prompt are not shown, the user's own tool
    calls (dual control) are, as the user's tool calls."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.get("role") == "assistant" and m.get("content"):
            out.append({"role": "user", "content": m["content"]})
        elif m.get("role") == "user":
            out += flipped_traffic(m)  # the user's own tool calls (dual control), if any
            own: dict[str, Any] = {"role": "assistant", "content": m.get("content") or ""}
            if m.get("tool_calls"):
                own["tool_calls"] = m["tool_calls"]
            out.append(own)
        elif m.get("role") == "tool" and (m.get(PAYLOAD) or {}).get(BY_USER):
            out.append({k: v for k, v in m.items() if k != PAYLOAD})
    return out
