"""The LLM Architect: a natural-language seed in, a verified DomainSpec out (LOGIGEN 3.3).

Four stages, each one model call producing a structured artifact, each followed by a verifier:

1. ``plan``: the complexity plan (entities, actors, enumerated rules, target counts);
2. ``wiki``: the wiki policy in markdown;
3. ``tables``: the ``tables`` part of a DomainSpec with seed rows;
4. ``rules``: rules, effects, transactions and wiki front matter, completing the DomainSpec.

Every stage runs a bounded Check-Fix-Verify loop: the verifier's structured errors go back to
the model, which answers with a corrected artifact, for at most ``rounds`` rounds. Malformed
answers (no JSON, a missing field) are repaired inside a round by :func:`veritask.model.ask`.
The spec is accepted only when it compiles in SQLite and every rule's examples behave as
declared on a fresh environment (see ``_architect_physical``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from veritask.model import (
    CostLedger,
    GenerateConfig,
    ModelProvider,
    ProviderError,
    StructuredOutputError,
    ask,
    extract_block,
    parse_model,
)
from veritask.policy import DomainSpec, spec_from_data
from veritask.policy._load import _Loader
from veritask.synth._architect_artifacts import (
    ArchitectReport,
    ComplexityPlan,
    RoundRecord,
    RulesArtifact,
    StageError,
    StageReport,
    TablesArtifact,
)
from veritask.synth._architect_checks import (
    PlanLimits,
    verify_plan,
    verify_rules,
    verify_tables,
    verify_wiki,
)
from veritask.synth._architect_prompts import (
    fix_message,
    plan_messages,
    rules_messages,
    tables_messages,
    to_json,
    wiki_messages,
)
from veritask.synth._architect_seed import Seed, load_seed

_HEADER = "Domain spec written by the veritask Architect; every rule example was executed."
A = TypeVar("A")
R = TypeVar("R")
MODULE_PREFIX = "architect."
"""Cost-ledger modules are ``architect.plan``, ``architect.wiki``, ``architect.tables``, ``architect.rules``."""


class ArchitectError(RuntimeError):
    """The Architect could not produce a verified spec; ``report`` says what each round found."""

    def __init__(self, message: str, report: ArchitectReport) -> None:
        super().__init__(message)
        self.report = report


@dataclass(frozen=True)
class ArchitectResult:
    """A verified spec, its YAML text, the run report and the stage artifacts."""

    spec: DomainSpec
    spec_yaml: str
    report: ArchitectReport
    plan: ComplexityPlan
    wiki: str
    tables: TablesArtifact
    rules: RulesArtifact

    @property
    def ledger(self) -> CostLedger:
        """What the run spent, per stage module."""
        return self.report.cost

    def write(self, path: str | Path) -> Path:
        """Write the spec YAML to ``path``; return the path."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(self.spec_yaml, encoding="utf-8")
        return out

    def artifacts(self) -> dict[str, str]:
        """The accepted stage artifacts as file name -> text."""
        return {
            "plan.json": to_json(self.plan.model_dump(mode="json", exclude_defaults=True)) + "\n",
            "wiki.md": self.wiki,
            "tables.json": to_json(self.tables.model_dump(mode="json", exclude_defaults=True))
            + "\n",
            "rules.json": to_json(self.rules.model_dump(mode="json", exclude_defaults=True)) + "\n",
        }


