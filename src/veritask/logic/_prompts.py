"""The prompts of the gates and of the evolution loop, and what they show.

Gate prompts: :data:`REVIEW_SYSTEM` and :func:`review_prompt` (Gate 1's quality reviewer, with
:data:`REVIEW_TOOL_NOTE` when it may run code), :data:`BLIND_PROMPT` (Gate 2b's blind solvers).
Evolution prompts: :data:`EVOLVE_SYSTEM` with :func:`seed_prompt` (propose) and
:func:`refine_prompt` (refine, fed by :func:`gate_feedback`), :data:`VALIDATOR_SYSTEM` with
:func:`validator_prompt` (the independent validator builder), :data:`CURATE_SYSTEM` with
:func:`curate_prompt` (the model curator of the playbook).
Everything here is pure: text in, text out.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Sequence
from typing import Any

from veritask.logic._draft import Draft, strip_validators
from veritask.logic._family import CATEGORIES, Family, Instance, make_instance
from veritask.logic._filefamily import FileFamily
from veritask.logic._playbook import Playbook
from veritask.logic._reports import CRITERIA, FamilyGateRecord
from veritask.logic._sandbox import DEFAULT_IMPORTS
from veritask.logic._settings import DEFAULT_PROBES

_SOURCE_CHARS = 20000

# --- Gate 1: the quality reviewer ----------------------------------------------------------

REVIEW_SYSTEM = (
    "You review task families for a dataset of verifiable logic problems. A family is a "
    "generator of questions, a question template and validators that compute the answer. "
    "Judge logical correctness and solvability; tolerate long or plain wording unless it blocks "
    "understanding. Reply with JSON only."
)


def family_source(family: Family) -> str | None:
    """The source of a family's code: a family file's text, or a built-in's module source."""
    if isinstance(family, FileFamily):
        return family.source
    module = inspect.getmodule(family.generate)
    try:
        return inspect.getsource(module) if module is not None else None
    except (OSError, TypeError):
        return None


def review_prompt(family: Family, samples: Sequence[Instance]) -> str:
    """The reviewer's prompt: family, samples with answers, source and the verdict schema."""
    shown = "\n\n".join(
        f"### Sample (difficulty {s.difficulty})\nQuestion:\n{s.question}\n\nOfficial answer: {s.answer}"
        for s in samples
    )
    source = family_source(family)
    code = f"\n\n## Family code\n```python\n{source[:_SOURCE_CHARS]}\n```" if source else ""
    criteria = "\n".join(f'  "{c}": {{"passed": true|false, "reason": "..."}},' for c in CRITERIA)
    return (
        f"## Family {family.id}: {family.title} ({family.category})\n\n"
        f"Template:\n{family.template}\n\nAnswer format: {family.answer_format}\n\n"
        f"{shown}{code}\n\n"
        "## Criteria\n"
        "- well_posed: every question is complete and consistent, with exactly one right answer.\n"
        "- unambiguous_answer_format: the answer format says exactly how to write the answer "
        "(order, separators, case, units), so a right answer cannot be marked wrong.\n"
        "- answer_derivable: the official answer follows from the question text alone.\n"
        "- difficulty_scaling: larger difficulties give harder problems (size, constraints, "
        "steps) without shortcuts.\n"
        "- no_leaked_answer: the question does not state or trivially reveal the answer.\n\n"
        "Reply with this JSON object and nothing else:\n"
        f"{{\n{criteria}\n"
        '  "verdict": "pass" or "fail" (fail when any criterion fails),\n'
        '  "feedback": "one or two sentences: what to change"\n}'
    )


REVIEW_TOOL_NOTE = """

## Testing claims with code
You may call the `run_python` tool (at most {calls} times) to test the family before you judge:
`import family` gives `family.samples` (the samples above, with their inputs) and the family's
functions (`family.generate(difficulty, rng)`, `family.solution(inputs)`, ...). For example, run
the validator on an instance, or search an instance for a second valid answer; a question with
two right answers is not well posed. Then reply with the JSON verdict."""


# --- Gate 2b: the blind solvers -------------------------------------------------------------


BLIND_PROMPT = """You are a logic problem solver (attempt {attempt}). Read the problem carefully and \
solve it independently.

## Problem

{question}

## Requirements

1. Reason step by step.
2. End with the final answer, written exactly as the problem's answer format asks, inside \
\\boxed{{...}}, for example \\boxed{{42}}.
3. If the problem cannot be solved from the information given, answer \\boxed{{N/A}}."""


BLIND_TOOL_NOTE = """

You may call the `run_python` tool (at most {calls} times) to write and run code that helps \
your reasoning; print intermediate results. Then give your final answer as asked."""


# --- evolution: agent and validator builder ------------------------------------------------


