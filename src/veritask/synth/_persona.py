"""Persona queries with information hiding (AgentSkiller section 3.17).

A persona task tells the user simulator four things:

- the **grounded instruction**: the whole goal with every value it needs (what the projection's
  ``total_goal`` says), so the simulator can answer any question;
- a **motivation**: why this user wants it, from the procedures' goals;
- a **start-up query**: the first message, which states one pain point only (the first
  sub-goal, in the user's words, without its values or the goals after it);
- a **hidden profile**: everything else (who the user is, each request with its values, the
  reactions to refusals, the false beliefs), revealed only when the agent asks.

The symbolic :func:`persona_of` builds it from a projection; :class:`LLMPersonaWriter` has a
model write the same four fields in natural language. Both pass :func:`persona_problems`: the
spoiler check over the whole text, and the information-hiding check on the start-up query (it
names exactly one sub-goal and none of the values the user reveals later).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from veritask.model import (
    CostLedger,
    GenerateConfig,
    ModelProvider,
    ModelRole,
    StructuredOutputError,
    ask,
    parse_model,
)
from veritask.policy import DomainSpec
from veritask.synth._llm_projector import ProjectionRejected
from veritask.synth._projector import Projection
from veritask.task import (
    RowRef,
    TaskDescription,
    TaskPackage,
    WitnessCall,
    decided_spoilers,
    find_spoilers,
    task_asks,
    unstated_in,
)

PERSONA_TAG = "persona"


class Persona(BaseModel):
    """A persona task (see the module docstring)."""

    instruction: str = Field(min_length=1)
    motivation: str = Field(min_length=1)
    startup_query: str = Field(min_length=1)
    hidden_profile: list[str] = Field(min_length=1)

    def render(self) -> str:
        """The text the user simulator reads."""
        lines = ["INSTRUCTION (your whole goal; never recite it at once):", self.instruction]
        lines += ["", "MOTIVATION:", self.motivation]
        lines += ["", "START-UP QUERY (your first message, and all it says):", self.startup_query]
        lines += ["", "HIDDEN PROFILE (reveal an item only when the agent asks for it):"]
        lines += [f"- {item}" for item in self.hidden_profile]
        return "\n".join(lines)


def _what(title: str) -> str:
    return title[0].lower() + title[1:] if title else title


def _sentence(text: str) -> str:
    text = text.strip().rstrip(".")
    return text[0].lower() + text[1:] if text else text


def persona_of(projection: Projection, spec: DomainSpec) -> Persona:
    """The symbolic persona of a projected episode."""
    task = projection.task
    goals = {tx.name: tx.goal for tx in spec.transactions}
    titles = list(dict.fromkeys(s.title for s in task.sub_goals))
    reasons = [_sentence(goals[t]) for t in titles if goals.get(t)]
    if reasons:
        motivation = "You are reaching out because you need to " + "; and also ".join(reasons)
    else:
        motivation = "You need " + "; then ".join(_what(t) for t in titles)
    first = task.sub_goals[0].title
    hidden = [task.who_you_are]
    for sub in task.sub_goals:
        hidden.append(sub.request)
        hidden += [f"When it comes up: {trigger}" for trigger in sub.reactive_triggers]
    hidden += [
        f"You believe at first: {b.removeprefix('You believe ')}" for b in task.false_beliefs
    ]
    return Persona(
        instruction=task.total_goal,
        motivation=motivation + ".",
        startup_query=f"Hi, I need help with something: I want to {_what(first)}.",
        hidden_profile=hidden,
    )


def _stated_values(task: TaskDescription) -> list[str]:
    """The values the user states in their requests (revealed later, when asked): the strings
    longer than two characters and the numbers of two digits or more that a request, its
    fallbacks or the records it names (a trip's purpose, a flight's code) state."""
    out: list[str] = []
    for request in task_asks(task):
        refs = [r for r in (request.target, *request.refs.values()) if r is not None]
        values = [*request.values.values(), *(v for r in refs for v in _leaves(r))]
        out += [str(v) for v in values if _telling(v)]
    return sorted(set(out))


def _leaves(ref: RowRef) -> list[Any]:
    out: list[Any] = []
    for value in ref.match.values():
        out += _leaves(value) if isinstance(value, RowRef) else [value]
    return out


def _telling(value: Any) -> bool:
    """Whether a value, said in the first message, would give a detail away."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return abs(value) >= 10
    return isinstance(value, str) and len(value) > 2


