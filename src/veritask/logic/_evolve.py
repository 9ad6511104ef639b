"""The evolution loop (SSLogic 3.2-3.4): an LLM agent evolves a seed family into a new family file.

One run of :func:`evolve_async`:

1. **Propose** (module ``propose``): the agent sees the seed family (template, answer format,
   sample questions with answers, source), the family-file format and the experience playbook,
   and writes a complete family file: ``FAMILY``, ``generate`` and at least one validator.
2. **Validators** (module ``validators``): separate calls, one per extra validator, write
   independent ``solution(inputs)`` functions from the template, the generator code (validators
   removed) and sample inputs. They never see the agent's validator code. Each is wrapped into a
   function ``solution_pool_<k>`` and appended to the file.
3. **Gates**: the assembled file is loaded in the sandbox and run through
   :func:`~veritask.logic._review.run_gates_async` (modules ``review`` and ``blind_review``).
4. **Refine** (module ``refine``): on failure the structured gate report goes back to the agent,
   which answers with a corrected file; steps 2-3 repeat, up to ``t_max`` rounds in all.

An accepted family is written as ``<out>/<id>.py`` with ``<id>.gates.json`` (its gate record)
and ``<id>.evolution.json`` (rounds and costs), so it loads through the registry like a
built-in. Every round's outcome updates the playbook (see :class:`Playbook`).
"""

from __future__ import annotations

import ast
import asyncio
import json
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from veritask.logic._family import CATEGORIES, Family, instance_seed, make_instance
from veritask.logic._filefamily import (
    FamilySpec,
    family_from_source,
    is_validator_name,
    parse_family_source,
)
from veritask.logic._registry import DirLike, all_families, get_family
from veritask.logic._review import (
    DEFAULT_PROBES,
    FamilyGateRecord,
    family_source,
    run_gates_async,
)
from veritask.logic._sandbox import DEFAULT_IMPORTS
from veritask.model import (
    CostLedger,
    GenerateConfig,
    ModelProvider,
    StructuredOutputError,
    ask,
    extract_block,
)

POOL_PREFIX = "solution_pool_"
"""Names of the validators the validator builder writes (``solution_pool_1``, ...)."""
_POOL_ARG = "pool_inputs__"


# --- playbook -------------------------------------------------------------------------------


@dataclass
class PlaybookEntry:
    """One lesson: a stable key, its text, how often it recurred, and when it was added/used."""

    key: str
    text: str
    score: int = 1
    added: int = 0
    last: int = 0


DEFAULT_LESSONS = (
    ("rng", "Draw every random choice from the rng argument; never from module-level random."),
    (
        "degenerate",
        "Keep answers spread out: no single answer may be more than 30% of instances at any "
        "difficulty.",
    ),
    (
        "answer_format",
        "Make the answer format exact (order, separators, case) so a right answer cannot be "
        "written two ways.",
    ),
    (
        "consensus",
        "State every rule, tie-break and edge case in the question, so validators written "
        "independently from it compute the same answer.",
    ),
)


