"""Semantic task templates and the template judge (AgentSkiller sections 3.14.2-3.14.3).

A kept path's skeleton (:class:`TaskTemplate`: tools, bindings, placeholders) becomes a
:class:`SemanticTemplate`: a *motivation* (why the user wants this sequence) and an
*instruction* that asks for the path's writes in order, in a person's words, keeping the
values the user must supply as ``<table.column>`` placeholders. A model writes it in LLM mode
(:func:`template_prompt`, :func:`template_parser`); offline a seeded grammar does
(:func:`grammar_template`): openers, goal phrasings and joins drawn per template from the
seed, never a fixed ``look up X; then Y`` pattern.

A judge scores each template 1-5 on the paper's five dimensions (semantic clarity, logical
coherence, completeness, naturalness, specificity); only a template whose mean reaches
:data:`THRESHOLD` is kept. The model judge (:func:`judge_prompt`, :func:`judge_parser`) runs in
LLM mode and under the scripted provider in tests; offline, :func:`rubric_judge` scores the same
dimensions from checks on the text (every write's goal present and in path order, every
placeholder known and every required one present, no tool names or mechanical joins).
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from veritask.blueprint._toolgraph import TaskTemplate
from veritask.model import parse_model
from veritask.policy import DomainSpec, build_tools

Json = dict[str, Any]
DIMENSIONS = (
    "semantic_clarity",
    "logical_coherence",
    "completeness",
    "naturalness",
    "specificity",
)
"""The judge's dimensions, in the paper's order."""
THRESHOLD = 4.0
"""The mean score (of five, 1-5 each) a template needs to be kept."""
PLACEHOLDER = re.compile(r"<([A-Za-z_][\w]*\.[A-Za-z_]\w*)>")
_ARTICLES = ("a", "an", "the")
MECHANICAL = ("; then", "look up", "query_", "insert_", "update_")
"""Marks of a mechanical skeleton that a person's request does not contain."""


@dataclass(frozen=True)
class SemanticTemplate:
    """A path's template in a user's words.

    Attributes:
        id: The skeleton's id (``tpl-...``).
        tools: The path.
        motivation: Why the user wants the sequence (no placeholders).
        text: The instruction, with ``<table.column>`` placeholders.
        author: ``grammar`` or ``model``.
    """

    id: str
    tools: tuple[str, ...]
    motivation: str
    text: str
    author: str

    @property
    def placeholders(self) -> list[str]:
        """The placeholders of the instruction, in order of first use."""
        return list(dict.fromkeys(PLACEHOLDER.findall(self.text)))

    def instantiate(self, values: Mapping[str, Any]) -> str:
        """The grounded instruction: each placeholder replaced by its value (``values`` maps
        ``table.column`` to a value; a placeholder without one stays as it is)."""

        def fill(match: re.Match[str]) -> str:
            key = match.group(1)
            return str(values[key]) if key in values else match.group(0)

        return PLACEHOLDER.sub(fill, self.text)

    def to_json(self) -> Json:
        """A JSON-ready dict."""
        return {
            "id": self.id,
            "tools": list(self.tools),
            "motivation": self.motivation,
            "text": self.text,
            "placeholders": self.placeholders,
            "author": self.author,
        }


@dataclass(frozen=True)
class Verdict:
    """The judge's scores (1-5 per dimension), their mean and whether it reaches the bar."""

    scores: dict[str, int]
    reasons: tuple[str, ...] = ()

    @property
    def mean(self) -> float:
        """The aggregate score."""
        return sum(self.scores.values()) / len(self.scores)

    @property
    def passed(self) -> bool:
        """Whether the template is kept."""
        return self.mean >= THRESHOLD

    def to_json(self) -> Json:
        """A JSON-ready dict."""
        return {
            "scores": dict(self.scores),
            "mean": round(self.mean, 3),
            "passed": self.passed,
            "reasons": list(self.reasons),
        }


# --- what each step asks for -----------------------------------------------------------------


def _goal(spec: DomainSpec, tool: str) -> str:
    """The step's goal phrase (the first transaction on the tool, else its kind and table)."""
    for tx in spec.transactions:
        if tx.tool == tool:
            text = tx.goal.strip().rstrip(".")
            text = text[:1].lower() + text[1:]
            # a goal stated as an event ("a manager approves ...") is not something to do
            return f"make sure {text}" if text.split(" ", 1)[0] in _ARTICLES else text
    kind, _, table = tool.partition("_")
    verb = {"query": "check", "insert": "add", "update": "change"}.get(kind, kind)
    return f"{verb} a {table.replace('_', ' ').rstrip('s')} record"


def step_goals(spec: DomainSpec, skeleton: TaskTemplate) -> list[tuple[str, str, list[str]]]:
    """``(tool, goal phrase, placeholders)`` for each write of the path, in order."""
    tools = build_tools(spec)
    return [
        (name, _goal(spec, name), list(skeleton.placeholders.get(name, [])))
        for name in skeleton.tools
        if tools[name].writes
    ]