def _mentions(text: str, phrase: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(phrase.lower())}(?!\w)", text.lower()) is not None


def persona_problems(
    persona: Persona,
    task: TaskDescription,
    spec: DomainSpec,
    spoiler_args: tuple[set[str], list[str], list[WitnessCall]],
) -> list[str]:
    """Why a persona cannot be used (empty when it can): a spoiler anywhere in its text
    (``spoiler_args``: internal ids, ids the user knows, the witness), or a start-up query
    that names more than one sub-goal or a value the user keeps hidden."""
    return _spoilers(persona, spec, spoiler_args) + _told_too_much(persona, task)


def _spoilers(
    persona: Persona,
    spec: DomainSpec,
    spoiler_args: tuple[set[str], list[str], list[WitnessCall]],
) -> list[str]:
    internal, known, witness = spoiler_args
    text = persona.render()
    return find_spoilers(text, spec, internal, known) + decided_spoilers(text, spec, witness)


def _told_too_much(persona: Persona, task: TaskDescription) -> list[str]:
    """The information-hiding check of the start-up query."""
    problems: list[str] = []
    query = persona.startup_query
    titles = list(dict.fromkeys(s.title for s in task.sub_goals))
    named = [t for t in titles if _mentions(query, t)]
    if len(named) > 1:
        problems.append(f"the start-up query states {len(named)} pain points: {named}")
    problems += [
        f"the start-up query gives away {value!r}"
        for value in _stated_values(task)
        if _mentions(query, value)
    ]
    return problems


def persona_text(
    projection: Projection,
    spec: DomainSpec,
    spoiler_args: tuple[set[str], list[str], list[WitnessCall]],
) -> tuple[str, list[str]]:
    """The symbolic persona's text for a package, and its problems (empty when usable)."""
    persona = persona_of(projection, spec)
    return persona.render(), persona_problems(persona, projection.task, spec, spoiler_args)


PERSONA_PROMPT = """You write the opening of a customer conversation for a user simulator. \
From a grounded task (a structured draft) write four fields in natural, first-person language:

- "instruction": the user's whole goal, with every name, amount and choice of the draft;
- "motivation": one or two sentences on why this user wants it (plausible, consistent with who \
they are);
- "startup_query": the user's first message. It states ONE pain point only: the first of the \
requests' goals, in everyday words, without its details (no names, amounts or dates the draft \
gives) and without the later goals;
- "hidden_profile": a list of facts the user reveals only when the agent asks: who they are, \
each request with its values, how they react to refusals, what they believe at first. Every \
value a request states (a name, an amount, a step, a code) appears in your text exactly as the \
draft writes it.

Never write tool names, table or column names, or internal record ids. Answer with one JSON \
object and nothing else:
{"instruction": "...", "motivation": "...", "startup_query": "...", "hidden_profile": ["..."]}"""


LEAK_REASON = "the persona names what the user cannot know"
HIDING_REASON = "the start-up query says too much"
UNSTATED_REASON = "the persona must state these values as the draft does"


def rejection_reason(last: str) -> str:
    """The discard reason of a persona the model could not get right, from the problems of
    its last answer: ``spoiler leak``, ``persona hides too little`` or ``persona rejected``."""
    if LEAK_REASON in last:
        return "spoiler leak"
    if HIDING_REASON in last:
        return "persona hides too little"
    return "persona rejected"


