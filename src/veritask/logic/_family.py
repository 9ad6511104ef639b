"""Logic task families (SSLogic): a generator, a question template and a pool of validators.

A family turns a difficulty (1-10) and a seeded RNG into inputs, renders them into a question
through ``[Input Slot N]`` placeholders, and knows the answer through validators: pure
functions ``solution(inputs)`` written independently of each other. An instance is accepted only
when every validator gives the same canonical answer.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from veritask._util import derive_seed

Category = Literal[
    "logical", "spatial", "symbolic", "temporal", "relational", "commonsense", "causal"
]
CATEGORIES: tuple[Category, ...] = (
    "logical",
    "spatial",
    "symbolic",
    "temporal",
    "relational",
    "commonsense",
    "causal",
)
Split = Literal["train", "validation", "test"]
Inputs = dict[str, Any]
Generator = Callable[[int, random.Random], tuple[Inputs, list[str]]]
Validator = Callable[[Inputs], Any]
Checker = Callable[[Inputs, str], bool]
TextSolver = Callable[[str], Any]
"""``(question_text) -> answer``: solves from the rendered question alone (see ``_textonly``)."""

_SLOT = re.compile(r"\[Input Slot (\d+)\]")


def canonical(answer: Any) -> str:
    """The canonical text of an answer: ints and bools as words, sequences comma-separated.

    Whitespace is collapsed but the case is kept ('Dorian', not 'dorian'): the stored answer is
    what a model should learn to write. Comparisons go through :func:`normalize`, which ignores
    case, so scoring is as strict as before."""
    if isinstance(answer, bool):
        return "yes" if answer else "no"
    if isinstance(answer, int):
        return str(answer)
    if isinstance(answer, float):
        return str(int(answer)) if answer.is_integer() else f"{answer:.6g}"
    if isinstance(answer, (list, tuple)):
        return ", ".join(canonical(a) for a in answer)
    return " ".join(str(answer).split())


def normalize(text: str) -> str:
    """How a model's answer is compared: trimmed, lowercased, whitespace collapsed, a final
    period dropped, commas spaced. Nothing else is forgiven: extra words are wrong."""
    text = " ".join(text.strip().split()).lower().rstrip(".")
    return re.sub(r"\s*,\s*", ", ", text)


_WORD = re.compile(r"[a-z0-9]+(?::[0-9]+)*")
"""A word; a clock time (10:15) is one word."""
RESAMPLES = 20
"""How many draws :func:`make_instance` makes before keeping a trivial one."""


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def copyable_answer(question_body: str, answer: str) -> bool:
    """True when an answer of several words can be copied from the question: its words appear
    in order in the question, or their letters form one word of it (a grid row). A one-word
    answer is usually one of the question's entities or numbers (a choice, not a copy); the
    copy baselines of the honest gates judge those against chance."""
    words = _words(answer)
    if len(words) < 2:
        return False
    body = _words(question_body)
    n = len(words)
    if any(body[i : i + n] == words for i in range(len(body) - n + 1)):
        return True
    return "".join(words) in set(body)


@dataclass(frozen=True)
class Family:
    """One task family.

    Attributes:
        id: Stable identifier (``snake_case``).
        version: Bumped whenever generated instances change.
        category: One of SSLogic's seven categories.
        template: The question with ``[Input Slot N]`` placeholders (1-based).
        generate: ``(difficulty, rng) -> (inputs, slot_texts)``; all randomness from ``rng``.
        validators: At least two independently written ``solution(inputs)`` functions.
        checker: Optional ``(inputs, answer_text) -> bool`` for problems with several right
            answers; when set, it decides correctness instead of string equality.
        answer_format: A short instruction appended to the question (how to write the answer).
        size: Optional measure of problem size, checked to grow with difficulty.
        text_solver: Optional ``(question) -> answer`` that reads only the rendered question,
            never the inputs; the text-only gate checks it agrees with the validator pool and
            raises ``Undetermined`` when the text admits no answer or several.
        trivial: Optional ``(inputs) -> bool``: the draw needs no step.
        hardness: Optional difficulty measure with a target range per level.
    """

    in_process: ClassVar[bool] = True
    """Whether the family's code runs in this process (built-ins) rather than in a sandboxed
    worker."""

    id: str
    version: str
    category: Category
    title: str
    template: str
    generate: Generator
    validators: tuple[Validator, ...]
    answer_format: str
    checker: Checker | None = None
    size: Callable[[Inputs], int] | None = None
    """Problem size (items, constraints, steps): must grow with difficulty on average."""
    tags: tuple[str, ...] = field(default_factory=tuple)
    text_solver: TextSolver | None = None
    trivial: Callable[[Inputs], bool] | None = None
    """Optional: True for inputs whose answer needs no step (the start state is the answer);
    such draws are resampled like copyable ones (see :func:`make_instance`)."""
    hardness: Any = None
    """Optional :class:`veritask.logic._hardness.Hardness`: the measured difficulty quantity,
    its target range per level and the structural shape of an instance."""

    def cpu_seconds(self) -> float:
        """CPU seconds spent so far on this family's behalf: Gate 1 times it with this clock,
        which other processes on a busy machine do not inflate."""
        return time.process_time()

    @property
    def slots(self) -> int:
        """How many input slots the template has."""
        return len(set(_SLOT.findall(self.template)))

    def render(self, slot_texts: Sequence[str]) -> str:
        """The question text: the template with its slots filled, then the answer format."""
        if len(slot_texts) != self.slots:
            raise ValueError(
                f"{self.id}: template has {self.slots} slots, generator gave {len(slot_texts)}"
            )
        body = _SLOT.sub(lambda m: slot_texts[int(m.group(1)) - 1], self.template)
        return f"{body}\n\n{self.answer_format}"


def question_body(family: Family, question: str) -> str:
    """The question without the family's answer-format instruction."""
    suffix = f"\n\n{family.answer_format}"
    return question[: -len(suffix)] if question.endswith(suffix) else question