# --- the offline grammar ---------------------------------------------------------------------

_REASONS = (
    "My plans have changed this week, so I need to {last}.",
    "I'm trying to get my {service} affairs in order before a busy stretch, and in the end I "
    "need to {last}.",
    "Something came up at short notice and I have to {last}.",
    "A colleague reminded me that I still need to {last}, and I'd rather sort it out today.",
    "I'm preparing for the coming weeks and want to {last} while I remember.",
    "I just checked my calendar and realised I need to {last} soon.",
)
_FIRST = (
    "I'd like to {goal}{extra}.",
    "Could you help me {goal}{extra}?",
    "I want to {goal}{extra}.",
)
_NEXT = (
    "Once that's done, I also need to {goal}{extra}.",
    "After that, please {goal}{extra}.",
    "With that in place, I'd like to {goal}{extra}.",
    "When that goes through, I want to {goal}{extra} as well.",
)
_WITH = (" ({holes})", ", using {holes}", " with {holes}")


def _holes(holes: Sequence[str]) -> str:
    if len(holes) <= 1:
        return "".join(holes)
    return ", ".join(holes[:-1]) + " and " + holes[-1]


def template_rng(seed: int, template_id: str) -> random.Random:
    """The grammar's random source for one template: a pure function of seed and id."""
    digest = hashlib.sha256(f"{seed}:{template_id}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def grammar_template(spec: DomainSpec, skeleton: TaskTemplate, seed: int) -> SemanticTemplate:
    """The offline template of one path, drawn from the grammar by ``(seed, template id)``."""
    rng = template_rng(seed, skeleton.id)
    steps = step_goals(spec, skeleton)
    if not steps:  # a read-only path: the user wants to know something
        table = skeleton.tools[-1].partition("_")[2].replace("_", " ")
        steps = [(skeleton.tools[-1], f"find out about my {table}", [])]
    service = spec.name.replace("_", " ")
    motivation = rng.choice(_REASONS).format(last=steps[-1][1], service=service)
    sentences = []
    for i, (_, goal, holes) in enumerate(steps):
        frame = rng.choice(_FIRST if i == 0 else _NEXT)
        joined = rng.choice(_WITH).format(holes=_holes(holes)) if holes else ""
        sentences.append(frame.format(goal=goal, extra=joined))
    return SemanticTemplate(skeleton.id, skeleton.tools, motivation, " ".join(sentences), "grammar")


# --- the model author ------------------------------------------------------------------------


class TemplateAnswer(BaseModel):
    """The model's template: a motivation and an instruction with placeholders."""

    motivation: str = Field(min_length=1)
    text: str = Field(min_length=1)


def _path_lines(spec: DomainSpec, skeleton: TaskTemplate) -> str:
    tools = build_tools(spec)
    lines = []
    for name in skeleton.tools:
        tool = tools[name]
        holes = ", ".join(skeleton.placeholders.get(name, [])) or "none"
        lines.append(f"- {name} ({tool.kind} {tool.table}): {_goal(spec, name)}; values: {holes}")
    return "\n".join(lines)


def template_prompt(spec: DomainSpec, skeleton: TaskTemplate) -> list[Json]:
    """The request for one path's semantic template (section 3.14.2)."""
    body = (
        f"Service: {spec.name}\nTool path (in order):\n{_path_lines(spec, skeleton)}\n\n"
        "Write the task template a real user of this service would bring: a motivation (why "
        "they want this sequence, one or two sentences, no placeholders) and an instruction "
        "that asks for every write of the path in order, in natural words, keeping each value "
        "the user supplies as its <table.column> placeholder. Use only what the tools do; no "
        "tool names.\n"
        'Answer: {"motivation": "...", "text": "..."}'
    )
    return _messages("template", skeleton.id, body)


def template_parser(spec: DomainSpec, skeleton: TaskTemplate) -> Callable[[str], SemanticTemplate]:
    """The parser of :func:`template_prompt`'s answer: refuses (for repair) a placeholder the
    path does not know, a missing required one, or a placeholder in the motivation."""
    known = {h for holes in skeleton.placeholders.values() for h in holes}
    required = {h for _, _, holes in step_goals(spec, skeleton) for h in holes}

    def parse(text: str) -> SemanticTemplate:
        answer = parse_model(TemplateAnswer)(text)
        found = {f"<{p}>" for p in PLACEHOLDER.findall(answer.text)}
        problems = [f"unknown placeholder {p}" for p in sorted(found - known)]
        problems += [f"missing placeholder {p}" for p in sorted(required - found)]
        if PLACEHOLDER.search(answer.motivation):
            problems.append("the motivation holds a placeholder")
        if problems:
            raise ValueError("; ".join(problems))
        return SemanticTemplate(
            skeleton.id, skeleton.tools, answer.motivation.strip(), answer.text.strip(), "model"
        )

    return parse


# --- the judge -------------------------------------------------------------------------------


class JudgeAnswer(BaseModel):
    """The model judge's scores, 1-5 on each dimension, and why."""

    semantic_clarity: int = Field(ge=1, le=5)
    logical_coherence: int = Field(ge=1, le=5)
    completeness: int = Field(ge=1, le=5)
    naturalness: int = Field(ge=1, le=5)
    specificity: int = Field(ge=1, le=5)
    reason: str = ""


def judge_prompt(
    spec: DomainSpec, skeleton: TaskTemplate, template: SemanticTemplate
) -> list[Json]:
    """The request to score one template (section 3.14.3)."""
    body = (
        f"Service: {spec.name}\nTool path (in order):\n{_path_lines(spec, skeleton)}\n\n"
        f"Motivation: {template.motivation}\nInstruction: {template.text}\n\n"
        "Score the template from 1 (poor) to 5 (excellent) on: semantic_clarity (unambiguous), "
        "logical_coherence (the steps make sense in this order), completeness (it asks for "
        "every write of the path), naturalness (a person would say it), specificity (the "
        "values the user supplies are placeholders, nothing invented).\n"
        'Answer: {"semantic_clarity": n, "logical_coherence": n, "completeness": n, '
        '"naturalness": n, "specificity": n, "reason": "..."}'
    )
    return _messages("judge", template.id, body)


def judge_parser(text: str) -> Verdict:
    """The parser of :func:`judge_prompt`'s answer."""
    answer = parse_model(JudgeAnswer)(text)
    scores = {d: int(getattr(answer, d)) for d in DIMENSIONS}
    return Verdict(scores, (answer.reason,) if answer.reason else ())


def _scale(share: float) -> int:
    """A share in [0, 1] as a 1-5 score."""
    return 1 + round(4 * max(0.0, min(1.0, share)))


def rubric_judge(spec: DomainSpec, skeleton: TaskTemplate, template: SemanticTemplate) -> Verdict:
    """The offline judge: the five dimensions scored from checks on the text."""
    steps = step_goals(spec, skeleton)
    text = template.text
    low = text.lower()
    positions = [low.find(goal.lower()) for _, goal, _ in steps]
    found = [p for p in positions if p >= 0]
    known = {h for holes in skeleton.placeholders.values() for h in holes}
    used = {f"<{p}>" for p in PLACEHOLDER.findall(text)}
    required = {h for _, _, holes in steps for h in holes}
    reasons: list[str] = []
    unknown = sorted(used - known)
    missing = sorted(required - used)
    marks = [m for m in MECHANICAL if m in low]
    clarity = 5 - 2 * len(unknown) - (0 if text.rstrip().endswith((".", "?", "!")) else 1)
    coherent = found == sorted(found)
    complete = len(found) / len(steps) if steps else 1.0
    bare = "_" in PLACEHOLDER.sub("", text)  # an identifier outside the placeholders
    natural = 5 - 2 * len(marks) - (0 if template.motivation else 2) - (2 if bare else 0)
    specific = 1 - len(missing) / len(required) if required else 1.0
    reasons += [f"unknown placeholder {p}" for p in unknown]
    reasons += [f"missing placeholder {p}" for p in missing]
    reasons += [f"mechanical wording {m!r}" for m in marks]
    if bare:
        reasons.append("an identifier outside the placeholders")
    if not coherent:
        reasons.append("the steps are not asked for in path order")
    if complete < 1:
        reasons.append(f"{len(steps) - len(found)} write(s) not asked for")
    scores = {
        "semantic_clarity": max(1, clarity),
        "logical_coherence": 5 if coherent else 2,
        "completeness": _scale(complete),
        "naturalness": max(1, natural),
        "specificity": _scale(specific),
    }
    return Verdict(scores, tuple(reasons))


def _messages(task: str, key: str, body: str) -> list[Json]:
    system = (
        "You write and review task templates for training tool-using agents. "
        "Answer with one JSON value in a ```json block and nothing else."
    )
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"Task: {task} | Key: {key}\n\n{body}"},
    ]


def judged_templates(
    spec: DomainSpec, skeletons: Sequence[TaskTemplate], seed: int
) -> list[tuple[SemanticTemplate, Verdict]]:
    """Every skeleton's grammar template and the rubric judge's verdict on it (offline)."""
    out = []
    for skeleton in skeletons:
        template = grammar_template(spec, skeleton, seed)
        out.append((template, rubric_judge(spec, skeleton, template)))
    return out


__all__ = [
    "DIMENSIONS",
    "THRESHOLD",
    "SemanticTemplate",
    "Verdict",
    "grammar_template",
    "judge_parser",
    "judge_prompt",
    "judged_templates",
    "rubric_judge",
    "step_goals",
    "template_parser",
    "template_prompt",
]
