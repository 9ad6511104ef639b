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

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from veritask._util import atomic_write_text
from veritask.model import (
    CostLedger,
    GenerateConfig,
    ModelProvider,
    ModelRole,
    ProviderError,
    StructuredOutputError,
    ask,
    extract_block,
    parse_model,
)
from veritask.policy import DomainSpec, dump_spec, spec_from_data
from veritask.policy._load import _Loader
from veritask.synth._architect_artifacts import (
    STAGES,
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
    full_spec_data,
    provisional_spec_data,
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
from veritask.synth._architect_seed import Seed

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
        atomic_write_text(out, self.spec_yaml)
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


class _FastLoader(yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader):  # type: ignore[misc]
    """The spec loader's YAML 1.2 booleans on libyaml's parser (when PyYAML has it)."""

    yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers


def _loads_back(text: str, spec: DomainSpec) -> bool:
    """True when the YAML text reads back (as ``load_spec`` reads it) to ``spec``."""
    data = yaml.load(text, Loader=_FastLoader)
    return isinstance(data, dict) and spec_from_data(data, source="<architect>") == spec


def spec_to_yaml(spec: DomainSpec, comment: str = "") -> str:
    """The spec as YAML that ``load_spec`` reads back to an equal spec (defaults omitted);
    ``comment`` (possibly several lines) becomes a ``#`` header. Kept as the Architect's name
    for :func:`veritask.policy.dump_spec`."""
    return dump_spec(spec, comment)


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


class Architect(ModelRole):
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
        super().__init__(provider, ledger, max_repairs, config)
        self.rounds = rounds
        self.limits = limits or PlanLimits()

    async def design(self, seed: Seed, *, play: StagePlay | None = None) -> ArchitectResult:
        """Run the four stages on ``seed``.

        Args:
            seed: The seed domain data.
            play: How the stages are played: in memory by default; ``play_in(run_dir, model)``
                persists each accepted stage and resumes after the last one written.

        Raises:
            ArchitectError: A stage was not accepted within ``rounds`` rounds, or a model call
                failed; its ``report`` holds every round's errors.
        """
        report = ArchitectReport(domain=seed.domain_name, scenario=seed.scenario, cost=self.ledger)
        try:
            accepted = await (play or play_in_memory)(self, seed, report)
            result = self.assemble(seed, accepted, report)
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

    def assemble(self, seed: Seed, accepted: Accepted, report: ArchitectReport) -> ArchitectResult:
        """The result of four accepted stages: the spec and its YAML text."""
        spec = accepted["rules"].product
        assert spec is not None
        text = spec_to_yaml(spec, f"{seed.scenario}\n{_HEADER}")
        if not _loads_back(text, spec):
            raise ArchitectError("internal error: the spec YAML does not load back equal", report)
        parts = [accepted[stage].artifact for stage in STAGES]
        return ArchitectResult(spec, text, report, *parts)

    async def run_stage(
        self, stage: str, seed: Seed, before: Accepted, report: ArchitectReport
    ) -> AcceptedStage:
        """Play one stage's Check-Fix-Verify rounds on the stages accepted before it.

        The stage's report joins ``report`` when it starts, and what it spends joins this
        Architect's ledger, also when it fails.

        Raises:
            ArchitectError: Not accepted within ``rounds`` rounds.
            ProviderError: A model call failed.
        """
        messages, parse, verify = self._request(stage, seed, before)
        stage_report = StageReport(stage, self.rounds)
        report.stages.append(stage_report)
        spent = CostLedger()
        try:
            artifact, product = await self._rounds(
                report, stage_report, messages, parse, verify, spent
            )
        finally:
            self.ledger.merge(spent)
        return AcceptedStage(stage, artifact, product, stage_report, spent)

    def _request(self, stage: str, seed: Seed, before: Accepted) -> _Request:
        """The first request of ``stage``, the parser of its answers and its verifier."""
        if stage == "plan":
            return (
                plan_messages(seed, self.limits),
                parse_model(ComplexityPlan),
                lambda p: (verify_plan(p, seed, self.limits), None),
            )
        plan: ComplexityPlan = before["plan"].artifact
        if stage == "wiki":
            return (
                wiki_messages(seed, plan),
                parse_wiki,
                lambda w: (verify_wiki(w, plan, seed), None),
            )
        wiki: str = before["wiki"].artifact
        if stage == "tables":
            return (
                tables_messages(plan, wiki),
                parse_model(TablesArtifact),
                lambda t: verify_tables(t, plan, seed),
            )
        tables: TablesArtifact = before["tables"].artifact
        provisional = before["tables"].product
        assert provisional is not None
        return (
            rules_messages(plan, wiki, tables, provisional),
            parse_model(RulesArtifact),
            lambda r: verify_rules(r, tables, plan, seed),
        )

    async def _answer(
        self,
        stage: str,
        conversation: list[dict[str, Any]],
        parse: Callable[[str], A],
        spent: CostLedger,
    ) -> tuple[str, A | None, list[StageError]]:
        """One round's answer: its text, the parsed artifact (None when unusable), format errors."""
        try:
            text, value = await ask(
                self.provider,
                conversation,
                _keep_text(parse),
                module=MODULE_PREFIX + stage,
                ledger=spent,
                config=self.config,
                max_repairs=self.max_repairs,
            )
        except StructuredOutputError as exc:
            message = f"unusable answer after {len(exc.reasons)} attempt(s): {exc.reasons[-1]}"
            return exc.last_text, None, [StageError(stage, "output_format", message)]
        return text, value, []

    async def _rounds(
        self,
        report: ArchitectReport,
        stage_report: StageReport,
        messages: list[dict[str, Any]],
        parse: Callable[[str], A],
        verify: Callable[[A], tuple[list[StageError], R]],
        spent: CostLedger,
    ) -> tuple[A, R]:
        """Check-Fix-Verify: ask, verify, send the errors back; at most ``rounds`` rounds."""
        stage = stage_report.stage
        conversation = messages
        for round_ in range(1, self.rounds + 1):
            before = _calls(spent, stage)
            text, value, errors = await self._answer(stage, conversation, parse, spent)
            if value is not None:
                errors, product = verify(value)
                if not errors:
                    stage_report.rounds.append(RoundRecord(round_, _calls(spent, stage) - before))
                    stage_report.passed = True
                    return value, product
            stage_report.rounds.append(RoundRecord(round_, _calls(spent, stage) - before, errors))
            conversation = [
                *messages,
                {"role": "assistant", "content": text},
                {"role": "user", "content": fix_message(stage, errors, round_, self.rounds)},
            ]
        raise ArchitectError(_failure_text(stage, self.rounds, errors), report)


def _calls(ledger: CostLedger, stage: str) -> int:
    record = ledger.module(MODULE_PREFIX + stage)
    return record.calls + record.cached_calls


@dataclass(frozen=True)
class AcceptedStage:
    """An accepted stage: its artifact, what its verifier built, its rounds and its cost.

    Attributes:
        stage: ``plan``, ``wiki``, ``tables`` or ``rules``.
        artifact: The ``ComplexityPlan``, the wiki markdown, the ``TablesArtifact`` or the
            ``RulesArtifact``.
        product: What the verifier built from it: the provisional spec (tables), the spec
            (rules), else None.
        report: The stage's Check-Fix-Verify rounds.
        ledger: What the stage spent (module ``architect.<stage>``).
    """

    stage: str
    artifact: Any
    product: DomainSpec | None
    report: StageReport
    ledger: CostLedger


Accepted = dict[str, AcceptedStage]
"""The accepted stages so far, by stage name."""

StagePlay = Callable[[Architect, Seed, ArchitectReport], Awaitable[Accepted]]
"""How the four stages are played: ``(architect, seed, report) -> accepted stages``."""

_Request = tuple[
    list[dict[str, Any]],
    Callable[[str], Any],
    Callable[[Any], tuple[list[StageError], DomainSpec | None]],
]


async def play_in_memory(architect: Architect, seed: Seed, report: ArchitectReport) -> Accepted:
    """Play the four stages in order, keeping every artifact in memory (nothing is written)."""
    accepted: Accepted = {}
    for stage in STAGES:
        accepted[stage] = await architect.run_stage(stage, seed, accepted, report)
    return accepted


def restored_product(stage: str, seed: Seed, artifact: Any, before: Accepted) -> DomainSpec | None:
    """What the verifier built from an accepted artifact, rebuilt without running the checks
    again (the artifact passed them): the provisional spec of ``tables``, the spec of ``rules``."""
    if stage == "tables":
        return spec_from_data(provisional_spec_data(seed, artifact), source="tables")
    if stage == "rules":
        tables: TablesArtifact = before["tables"].artifact
        return spec_from_data(full_spec_data(seed, tables, artifact), source="rules")
    return None