def is_trivial(family: Family, inputs: Inputs, question: str, answer: str) -> bool:
    """The trivial-instance filter: the answer can be copied from the question, or the
    family's ``trivial`` hook says the draw needs no step."""
    if copyable_answer(question_body(family, question), answer):
        return True
    return family.trivial is not None and bool(family.trivial(inputs))


def instance_seed(
    family: str, version: str, split: str, seed: int, index: int, difficulty: int | None = None
) -> int:
    """A 63-bit seed from (family, version, split, seed, index, difficulty): splits never share
    a stream, and neither do two difficulties of the same index. Without ``difficulty`` the
    seed is the one of a difficulty-free stream (kept for callers that pass none)."""
    if difficulty is None:
        return derive_seed(family, version, split, seed, index)
    return derive_seed(family, version, split, seed, index, "d", difficulty)


@dataclass(frozen=True)
class Instance:
    """One generated problem with its hidden state and canonical answer."""

    family: str
    version: str
    split: str
    seed: int
    index: int
    difficulty: int
    question: str
    inputs: Mapping[str, Any]
    answer: str

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "family": self.family,
            "version": self.version,
            "split": self.split,
            "seed": self.seed,
            "index": self.index,
            "difficulty": self.difficulty,
            "question": self.question,
            "inputs": dict(self.inputs),
            "answer": self.answer,
        }


class ConsensusError(ValueError):
    """The validator pool disagreed on an instance."""


def solve(family: Family, inputs: Inputs) -> str:
    """The consensus answer of the family's validators; ConsensusError when they disagree.

    Validators agree when their answers are equal under :func:`normalize`; the first
    validator's canonical text (with its case) is the answer."""
    answers = [canonical(v(inputs)) for v in family.validators]
    if len({normalize(a) for a in answers}) != 1:
        raise ConsensusError(f"{family.id}: validators disagree: {answers}")
    return answers[0]


def make_instance(
    family: Family, difficulty: int, *, split: str = "train", seed: int = 0, index: int = 0
) -> Instance:
    """Generate, render and solve one instance (deterministic in its arguments).

    A trivial draw (:func:`is_trivial`) is drawn again from the same seeded stream, at most
    ``RESAMPLES`` times in all, so the instance stays a function of its arguments."""
    if not 1 <= difficulty <= 10:
        raise ValueError(f"difficulty must be 1-10, got {difficulty}")
    rng = random.Random(instance_seed(family.id, family.version, split, seed, index, difficulty))
    for _ in range(RESAMPLES):
        inputs, slot_texts = family.generate(difficulty, rng)
        question = family.render(slot_texts)
        answer = solve(family, inputs)
        if not is_trivial(family, inputs, question, answer):
            break
    return Instance(
        family=family.id,
        version=family.version,
        split=split,
        seed=seed,
        index=index,
        difficulty=difficulty,
        question=question,
        inputs=inputs,
        answer=answer,
    )


def score_answer(
    answer_text: str | None, instance: Instance, family: Family | None = None
) -> float:
    """Strict scoring: 1.0 when the normalized answer equals the canonical one (or the family's
    checker accepts it), else 0.0. A right answer followed by anything else scores 0."""
    if answer_text is None:
        return 0.0
    if family is not None and family.checker is not None:
        return 1.0 if family.checker(dict(instance.inputs), normalize(answer_text)) else 0.0
    return 1.0 if normalize(answer_text) == normalize(instance.answer) else 0.0