@dataclass
class Playbook:
    """A bounded list of short lessons shown to the agent (SSLogic's experience playbook).

    Adding a lesson whose key is present replaces its text and raises its score; adding a new
    key to a full playbook first drops the least useful entry: the lowest score, then the one
    least recently added or reinforced.
    """

    limit: int = 20
    entries: list[PlaybookEntry] = field(default_factory=list)
    clock: int = 0

    @classmethod
    def default(cls, limit: int = 20) -> Playbook:
        """A playbook holding the built-in starter lessons."""
        book = cls(limit=limit)
        for key, text in DEFAULT_LESSONS:
            book.add(key, text)
        return book

    def add(self, key: str, text: str) -> None:
        """Add or reinforce a lesson (see the class docstring for the eviction rule)."""
        self.clock += 1
        text = " ".join(text.split())[:300]
        for entry in self.entries:
            if entry.key == key:
                entry.text, entry.score, entry.last = text, entry.score + 1, self.clock
                return
        while self.entries and len(self.entries) >= self.limit:
            worst = min(self.entries, key=lambda e: (e.score, e.last, e.added))
            self.entries.remove(worst)
        if self.limit > 0:
            self.entries.append(PlaybookEntry(key, text, 1, self.clock, self.clock))

    def lessons(self) -> list[str]:
        """The lessons, most useful first."""
        ranked = sorted(self.entries, key=lambda e: (-e.score, -e.last))
        return [e.text for e in ranked]

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "limit": self.limit,
            "clock": self.clock,
            "entries": [vars(e).copy() for e in self.entries],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Playbook:
        """Read back :meth:`to_json`."""
        entries = [PlaybookEntry(**e) for e in data.get("entries", [])]
        return cls(
            limit=int(data.get("limit", 20)), entries=entries, clock=int(data.get("clock", 0))
        )

    @classmethod
    def load(cls, path: str | Path, limit: int = 20) -> Playbook:
        """The playbook saved at ``path`` (its limit set to ``limit``), or the default one."""
        file = Path(path)
        if not file.exists():
            return cls.default(limit)
        book = cls.from_json(json.loads(file.read_text(encoding="utf-8")))
        book.limit = limit
        while len(book.entries) > limit:
            book.entries.remove(min(book.entries, key=lambda e: (e.score, e.last, e.added)))
        return book

    def save(self, path: str | Path) -> None:
        """Write the playbook as indented JSON."""
        file = Path(path)
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n", "utf-8")


_FAILURE_LESSONS: tuple[tuple[str, str, str], ...] = (
    # (key, substring of a problem line, lesson)
    ("slots", "slots", "Return exactly one slot text per [Input Slot N] in the template, in order."),
    ("rng", "not deterministic", DEFAULT_LESSONS[0][1]),
    ("degenerate", "of instances", DEFAULT_LESSONS[1][1]),
    ("runtime", "budget", "Keep generation plus every validator within a few milliseconds: "
     "bound brute force by the instance size."),
    ("sandbox", "forbidden", "Use only the allowed standard-library imports; never touch files, "
     "sockets or processes."),
    ("consensus", "consensus:", DEFAULT_LESSONS[3][1]),
    ("blind", "blind_review:", "When blind solvers fail, make rules, tie-breaks and the answer "
     "format explicit, and check the validator itself, before blaming the solver."),
    ("code", "failed in the sandbox", "Smoke-test the generator and validator at difficulties "
     "1 and 10 mentally: no exceptions, JSON-only inputs."),
)  # fmt: skip
_REVIEW_LESSONS = {
    "well_posed": "Make every question complete and consistent, with exactly one right answer.",
    "unambiguous_answer_format": DEFAULT_LESSONS[2][1],
    "answer_derivable": "Put every fact the answer depends on into the question text.",
    "difficulty_scaling": "Grow difficulty through size, constraints or steps, not wording.",
    "no_leaked_answer": "Never state or trivially reveal the answer in the question.",
}


def failure_lessons(problems: Iterable[str]) -> list[tuple[str, str]]:
    """The playbook lessons (key, text) that a failed round's problem lines point to."""
    out: dict[str, str] = {}
    for line in problems:
        for key, needle, text in _FAILURE_LESSONS:
            if needle in line:
                out.setdefault(key, text)
        for criterion, text in _REVIEW_LESSONS.items():
            if line.startswith(f"review: {criterion}:"):
                out.setdefault(f"review.{criterion}", text)
    return list(out.items())


# --- prompts --------------------------------------------------------------------------------

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


def _seed_prompt(seed: Family, playbook: Playbook, seed_value: int) -> str:
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


def _validator_prompt(draft: Draft, samples: Sequence[tuple[dict[str, Any], str]]) -> str:
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


