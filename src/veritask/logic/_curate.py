"""Experience curation after each evolution round (SSLogic's Experience Manager).

Two curators update the playbook once per round, and each update is one numbered version of
the playbook naming its curator (:meth:`~veritask.logic.Playbook.record`):

- ``rules`` (the default, and the only one without a model): the fixed lessons the round's
  problem lines point to (:func:`~veritask.logic._playbook.lesson_evidence`) on a failed
  round, the agent's own lessons on an accepted one, each added with :meth:`Playbook.add`.
- ``model``: the model sees the round's outcome as numbered evidence lines (``E1``...: gates
  passed or failed with their reasons, the reviewer's verdicts, solvability per difficulty
  from the blind review, the candidate lessons) and the current playbook, and answers with
  operations (add, merge, rewrite, drop), each citing the evidence it came from. An answer
  that is not JSON, names an unknown lesson or evidence line, touches one lesson twice, or
  would leave the playbook over its bound goes back to the model with the reason
  (:func:`~veritask.model.ask`); still unusable after the repair rounds, the round falls back
  to the rules, and the version says so.

Design note 0063 gives the reasons.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from veritask.logic._playbook import TEXT_LIMIT, Playbook, lesson_evidence
from veritask.logic._prompts import CURATE_SYSTEM, curate_prompt
from veritask.logic._records import RoundRecord, round_id
from veritask.logic._reports import FamilyGateRecord
from veritask.model import (
    CostLedger,
    GenerateConfig,
    ModelProvider,
    StructuredOutputError,
    ask,
    parse_model,
)

Curator = Literal["rules", "model"]
CURATORS: tuple[Curator, ...] = ("rules", "model")

_KEY = re.compile(r"^[a-z0-9][a-z0-9_.:-]{0,59}$")
_PROBLEMS_SHOWN = 12


class LessonOp(BaseModel):
    """One curation operation as the model writes it."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["add", "merge", "rewrite", "drop"]
    keys: list[str] = Field(default_factory=list)
    key: str = ""
    text: str = ""
    evidence: list[str] = Field(min_length=1)


class Curation(BaseModel):
    """The model curator's answer: the operations, in order (none keeps the playbook)."""

    model_config = ConfigDict(extra="forbid")

    operations: list[LessonOp] = Field(default_factory=list, max_length=40)


def round_evidence(
    record: RoundRecord,
    gates: FamilyGateRecord | None,
    candidates: list[tuple[str, str]],
) -> dict[str, str]:
    """The round's outcome as numbered evidence lines ``E1``, ``E2``... (see the module
    docstring); ``candidates`` are (key, text) lessons proposed for the playbook."""
    lines = [
        f"round {record.round} ({record.stage}): {record.outcome}"
        + (f", family {record.family}" if record.family else "")
    ]
    if gates is not None:
        lines += _gate_lines(gates)
    lines += [f"problem: {p}" for p in record.problems[:_PROBLEMS_SHOWN]]
    lines += [f"candidate lesson [{key}]: {text}" for key, text in candidates]
    return {f"E{i}": " ".join(line.split())[:400] for i, line in enumerate(lines, start=1)}


def _gate_lines(gates: FamilyGateRecord) -> list[str]:
    """Each gate's status, the reviewer's verdicts and solvability per difficulty."""
    data = gates.to_json()["gates"]
    out = []
    for name, gate in data.items():
        if gate is None:
            out.append(f"gate {name}: skipped ({gates.skipped.get(name, 'not run')})")
        else:
            out.append(f"gate {name}: {'passed' if gate['passed'] else 'failed'}")
    if gates.review is not None:
        for criterion, verdict in gates.review.criteria.items():
            state = "passed" if verdict.get("passed") else "failed"
            out.append(f"reviewer {criterion}: {state}: {verdict.get('reason', '')}")
    if gates.blind is not None:
        for difficulty, row in gates.blind.by_difficulty.items():
            out.append(
                f"solvability d={difficulty}: {row['confirmed']}/{row['probes']} probes "
                f"confirmed, {row['correct']}/{row['asked']} blind answers right"
            )
    return out


def check_curation(curation: Curation, book: Playbook, evidence: dict[str, str]) -> None:
    """Raise ValueError (the reason the model reads) when ``curation`` cannot be applied."""
    known, touched, new = {e.key for e in book.entries}, set[str](), set[str]()
    size = len(book.entries)
    for i, op in enumerate(curation.operations, start=1):
        where = f"operation {i} ({op.action})"
        _check_op(op, where, known, evidence)
        for key in op.keys:
            if key in touched:
                raise ValueError(f"{where}: lesson {key!r} is used by two operations")
            touched.add(key)
        if op.action in ("add", "merge"):
            key = op.key or _derived_key(op.text)
            if key in new or (key in known and key not in op.keys):
                raise ValueError(f"{where}: key {key!r} is taken; choose another key")
            new.add(key)
        size += {"add": 1, "drop": -1, "merge": 1 - len(op.keys)}.get(op.action, 0)
    if size > book.limit:
        raise ValueError(
            f"the curated playbook would hold {size} lessons, over its limit of {book.limit}: "
            "merge or drop lessons"
        )