class _SpecDumper(yaml.SafeDumper):
    """SafeDumper writing multi-line strings (SQL) as literal blocks."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value.strip() else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_SpecDumper.add_representer(str, _represent_str)


class _FastLoader(yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader):  # type: ignore[misc]
    """The spec loader's YAML 1.2 booleans on libyaml's parser (when PyYAML has it)."""

    yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers


def _loads_back(text: str, spec: DomainSpec) -> bool:
    """True when the YAML text reads back (as ``load_spec`` reads it) to ``spec``."""
    data = yaml.load(text, Loader=_FastLoader)
    return isinstance(data, dict) and spec_from_data(data, source="<architect>") == spec


def spec_to_yaml(spec: DomainSpec, comment: str = "") -> str:
    """The spec as YAML that ``load_spec`` reads back to an equal spec (defaults omitted).

    ``comment`` (possibly several lines) becomes a ``#`` header.
    """
    header = "".join(f"# {line}".rstrip() + "\n" for line in comment.splitlines())
    body = yaml.dump(
        spec.model_dump(mode="json", exclude_defaults=True),
        Dumper=_SpecDumper,
        default_flow_style=None,
        sort_keys=False,
        allow_unicode=True,
        width=100,
    )
    return header + body


def parse_wiki(text: str) -> str:
    """The markdown policy in an answer (a fenced answer is unwrapped)."""
    body = text.strip()
    if body.startswith("```"):
        block = extract_block(body)
        body = block.strip() if block is not None else body.strip("`").strip()
    if not body:
        raise ValueError("the answer is empty; reply with the markdown policy document")
    return body + "\n"


def _keep_text(parse: Callable[[str], A]) -> Callable[[str], tuple[str, A]]:
    def parse_with_text(text: str) -> tuple[str, A]:
        return text, parse(text)

    return parse_with_text


def _spec_summary(spec: DomainSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "tables": len(spec.tables),
        "rules": len(spec.rules),
        "effects": len(spec.effects),
        "transactions": len(spec.transactions),
        "spec_hash": spec.spec_hash(),
    }


def _failure_text(stage: str, rounds: int, errors: list[StageError]) -> str:
    shown = "; ".join(str(e) for e in errors[:5])
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return (
        f"the Architect failed at stage {stage!r}: not accepted after {rounds} round(s); "
        f"last round: {len(errors)} error(s): {shown}{more}"
    )


class Architect:
    """Turns a natural-language seed into a verified DomainSpec with an LLM (LOGIGEN's Architect).

    Args:
        provider: The model that writes the artifacts.
        rounds: Check-Fix-Verify rounds per stage (the first answer counts as round 1).
        max_repairs: Format repairs per round (unparseable or schema-invalid answers).
        limits: Bounds the complexity plan must respect.
        config: Sampling settings for every call.
        ledger: Where model calls are charged (a new ledger by default).
    """

    def __init__(
        self,
        provider: ModelProvider,
        *,
        rounds: int = 3,
        max_repairs: int = 2,
        limits: PlanLimits | None = None,
        config: GenerateConfig | None = None,
        ledger: CostLedger | None = None,
    ) -> None:
        if rounds < 1:
            raise ValueError("rounds must be at least 1")
        self.provider = provider
        self.rounds = rounds
        self.max_repairs = max_repairs
        self.limits = limits or PlanLimits()
        self.config = config
        self.ledger = ledger if ledger is not None else CostLedger()

    async def design(self, seed: Seed) -> ArchitectResult:
        """Run the four stages on ``seed``.

        Raises:
            ArchitectError: A stage was not accepted within ``rounds`` rounds, or a model call
                failed; its ``report`` holds every round's errors.
        """
        report = ArchitectReport(domain=seed.domain_name, scenario=seed.scenario, cost=self.ledger)
        try:
            result = await self._design(seed, report)
        except ProviderError as exc:
            stage = report.stages[-1].stage if report.stages else "plan"
            report.failure = f"the model call failed at stage {stage!r}: {exc}"
            raise ArchitectError(report.failure, report) from exc
        except ArchitectError as exc:
            report.failure = str(exc)
            raise
        report.passed = True
        report.spec = _spec_summary(result.spec)
        return result

    async def _design(self, seed: Seed, report: ArchitectReport) -> ArchitectResult:
        plan, _ = await self._stage(
            report,
            "plan",
            plan_messages(seed, self.limits),
            parse_model(ComplexityPlan),
            lambda p: (verify_plan(p, seed, self.limits), None),
        )
        wiki, _ = await self._stage(
            report,
            "wiki",
            wiki_messages(seed, plan),
            parse_wiki,
            lambda w: (verify_wiki(w, plan, seed), None),
        )
        tables, provisional = await self._stage(
            report,
            "tables",
            tables_messages(plan, wiki),
            parse_model(TablesArtifact),
            lambda t: verify_tables(t, plan, seed),
        )
        assert provisional is not None
        rules, spec = await self._stage(
            report,
            "rules",
            rules_messages(plan, wiki, tables, provisional),
            parse_model(RulesArtifact),
            lambda r: verify_rules(r, tables, plan, seed),
        )
        assert spec is not None
        text = spec_to_yaml(spec, f"{seed.scenario}\n{_HEADER}")
        if not _loads_back(text, spec):
            raise ArchitectError("internal error: the spec YAML does not load back equal", report)
        return ArchitectResult(spec, text, report, plan, wiki, tables, rules)

    def _calls(self, stage: str) -> int:
        record = self.ledger.module(MODULE_PREFIX + stage)
        return record.calls + record.cached_calls

    async def _answer(
        self, stage: str, conversation: list[dict[str, Any]], parse: Callable[[str], A]
    ) -> tuple[str, A | None, list[StageError]]:
        """One round's answer: its text, the parsed artifact (None when unusable), format errors."""
        try:
            text, value = await ask(
                self.provider,
                conversation,
                _keep_text(parse),
                module=MODULE_PREFIX + stage,
                ledger=self.ledger,
                config=self.config,
                max_repairs=self.max_repairs,
            )
        except StructuredOutputError as exc:
            message = f"unusable answer after {len(exc.reasons)} attempt(s): {exc.reasons[-1]}"
            return exc.last_text, None, [StageError(stage, "output_format", message)]
        return text, value, []

    async def _stage(
        self,
        report: ArchitectReport,
        stage: str,
        messages: list[dict[str, Any]],
        parse: Callable[[str], A],
        verify: Callable[[A], tuple[list[StageError], R]],
    ) -> tuple[A, R]:
        """Check-Fix-Verify: ask, verify, send the errors back; at most ``rounds`` rounds."""
        stage_report = StageReport(stage, self.rounds)
        report.stages.append(stage_report)
        conversation = messages
        for round_ in range(1, self.rounds + 1):
            before = self._calls(stage)
            text, value, errors = await self._answer(stage, conversation, parse)
            if value is not None:
                errors, product = verify(value)
                if not errors:
                    stage_report.rounds.append(RoundRecord(round_, self._calls(stage) - before))
                    stage_report.passed = True
                    return value, product
            stage_report.rounds.append(RoundRecord(round_, self._calls(stage) - before, errors))
            conversation = [
                *messages,
                {"role": "assistant", "content": text},
                {"role": "user", "content": fix_message(stage, errors, round_, self.rounds)},
            ]
        raise ArchitectError(_failure_text(stage, self.rounds, errors), report)


def run_architect(
    seed: Seed | str | Path,
    provider: ModelProvider,
    *,
    rounds: int = 3,
    max_repairs: int = 2,
    limits: PlanLimits | None = None,
    config: GenerateConfig | None = None,
    ledger: CostLedger | None = None,
) -> ArchitectResult:
    """Run the Architect synchronously on a seed (or a seed file path).

    Raises:
        SeedError: The seed file is invalid.
        ArchitectError: No verified spec within the round bounds; see its ``report``.
    """
    loaded = seed if isinstance(seed, Seed) else load_seed(seed)
    architect = Architect(
        provider,
        rounds=rounds,
        max_repairs=max_repairs,
        limits=limits,
        config=config,
        ledger=ledger,
    )
    return asyncio.run(architect.design(loaded))