def _refine_prompt(round_no: int, problems: Sequence[str], report: dict[str, Any]) -> str:
    lines = "\n".join(f"- {p}" for p in problems[:25]) or "- (no detail)"
    detail = json.dumps(report, indent=1, ensure_ascii=False)[:12000]
    return (
        f"Round {round_no}: the candidate failed.\n\nProblems:\n{lines}\n\n"
        f"Structured report:\n```json\n{detail}\n```\n\n"
        "Find the cause (an ambiguous question, a generator bug, a validator bug) and reply with "
        "the complete corrected family file in one ```python block (same rules as before)."
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


# --- parsing the agent's answers ------------------------------------------------------------


@dataclass(frozen=True)
class Draft:
    """An agent's family file as parsed: raw reply, file text, declared spec, lessons."""

    text: str
    source: str
    spec: FamilySpec
    lessons: tuple[str, ...] = ()


def _lessons(text: str) -> tuple[str, ...]:
    block = extract_block(text, ("json",))
    if block is None:
        return ()
    try:
        data = json.loads(block)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the ```json lessons block is not valid JSON: {exc.msg}") from None
    lessons = data.get("lessons") if isinstance(data, dict) else None
    if not isinstance(lessons, list) or not all(isinstance(x, str) for x in lessons):
        raise ValueError('the ```json block must be {"lessons": ["...", ...]}')
    return tuple(" ".join(x.split())[:300] for x in lessons[:3] if x.strip())


def parse_draft(text: str, taken: Iterable[str] = ()) -> Draft:
    """Parse the agent's reply: one ```python family file (one validator is enough here, the
    pool adds more) and optional lessons.

    Raises:
        ValueError: Why the reply cannot be used (sent back to the agent for repair).
    """
    code = extract_block(text, ("python", "py"))
    if code is None:
        raise ValueError("no ```python block holding the family file")
    spec = parse_family_source(code, "family file", min_validators=1)
    _compiles(code, "the family file")
    if spec.id in set(taken):
        raise ValueError(f"the id {spec.id!r} is already taken; choose a new id")
    reserved = [n for n in spec.validators if n.startswith(POOL_PREFIX)]
    if reserved:
        raise ValueError(f"the names {reserved} are reserved for the validator pool; rename them")
    return Draft(text, code, spec, _lessons(text))


def _compiles(code: str, what: str) -> None:
    try:
        compile(code, f"<{what}>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise ValueError(f"{what} does not compile (line {exc.lineno}): {exc.msg}") from None


def parse_validator(text: str, k: int = 1) -> str:
    """Parse a validator builder's reply and return it wrapped as ``solution_pool_<k>``.

    Raises:
        ValueError: No python block, a syntax error, no ``solution(inputs)``, or a ``global``
            statement.
    """
    code = extract_block(text, ("python", "py"))
    if code is None:
        raise ValueError("no ```python block holding def solution(inputs)")
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise ValueError(f"syntax error at line {exc.lineno}: {exc.msg}") from None
    _compiles(code, "the validator")
    solution = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "solution"]
    if not solution or len(solution[0].args.args) + len(solution[0].args.posonlyargs) != 1:
        raise ValueError("define exactly one top-level function `def solution(inputs):`")
    if any(isinstance(n, ast.Global | ast.Nonlocal) for n in ast.walk(tree)):
        raise ValueError("do not use global or nonlocal statements")
    wrapped = pool_function(tree, k)
    _compiles(wrapped, "the validator")
    return wrapped


def pool_function(tree: ast.Module, k: int) -> str:
    """A validator module as one function ``solution_pool_<k>(inputs)``: its statements become
    the function body (so its helpers cannot clash with the file's), then ``solution`` is
    called."""
    func = ast.parse(f"def {POOL_PREFIX}{k}({_POOL_ARG}):\n    pass").body[0]
    assert isinstance(func, ast.FunctionDef)
    doc = ast.Expr(ast.Constant(f"Independent validator {k}, written without seeing the others."))
    body = [
        node
        for node in tree.body
        if not (isinstance(node, ast.ImportFrom) and node.module == "__future__")
    ]
    call = ast.Call(ast.Name("solution", ast.Load()), [ast.Name(_POOL_ARG, ast.Load())], [])
    func.body = [doc, *body, ast.Return(call)]
    return ast.unparse(ast.fix_missing_locations(func)) + "\n"


def strip_validators(source: str) -> str:
    """The family file without its validator functions (what the validator builder sees)."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    drop: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and is_validator_name(node.name):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            drop.update(range(first - 1, (node.end_lineno or node.lineno)))
    kept = "".join(line for i, line in enumerate(lines) if i not in drop)
    return re.sub(r"\n{4,}", "\n\n\n", kept).strip() + "\n"


def assemble_family(primary: str, pool: Sequence[str]) -> str:
    """The agent's file followed by the pool validators."""
    parts = [primary.rstrip() + "\n"]
    if pool:
        parts.append("# Independent validators, each written without seeing the others.\n")
        parts.extend(pool)
    return "\n\n".join(parts)


# --- the loop -------------------------------------------------------------------------------


@dataclass
class RoundRecord:
    """What happened in one round."""

    round: int
    stage: Literal["propose", "refine"]
    outcome: Literal["accepted", "rejected", "error"]
    family: str | None = None
    problems: list[str] = field(default_factory=list)
    gates: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "round": self.round,
            "stage": self.stage,
            "outcome": self.outcome,
            "family": self.family,
            "problems": self.problems,
            "gates": self.gates,
        }


