"""The Architect's input: a natural-language seed (scenario, context, key business rules).

A seed is what LOGIGEN's Appendix A calls "Seed Domain Data": a few sentences of context and a
list of business rules in prose. It is loaded from YAML with errors that name file, line and
field, like a DomainSpec.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from veritask._util import InputError, parse_yaml, read_text
from veritask.policy import SpecIssue
from veritask.policy._load import SPEC_LIMITS, Loc, _field_name, _index_lines, _line_for, _Loader

Identifier = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$", max_length=63)]
Sentence = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


class SeedError(ValueError):
    """A seed failed to parse or validate; ``issues`` lists every problem found."""

    def __init__(self, issues: list[SpecIssue]) -> None:
        self.issues = issues
        # one line (a command prints the first line of an error): every issue, separated
        super().__init__("invalid seed: " + "; ".join(str(i) for i in issues))


class SeedHints(BaseModel):
    """Optional steering for the Architect.

    Attributes:
        entities: Table names the domain is expected to have (each must be planned).
        actor: The entity whose rows are the users tasks are written for.
        notes: Free-text remarks passed to every stage.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    entities: list[Identifier] = Field(default_factory=list)
    actor: Identifier | None = None
    notes: list[Sentence] = Field(default_factory=list)


class Seed(BaseModel):
    """Seed domain data: a scenario, its context and key business rules, in prose.

    Attributes:
        name: The domain name (an identifier); derived from ``scenario`` when unset.
        scenario: The scenario's title, e.g. "Corporate Business Travel Portal".
        context: What the platform is and who uses it.
        rules: The key business rules, one sentence (or short paragraph) each.
        hints: Optional expected entities, actor and notes.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Identifier | None = None
    scenario: Sentence
    context: Sentence
    rules: list[Sentence] = Field(min_length=1)
    hints: SeedHints = Field(default_factory=SeedHints)

    @property
    def domain_name(self) -> str:
        """``name``, or an identifier made from the scenario title."""
        if self.name:
            return self.name
        slug = re.sub(r"[^a-z0-9]+", "_", self.scenario.lower()).strip("_")[:63].rstrip("_")
        if not slug or not slug[0].isalpha():
            slug = ("domain_" + slug)[:63].rstrip("_")
        return slug

    def rule_numbers(self, index: int) -> list[str]:
        """The numbers written in seed rule ``index`` (1-based), thousands separators removed."""
        return numbers_in(self.rules[index - 1])


def numbers_in(text: str) -> list[str]:
    """Numbers in a text, in order, with ``1,000`` read as ``1000`` (no duplicates)."""
    out: list[str] = []
    for raw in _NUMBER.findall(text):
        value = raw.replace(",", "")
        if value not in out:
            out.append(value)
    return out


def load_seed(path: str | Path) -> Seed:
    """Load and validate a seed file; raise SeedError naming file, line and field."""
    p = Path(path)
    try:
        text = read_text(p, what=str(p))
    except InputError as exc:
        raise SeedError([SpecIssue(exc.what, exc.line, "<file>", exc.reason)]) from None
    return parse_seed(text, source=str(p))


def parse_seed(text: str, source: str = "<seed>") -> Seed:
    """Parse and validate seed YAML text; raise SeedError naming line and field."""
    try:  # bounded: depth, alias bytes and complex keys are refused with their line
        data: Any = parse_yaml(text, what=source, limits=SPEC_LIMITS, loader=_Loader)
        node = yaml.compose(text, Loader=_Loader)
    except InputError as exc:
        raise SeedError([SpecIssue(source, exc.line, "<yaml>", exc.reason)]) from None
    if not isinstance(data, dict):
        raise SeedError([SpecIssue(source, 1, "<root>", "a seed is a YAML mapping")])
    lines: dict[Loc, int] = {}
    if node is not None:
        _index_lines(node, (), lines)
    try:
        return Seed.model_validate(data)
    except ValidationError as exc:
        issues = [
            SpecIssue(
                source, _line_for(lines, tuple(e["loc"])), _field_name(tuple(e["loc"])), e["msg"]
            )
            for e in exc.errors()
        ]
        raise SeedError(issues) from None