def _check_op(op: LessonOp, where: str, known: set[str], evidence: dict[str, str]) -> None:
    """One operation's own shape: its keys, text and evidence."""
    wanted = {"add": (0, 0), "rewrite": (1, 1), "drop": (1, 1), "merge": (2, 40)}[op.action]
    if not wanted[0] <= len(op.keys) <= wanted[1]:
        raise ValueError(f"{where}: needs {wanted[0]}-{wanted[1]} existing keys in 'keys'")
    unknown = [k for k in op.keys if k not in known]
    if unknown:
        raise ValueError(f"{where}: no lesson {unknown[0]!r}; existing keys: {sorted(known)}")
    if op.action != "drop" and not op.text.strip():
        raise ValueError(f"{where}: 'text' must be the lesson, one concise sentence")
    if len(op.text) > TEXT_LIMIT:
        raise ValueError(f"{where}: 'text' is over {TEXT_LIMIT} characters")
    if op.key and not _KEY.match(op.key):
        raise ValueError(f"{where}: key {op.key!r} must match {_KEY.pattern}")
    cited = [e for e in op.evidence if e not in evidence]
    if cited:
        raise ValueError(f"{where}: evidence {cited[0]!r} is not one of {sorted(evidence)}")


def _derived_key(text: str) -> str:
    """A key for a lesson the model added without one."""
    return "model:" + re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:50]


def apply_curation(
    book: Playbook, curation: Curation, evidence: dict[str, str], curator: str, where: str
) -> list[dict[str, Any]]:
    """Apply a checked curation; returns the operations as the history records them."""
    done = []
    for op in curation.operations:
        cited = [f"{where}: {evidence[e]}" for e in op.evidence]
        if op.action == "add":
            key = op.key or _derived_key(op.text)
            book.add(key, op.text, cited, curator)
        elif op.action == "rewrite":
            key = op.keys[0]
            book.rewrite(key, op.text, cited, curator)
        elif op.action == "drop":
            key = op.keys[0]
            book.drop(key)
        else:
            key = op.key or _derived_key(op.text)
            book.merge(op.keys, key, op.text, cited, curator)
        done.append({"action": op.action, "keys": op.keys, "key": key, "evidence": op.evidence})
    return done


def curate_with_rules(
    book: Playbook,
    where: str,
    problems: list[str],
    credited: tuple[str, ...] = (),
    note: str | None = None,
) -> None:
    """The rule-based curator: fixed lessons for a failed round's problems, or the accepted
    agent's own lessons (``credited``); one version when anything was added."""
    done = []
    for key, text, line in lesson_evidence(problems):
        book.add(key, text, [f"{where}: {line}"])
        done.append({"action": "add", "keys": [], "key": key, "evidence": [line[:300]]})
    for lesson in credited:
        key = agent_key(lesson)
        book.add(key, lesson, [f"{where}: accepted family's own lesson"])
        done.append({"action": "add", "keys": [], "key": key, "evidence": ["accepted"]})
    if done or note is not None:
        book.record("rules", where, done, note)


def agent_key(lesson: str) -> str:
    """The key of a lesson the agent wrote itself."""
    return "agent:" + re.sub(r"[^a-z0-9]+", " ", lesson.lower()).strip()[:80]


async def curate_with_model(
    book: Playbook,
    provider: ModelProvider,
    evidence: dict[str, str],
    where: str,
    *,
    ledger: CostLedger | None = None,
    config: GenerateConfig | None = None,
) -> str | None:
    """The model curator (see the module docstring). Returns None when the playbook was
    curated, or the reason the model's answer was rejected (nothing applied)."""

    def parse(text: str) -> Curation:
        curation = parse_model(Curation)(text)
        check_curation(curation, book, evidence)
        return curation

    messages = [
        {"role": "system", "content": CURATE_SYSTEM},
        {"role": "user", "content": curate_prompt(evidence, book)},
    ]
    try:
        curation = await ask(
            provider, messages, parse, module="curate", ledger=ledger, config=config
        )
    except StructuredOutputError as exc:
        return str(exc)
    name = f"model:{getattr(provider, 'model', None) or provider.name}"
    done = apply_curation(book, curation, evidence, name, where)
    book.record(name, where, done)
    return None


def where_of(seed_family: str, round_no: int) -> str:
    """How a version names the round it followed (the round's stable id)."""
    return round_id(seed_family, round_no)