class LLMPersonaWriter(ModelRole):
    """Writes persona tasks with a model; the answer is parsed, checked with
    :func:`persona_problems` and for every value the requests state (the text must still
    ground the task), sent back with the problems named a bounded number of times, and
    otherwise rejected (``veritask.model.StructuredOutputError``)."""

    def __init__(
        self,
        spec: DomainSpec,
        provider: ModelProvider,
        ledger: CostLedger | None = None,
        max_repairs: int = 2,
        config: GenerateConfig | None = None,
    ) -> None:
        super().__init__(provider, ledger, max_repairs, config)
        self.spec = spec

    def parser(
        self,
        task: TaskDescription,
        spoiler_args: tuple[set[str], list[str], list[WitnessCall]],
    ) -> Callable[[str], Persona]:
        """Parse an answer into a Persona and reject it when it has problems."""
        validate = parse_model(Persona)

        def parse(text: str) -> Persona:
            persona = validate(text)
            problems: list[str] = []
            if leaks := _spoilers(persona, self.spec, spoiler_args):
                problems.append(f"{LEAK_REASON}: {'; '.join(leaks)}")
            if told := _told_too_much(persona, task):
                problems.append(f"{HIDING_REASON}: {'; '.join(told)}")
            if missing := unstated_in(task, persona.render()):
                said = sorted({f"{u.arg} {u.reason.split(' is not')[0]}" for u in missing})
                problems.append(f"{UNSTATED_REASON}: {'; '.join(said)}")
            if problems:
                raise ValueError(". ".join(problems) + ". Rewrite it without these problems.")
            return persona

        return parse

    async def write(
        self,
        projection: Projection,
        spoiler_args: tuple[set[str], list[str], list[WitnessCall]],
        config: GenerateConfig | None = None,
    ) -> Persona:
        """The persona of a projected episode, in the model's words (charged to module
        ``persona``).

        Raises:
            veritask.model.StructuredOutputError: Still unusable after the repair rounds.
        """
        draft = persona_of(projection, self.spec)
        task = projection.task
        payload: dict[str, Any] = {
            "draft_task": task.model_dump(mode="json", exclude={"sub_goals"}),
            "requests": [{"goal": s.title, "request": s.request} for s in task.sub_goals],
            "symbolic_persona": draft.model_dump(mode="json"),
        }
        messages = [
            {"role": "system", "content": PERSONA_PROMPT},
            {"role": "user", "content": _json(payload)},
        ]
        persona: Persona = await ask(
            self.provider,
            messages,
            self.parser(task, spoiler_args),
            module="persona",
            ledger=self.ledger,
            config=config or self.config,
            max_repairs=self.max_repairs,
        )
        return persona

    async def dress(
        self,
        projection: Projection,
        package: TaskPackage,
        spoiler_args: tuple[set[str], list[str], list[WitnessCall]],
        config: GenerateConfig | None = None,
    ) -> TaskPackage:
        """``package`` (built from ``projection``) with the model's persona as its text and
        the ``persona`` tag; the structured task, and so the certificate, stay as they are.

        Raises:
            ProjectionRejected: No usable persona after the repair rounds; its ``reason`` is
                from :func:`rejection_reason`, its ``detail`` the last answer's problems.
        """
        try:
            persona = await self.write(projection, spoiler_args, config)
        except StructuredOutputError as exc:
            last = exc.reasons[-1]
            raise ProjectionRejected(rejection_reason(last), last) from None
        tags = sorted({*package.tags, PERSONA_TAG})
        return package.model_copy(update={"task_description": persona.render(), "tags": tags})


def _json(data: Any) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False)


__all__ = [
    "HIDING_REASON",
    "LEAK_REASON",
    "PERSONA_PROMPT",
    "PERSONA_TAG",
    "UNSTATED_REASON",
    "LLMPersonaWriter",
    "Persona",
    "persona_of",
    "persona_problems",
    "persona_text",
    "rejection_reason",
]
