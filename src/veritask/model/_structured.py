"""Structured answers from a model: parse, validate, ask for a repair, or reject with a reason.

Every LLM-driven module (the Architect, the LLM explorer and projector, the logic-family
evolution loop) asks a model for JSON or code and must not trust what comes back. This module is
the one place that:

- pulls the payload out of the text (a fenced block, or the first JSON value in prose);
- validates it with a pydantic model or a plain check function;
- on failure, shows the model its own answer with the precise reason and asks again, a bounded
  number of times; then rejects with every reason collected (:class:`StructuredOutputError`);
- charges every call to a per-module :class:`CostLedger` (calls, tokens, cost, successes), the
  figures LOGIGEN reports per module in its Table 5.

Why not a JSON-repair library: the repairs that matter here are semantic (a missing field, a
rule without an example), and the model that wrote the answer is the one best placed to fix it;
syntactic clean-up beyond fences and surrounding prose would hide real errors.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from veritask._util import loads_untrusted, raw_decode_untrusted
from veritask.model._types import GenerateConfig, ModelProvider
from veritask.model._usage import Usage

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

_SCAN_BUDGET = 1_000_000
"""Characters the decoder may read, over all its starts, looking for JSON in prose (at least;
four times the text's length when that is more)."""
_FAILED_START = 100
"""The least a failed start is charged (raising the error costs about that much)."""
_FAILED_DEEP = 1_000
"""What a start that failed on nesting or digits is charged (about what the decoder read)."""

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.DOTALL)


class StructuredOutputError(ValueError):
    """A model's answer could not be used, even after the allowed repair rounds.

    Attributes:
        reasons: Why each attempt was rejected, in order.
        last_text: The last answer received.
    """

    def __init__(self, what: str, reasons: list[str], last_text: str) -> None:
        super().__init__(f"{what}: rejected after {len(reasons)} attempt(s): {reasons[-1]}")
        self.reasons = reasons
        self.last_text = last_text