FORMAT_GUIDE = f"""A family file is one Python module with:

FAMILY = {{
    "id": "snake_case_id",        # a new id: lowercase letters, digits, underscores
    "version": "1",
    "category": "...",            # one of: {", ".join(CATEGORIES)}
    "title": "Short title",
    "template": "Question text with [Input Slot 1], [Input Slot 2], ... placeholders",
    "answer_format": "One sentence saying exactly how to write the answer.",
}}

def generate(difficulty, rng):
    # difficulty: int 1-10; rng: a random.Random. Draw EVERY random choice from rng.
    # Return (inputs, slot_texts): inputs is JSON data (a dict with string keys; values are
    # lists, dicts, str, int, float, bool or None); slot_texts is a list of str, one per
    # [Input Slot N], in order.

def solution(inputs):             # a validator; more may be named solution_<name>
    # Compute the unique answer from inputs alone: an int, str, bool or a list of those.
    # Answers are compared after canonicalization: ints as digits, True/False as yes/no,
    # lists joined with ", ", text lowercased with whitespace collapsed.

def solve_text(question):         # the text-only solver
    # Parse the rendered question text (nothing else) and return the answer, or None when the
    # text does not determine a unique answer. It proves every question is answerable from its
    # text alone; a family without it, or with a question it cannot answer, fails the gate.

Optional: def check(inputs, answer_text) -> bool (only when several answers are right) and
def size(inputs) -> int (the problem size; it must grow with difficulty).

The file runs in a sandbox: only these imports are allowed: {", ".join(sorted(DEFAULT_IMPORTS))}.
No files, network, processes or printing; each call has a 2-second CPU limit."""


EVOLVE_SYSTEM = f"""You are a code reasoning agent that evolves logic task families.

Given a seed family, design a NEW family whose reasoning chain substantively deepens the seed's
(new rules, interacting constraints, longer inference chains), not a reskinned story. Keep the
seed's core objective and answer style.

Requirements:
- Difficulty 1-3 is computationally simple, 4-6 medium, 7-10 hard; grow constraints and reasoning
  steps with difficulty.
- Every question must be self-contained, unambiguous and have exactly one right answer; define
  every term, order and tie-break.
- The answer must not degenerate: no single answer above 30% of instances at any difficulty.
- The question must not reveal the answer, and must not be solvable by a shortcut.
- Keep runtime small: generation plus validation in milliseconds.

Your family then goes through gates: static checks (slots, determinism, runtime, answer spread,
validator agreement), a pool of validators written independently from your template and
generator (any disagreement with yours rejects the family), an LLM quality review, and a blind
review where solvers who never see the answer must get instances at difficulties
{list(DEFAULT_PROBES)} right. Your code may be wrong: when a gate fails, check your own
generator and validator first.

{FORMAT_GUIDE}

Reply with the complete family file in one ```python block. You may add one ```json block
{{"lessons": ["..."]}} with at most three short, general lessons for future families."""


VALIDATOR_SYSTEM = f"""You write independent validators for logic task families.

Write a brand-new Python function `def solution(inputs):` that computes the unique right answer
of a question from the generator's inputs:
- use only the data in `inputs`; no randomness, no I/O, no printing;
- derive the answer from the question's rules yourself; helper functions and constants at the
  top level are fine; no `global` statements;
- raise an exception if `inputs` does not have the expected structure;
- return an int, str, bool or a list of those, matching the answer format (answers are compared
  after canonicalization: ints as digits, True/False as yes/no, lists joined with ", ", text
  lowercased with whitespace collapsed);
- only these imports are allowed: {", ".join(sorted(DEFAULT_IMPORTS))}.

Reply with the code in one ```python block."""


def seed_prompt(seed: Family, playbook: Playbook, seed_value: int) -> str:
    """The agent's first prompt: the seed family with samples and source, and the playbook."""
    samples = [
        make_instance(seed, d, split="evolve", seed=seed_value, index=i)
        for i, d in enumerate((2, 5, 8))
    ]
    shown = "\n\n".join(
        f"### Sample (difficulty {s.difficulty})\n{s.question}\n\nAnswer: {s.answer}"
        for s in samples
    )
    source = family_source(seed) or "(source not available)"
    lessons = "\n".join(f"- {lesson}" for lesson in playbook.lessons()) or "- (none yet)"
    return (
        f"## Seed family {seed.id}: {seed.title} ({seed.category})\n\n"
        f"Template:\n{seed.template}\n\nAnswer format: {seed.answer_format}\n\n{shown}\n\n"
        f"### Seed code (for understanding only; do not copy)\n```python\n{source}\n```\n\n"
        f"## Playbook: lessons from earlier runs\n{lessons}\n\n"
        "## Task\nWrite the complete family file of a new family evolved from this seed."
    )