@dataclass
class EvolutionResult:
    """The outcome of evolving one seed family."""

    seed_family: str
    accepted: bool = False
    family: str | None = None
    path: str | None = None
    gates_path: str | None = None
    rounds: list[RoundRecord] = field(default_factory=list)
    costs: dict[str, Any] = field(default_factory=dict)
    playbook: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "seed_family": self.seed_family,
            "accepted": self.accepted,
            "family": self.family,
            "path": self.path,
            "gates_path": self.gates_path,
            "rounds": [r.to_json() for r in self.rounds],
            "costs": self.costs,
            "playbook": self.playbook,
        }


@dataclass(frozen=True)
class GateSettings:
    """The gate settings an evolution run uses (see :func:`run_gates_async`)."""

    n: int = 5
    tau: int = 3
    difficulties: tuple[int, ...] = DEFAULT_PROBES
    attempts: int = 3
    per_level: int = 100
    consensus_per_level: int = 20
    review_difficulties: tuple[int, ...] = (1, 5, 10)


@dataclass
class _Run:
    """The state of one evolution run."""

    seed: Family
    provider: ModelProvider
    out_dir: Path
    playbook: Playbook
    playbook_path: Path | None
    taken: set[str]
    ledger: CostLedger
    gates: GateSettings
    seed_value: int
    extra_validators: int
    config: GenerateConfig | None
    conversation: list[dict[str, Any]] = field(default_factory=list)