@dataclass
class ModuleCost:
    """What one pipeline module spent: model calls (turns), tokens, cost, outcomes."""

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    attempts: int = 0
    successes: int = 0

    @property
    def success_rate(self) -> float | None:
        """Successes over attempts (None before any attempt)."""
        return self.successes / self.attempts if self.attempts else None

    def add_usage(self, usage: Usage) -> None:
        """Charge one call's usage."""
        self.calls += usage.calls
        self.cached_calls += usage.cached_calls
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.cost += usage.cost

    def merge(self, other: ModuleCost) -> None:
        """Add another record into this one."""
        for name in (
            "calls",
            "cached_calls",
            "prompt_tokens",
            "completion_tokens",
            "attempts",
            "successes",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.cost += other.cost

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (``turns`` is the number of model calls)."""
        return {
            "turns": self.calls,
            "cached_turns": self.cached_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": round(self.cost, 8),
            "attempts": self.attempts,
            "successes": self.successes,
            "success_rate": None if self.success_rate is None else round(self.success_rate, 4),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ModuleCost:
        """Read back :meth:`to_json`."""
        return cls(
            calls=int(data.get("turns", 0)),
            cached_calls=int(data.get("cached_turns", 0)),
            prompt_tokens=int(data.get("prompt_tokens", 0)),
            completion_tokens=int(data.get("completion_tokens", 0)),
            cost=float(data.get("cost", 0.0)),
            attempts=int(data.get("attempts", 0)),
            successes=int(data.get("successes", 0)),
        )


@dataclass
class CostLedger:
    """Per-module spending of an LLM pipeline (LOGIGEN Table 5)."""

    modules: dict[str, ModuleCost] = field(default_factory=dict)

    def module(self, name: str) -> ModuleCost:
        """The record of one module, created on first use."""
        return self.modules.setdefault(name, ModuleCost())

    def charge(self, name: str, usage: Usage) -> None:
        """Charge one model call to a module."""
        self.module(name).add_usage(usage)

    def outcome(self, name: str, success: bool) -> None:
        """Count one attempt of a module and whether it succeeded."""
        record = self.module(name)
        record.attempts += 1
        record.successes += int(success)

    def merge(self, other: CostLedger) -> None:
        """Add another ledger into this one."""
        for name, record in other.modules.items():
            self.module(name).merge(record)

    def total(self) -> ModuleCost:
        """All modules together."""
        out = ModuleCost()
        for record in self.modules.values():
            out.merge(record)
        return out

    def to_json(self) -> dict[str, Any]:
        """``{module: {...}}`` in name order, plus ``total``."""
        data = {name: self.modules[name].to_json() for name in sorted(self.modules)}
        data["total"] = self.total().to_json()
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CostLedger:
        """Read back :meth:`to_json` (the ``total`` entry is recomputed, not read)."""
        return cls({name: ModuleCost.from_json(v) for name, v in data.items() if name != "total"})


class ModelRole:
    """What every model-driven component holds: the model, the ledger its calls are charged
    to (a fresh one when none is given), how many rounds an unusable answer is sent back, and
    the sampling settings."""

    def __init__(
        self,
        provider: ModelProvider,
        ledger: CostLedger | None = None,
        max_repairs: int = 2,
        config: GenerateConfig | None = None,
    ) -> None:
        self.provider = provider
        self.ledger = ledger if ledger is not None else CostLedger()
        self.max_repairs = max_repairs
        self.config = config


def extract_block(text: str, languages: tuple[str, ...] = ()) -> str | None:
    """The body of the first fenced code block (of one of ``languages`` when given), or None."""
    for match in _FENCE.finditer(text):
        lang = match.group(1).lower()
        if not languages or lang in languages:
            return match.group(2)
    return None


def extract_json(text: str) -> Any:
    """The JSON value in a model's answer: a ```json block, the whole text, or the first JSON
    object or array in surrounding prose.

    Raises:
        ValueError: No JSON value could be decoded; the message says where decoding failed.
    """
    block = extract_block(text, ("json", ""))
    candidate = (block if block is not None else text).strip()
    try:
        return loads_untrusted(candidate)
    except json.JSONDecodeError as exc:
        first = f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    except ValueError as exc:  # nested too deeply, or an integer with too many digits
        first = str(exc)
    spent, budget = 0, max(_SCAN_BUDGET, 4 * len(candidate))
    for match in re.finditer(r"[\[{]", candidate):
        start = match.start()
        try:
            value, _ = raw_decode_untrusted(candidate, start)
        except json.JSONDecodeError as exc:
            spent += max(exc.pos - start + 1, _FAILED_START)
        except ValueError:  # nested too deeply, or an integer with too many digits
            spent += _FAILED_DEEP
        else:
            return value
        if spent > budget:  # each start may read to the end: bound the whole scan
            break
    raise ValueError(f"no JSON value found ({first})")


def parse_model(model: type[M]) -> Callable[[str], M]:
    """A parser that extracts JSON and validates it against a pydantic model."""

    def parse(text: str) -> M:
        data = extract_json(text)
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
                for err in exc.errors()
            )
            raise ValueError(f"does not match {model.__name__}: {problems}") from None

    return parse


def repair_prompt(reason: str) -> str:
    """The message that sends a rejected answer back to the model."""
    return (
        "Your previous answer could not be used.\n"
        f"Reason: {reason}\n"
        "Reply again with the complete corrected answer in the same format, and nothing else."
    )


async def ask(
    provider: ModelProvider,
    messages: list[dict[str, Any]],
    parse: Callable[[str], T],
    *,
    module: str,
    ledger: CostLedger | None = None,
    config: GenerateConfig | None = None,
    max_repairs: int = 2,
    sample_index: int = 0,
) -> T:
    """Ask ``provider`` and return ``parse(answer_text)``, sending parse errors back for repair.

    ``parse`` raises ``ValueError`` with a human-readable reason when the text is unusable. Each
    rejected answer and its reason are appended to the conversation, and the model is asked
    again, at most ``max_repairs`` times. Every call is charged to ``module`` in ``ledger``; the
    outcome (success or rejection) is counted once.

    Raises:
        StructuredOutputError: Still unusable after the repair rounds.
        veritask.model.ProviderError: The provider itself failed.
    """
    conversation = list(messages)
    reasons: list[str] = []
    text = ""
    for _ in range(max_repairs + 1):
        output = await provider.generate(conversation, None, config, sample_index)
        if ledger is not None:
            ledger.charge(module, output.usage)
        text = output.text
        try:
            value = parse(text)
        except ValueError as exc:
            reasons.append(str(exc))
            conversation = [
                *conversation,
                {"role": "assistant", "content": text},
                {"role": "user", "content": repair_prompt(str(exc))},
            ]
            continue
        if ledger is not None:
            ledger.outcome(module, True)
        return value
    if ledger is not None:
        ledger.outcome(module, False)
    raise StructuredOutputError(module, reasons, text)