def validator_prompt(draft: Draft, samples: Sequence[tuple[dict[str, Any], str]]) -> str:
    """The validator builder's prompt: template, generator without validators, sample inputs."""
    meta = draft.spec.meta
    shown = "\n\n".join(
        f"### Sample {i + 1}\nInputs: {json.dumps(inputs, sort_keys=True)}\nQuestion:\n{question}"
        for i, (inputs, question) in enumerate(samples)
    )
    return (
        f"## Family {meta['id']}: {meta['title']}\n\nTemplate:\n{meta['template']}\n\n"
        f"Answer format: {meta['answer_format']}\n\n"
        f"## Generator code (validators removed)\n```python\n{strip_validators(draft.source)}\n```\n\n"
        f"{shown}\n\nWrite `def solution(inputs):` for this family."
    )


def refine_prompt(
    round_no: int,
    problems: Sequence[str],
    report: dict[str, Any],
    playbook: Playbook | None = None,
) -> str:
    """The agent's prompt after a failed round: problem lines, the structured report and the
    playbook as curated after the round."""
    lines = "\n".join(f"- {p}" for p in problems[:25]) or "- (no detail)"
    detail = json.dumps(report, indent=1, ensure_ascii=False)[:12000]
    lessons = ""
    if playbook is not None:
        shown = "\n".join(f"- {lesson}" for lesson in playbook.lessons()) or "- (none yet)"
        lessons = f"## Playbook: lessons curated after this round\n{shown}\n\n"
    return (
        f"Round {round_no}: the candidate failed.\n\nProblems:\n{lines}\n\n"
        f"Structured report:\n```json\n{detail}\n```\n\n{lessons}"
        "Find the cause (an ambiguous question, a generator bug, a validator bug) and reply with "
        "the complete corrected family file in one ```python block (same rules as before)."
    )


CURATE_SYSTEM = """You maintain the experience playbook of a team that evolves logic task \
families: short lessons shown to the agent that writes the next family. The goal is families \
that stay hard at difficulty 7-10 (advanced reasoning models still fail) while passing every \
gate: validators that agree, a question with exactly one right answer, no leaked answer, blind \
solvers able to solve it.

Compare the existing lessons with the round's evidence and its candidate lessons, then:
1. Align with the goal: drop lessons that push toward easier problems or weaker constraints; \
keep or rewrite lessons that strengthen multi-step reasoning, interacting constraints, \
generator/validator co-verification, and the prevention of shortcuts.
2. Filter: merge lessons that say the same thing; rewrite overly specific ones so they transfer \
to other families.
3. Ground every change in the evidence: cite the evidence lines (E1, E2...) it came from.
4. Keep each lesson one concise, actionable sentence (at most 300 characters) and the playbook \
within its limit.

Reply with JSON only."""


def curate_prompt(evidence: dict[str, str], playbook: Playbook) -> str:
    """The model curator's prompt: the round's evidence, the current lessons and the schema."""
    shown = "\n".join(f"{k}: {v}" for k, v in evidence.items())
    current = (
        "\n".join(f"- [{e.key}] (score {e.score}) {e.text}" for e in playbook.entries)
        or "- (empty)"
    )
    return (
        f"## Evidence from the round\n{shown}\n\n"
        f"## Current playbook ({len(playbook.entries)} of at most {playbook.limit} lessons)\n"
        f"{current}\n\n"
        "## Answer\nA JSON object with the operations to apply, in order (an empty list keeps "
        "the playbook as it is):\n"
        '{"operations": [\n'
        '  {"action": "add", "key": "new_key", "text": "lesson", "evidence": ["E2"]},\n'
        '  {"action": "merge", "keys": ["key_a", "key_b"], "key": "merged_key", '
        '"text": "lesson", "evidence": ["E3"]},\n'
        '  {"action": "rewrite", "keys": ["key_c"], "text": "lesson", "evidence": ["E4"]},\n'
        '  {"action": "drop", "keys": ["key_d"], "evidence": ["E1"]}\n'
        "]}\n"
        "Keys are lowercase letters, digits and _.:- ; a key names one lesson; an operation "
        "touches each lesson at most once."
    )


def gate_feedback(record: FamilyGateRecord) -> dict[str, Any]:
    """The part of a gate record the agent needs to refine: problems, disagreements, failed
    blind attempts (question, expected answer, solver answers) and failed review criteria."""
    out: dict[str, Any] = {"passed": record.passed, "skipped": record.skipped}
    if record.consensus is not None and record.consensus.disagreements:
        out["disagreements"] = record.consensus.disagreements[:5]
    if record.review is not None and not record.review.passed:
        out["review"] = {"problems": record.review.problems, "feedback": record.review.feedback}
    if record.blind is not None and not record.blind.passed:
        failed = [
            {"difficulty": p["difficulty"], **a}
            for p in record.blind.probes
            if not p["confirmed"]
            for a in p["attempts"]
        ]
        out["blind_failures"] = failed[:4]
    return out