class _RoundFailed(Exception):
    """A round ended before the gates (the agent or the validator builder failed)."""

    def __init__(self, family: str | None, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.family = family
        self.problems = problems


async def evolve_async(
    seed_family: str | Family,
    provider: ModelProvider,
    *,
    out_dir: str | Path,
    t_max: int = 3,
    playbook_path: str | Path | None = None,
    playbook_limit: int = 20,
    seed: int = 0,
    extra_validators: int = 2,
    gates: GateSettings | None = None,
    families_dirs: Sequence[DirLike] = (),
    ledger: CostLedger | None = None,
    config: GenerateConfig | None = None,
) -> EvolutionResult:
    """Evolve ``seed_family`` into a new family (see the module docstring).

    Args:
        seed_family: A family or its id (built-in, or a file family in ``families_dirs``).
        provider: The model that writes, reviews and solves.
        out_dir: Where an accepted family is written (also searched for taken ids).
        t_max: Rounds at most (the first proposes, the others refine).
        playbook_path: Where the playbook is loaded from and saved to (default
            ``<out_dir>/playbook.json``).
        playbook_limit: The playbook's bound.
        seed: Seed of the sample and gate instances.
        extra_validators: Independent validators the builder writes per round.
        gates: Gate settings.
        families_dirs: More family-file directories (seed lookup, taken ids).
        ledger: Charged with every model call, per module.
        config: Sampling settings for model calls.
    """
    out = Path(out_dir)
    dirs = [*families_dirs, out]
    book_path = Path(playbook_path) if playbook_path is not None else out / "playbook.json"
    seed_obj = get_family(seed_family, dirs) if isinstance(seed_family, str) else seed_family
    run = _Run(
        seed=seed_obj,
        provider=provider,
        out_dir=out,
        playbook=Playbook.load(book_path, playbook_limit),
        playbook_path=book_path,
        taken=set(all_families(dirs)),
        ledger=ledger if ledger is not None else CostLedger(),
        gates=gates or GateSettings(),
        seed_value=seed,
        extra_validators=extra_validators,
        config=config,
    )
    run.conversation = [
        {"role": "system", "content": EVOLVE_SYSTEM},
        {"role": "user", "content": _seed_prompt(seed_obj, run.playbook, seed)},
    ]
    result = EvolutionResult(seed_obj.id)
    for round_no in range(1, t_max + 1):
        record = await _round(run, round_no, result)
        result.rounds.append(record)
        _save_playbook(run)
        if record.outcome == "accepted":
            break
    result.costs = run.ledger.to_json()
    result.playbook = {"path": str(book_path), "entries": len(run.playbook.entries)}
    if result.accepted and result.family is not None:
        _write_json(out / f"{result.family}.evolution.json", result.to_json())
    return result


def evolve(
    seed_family: str | Family,
    provider: ModelProvider,
    *,
    out_dir: str | Path,
    t_max: int = 3,
    playbook_path: str | Path | None = None,
    playbook_limit: int = 20,
    seed: int = 0,
    extra_validators: int = 2,
    gates: GateSettings | None = None,
    families_dirs: Sequence[DirLike] = (),
    ledger: CostLedger | None = None,
    config: GenerateConfig | None = None,
) -> EvolutionResult:
    """Synchronous :func:`evolve_async` (not from inside a running event loop)."""
    return asyncio.run(
        evolve_async(
            seed_family,
            provider,
            out_dir=out_dir,
            t_max=t_max,
            playbook_path=playbook_path,
            playbook_limit=playbook_limit,
            seed=seed,
            extra_validators=extra_validators,
            gates=gates,
            families_dirs=families_dirs,
            ledger=ledger,
            config=config,
        )
    )


async def _round(run: _Run, round_no: int, result: EvolutionResult) -> RoundRecord:
    """Propose or refine, build the pool, gate; update the conversation and the playbook."""
    stage: Literal["propose", "refine"] = "propose" if round_no == 1 else "refine"
    try:
        draft = await _ask_draft(run, stage)
        source = await _with_pool(run, draft)
    except _RoundFailed as failed:
        _learn(run, failed.problems)
        run.conversation.append(
            {"role": "user", "content": _refine_prompt(round_no, failed.problems, {})}
        )
        return RoundRecord(round_no, stage, "error", failed.family, failed.problems)
    candidate = family_from_source(source, f"<{draft.spec.id} round {round_no}>")
    try:
        g = run.gates
        record = await run_gates_async(
            candidate,
            run.provider,
            n=g.n,
            tau=g.tau,
            difficulties=g.difficulties,
            attempts=g.attempts,
            per_level=g.per_level,
            consensus_per_level=g.consensus_per_level,
            review_difficulties=g.review_difficulties,
            seed=run.seed_value,
            ledger=run.ledger,
            config=run.config,
        )
    finally:
        candidate.close()
    if record.passed:
        _accept(run, draft, source, record, result)
        return RoundRecord(round_no, stage, "accepted", draft.spec.id, [], record.to_json())
    _learn(run, record.problems)
    prompt = _refine_prompt(round_no, record.problems, gate_feedback(record))
    run.conversation.append({"role": "user", "content": prompt})
    return RoundRecord(
        round_no, stage, "rejected", draft.spec.id, record.problems, record.to_json()
    )


async def _ask_draft(run: _Run, stage: str) -> Draft:
    """The agent's family file for this round (added to the conversation)."""
    taken = run.taken

    def parse(text: str) -> Draft:
        return parse_draft(text, taken)

    try:
        draft = await ask(
            run.provider,
            run.conversation,
            parse,
            module=stage,
            ledger=run.ledger,
            config=run.config,
        )
    except StructuredOutputError as exc:
        run.conversation.append({"role": "assistant", "content": exc.last_text})
        raise _RoundFailed(None, [f"agent: {exc}"]) from None
    run.conversation.append({"role": "assistant", "content": draft.text})
    return draft


async def _with_pool(run: _Run, draft: Draft) -> str:
    """The draft with ``extra_validators`` independent validators appended."""
    samples = _draft_samples(run, draft)
    messages = [
        {"role": "system", "content": VALIDATOR_SYSTEM},
        {"role": "user", "content": _validator_prompt(draft, samples)},
    ]
    pool: list[str] = []
    for k in range(1, run.extra_validators + 1):

        def parse(text: str, k: int = k) -> str:
            return parse_validator(text, k)

        try:
            pool.append(
                await ask(
                    run.provider,
                    messages,
                    parse,
                    module="validators",
                    ledger=run.ledger,
                    config=run.config,
                    sample_index=k - 1,
                )
            )
        except StructuredOutputError as exc:
            raise _RoundFailed(draft.spec.id, [f"validator builder: {exc}"]) from None
    source = assemble_family(draft.source, pool)
    try:
        parse_family_source(source, "assembled family")
    except ValueError as exc:
        raise _RoundFailed(draft.spec.id, [str(exc)]) from None
    return source


def _draft_samples(run: _Run, draft: Draft) -> list[tuple[dict[str, Any], str]]:
    """Sample inputs and questions of the draft (run in the sandbox) for the validator builder."""
    family = family_from_source(draft.source, "<draft>", min_validators=1)
    out: list[tuple[dict[str, Any], str]] = []
    try:
        for i, difficulty in enumerate((1, 4, 8)):
            seed = instance_seed(family.id, family.version, "pool", run.seed_value, i)
            inputs, slots = family.generate(difficulty, random.Random(seed))
            out.append((inputs, family.render(slots)))
    except ValueError as exc:  # FamilyCodeError, slot mismatch
        raise _RoundFailed(draft.spec.id, [f"generate: {exc}"]) from None
    finally:
        family.close()
    return out


def _accept(
    run: _Run, draft: Draft, source: str, record: FamilyGateRecord, result: EvolutionResult
) -> None:
    """Write the accepted family and its record; credit the agent's lessons."""
    run.out_dir.mkdir(parents=True, exist_ok=True)
    path = run.out_dir / f"{draft.spec.id}.py"
    path.write_text(source, encoding="utf-8")
    gates_path = record.write(run.out_dir / f"{draft.spec.id}.gates.json")
    result.accepted, result.family = True, draft.spec.id
    result.path, result.gates_path = str(path), str(gates_path)
    for lesson in draft.lessons:
        run.playbook.add("agent:" + re.sub(r"[^a-z0-9]+", " ", lesson.lower()).strip()[:80], lesson)


def _learn(run: _Run, problems: Sequence[str]) -> None:
    for key, text in failure_lessons(problems):
        run.playbook.add(key, text)


def _save_playbook(run: _Run) -> None:
    if run.playbook_path is not None:
        run.playbook.save(run.playbook_path)


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
