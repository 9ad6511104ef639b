"""TaskPackage: one certified task, LOGIGEN's <P, I, E, s_origin, s_target> plus its witness."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StringConstraints,
    model_serializer,
    model_validator,
)

Difficulty = Literal["L1", "L2", "L3"]
Digest = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
"""A sha256 in hex: it names a file (``states/<digest>.sqlite``), so nothing else may pass."""
TAGS = (
    "linear",
    "conditional",
    "multi-step",
    "waterfall",
    "adversarial",
    "state-based",
    "hidden-constraint",
    "refusal",
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WitnessCall(_Model):
    """One tool call of the witness episode, with what the environment answered."""

    tool: str
    args: dict[str, Any]
    ok: bool
    result: Any = None
    error: dict[str, Any] | None = None


class UserProfile(_Model):
    """The simulated user: who they are, in the user's own terms."""

    user_id: str
    name: str
    archetype: Archetype
    attributes: dict[str, Any] = Field(default_factory=dict)
    known_ids: list[str] = Field(default_factory=list)
    """Internal ids the user knows (their own id, public codes); the spoiler check allows them."""


Archetype = Literal["mismatch", "entangled", "rookie", "edge"]
ARCHETYPES: tuple[Archetype, ...] = ("mismatch", "entangled", "rookie", "edge")


class BuiltRow(_Model):
    """A record of the origin state a user's archetype is built on, and the value it holds."""

    table: str
    key: Any
    column: str | None = None
    value: Any = None
    """What ``column`` holds in the origin (None when no column is named)."""


class Construction(_Model):
    """How the Set Designer built the user's archetype, so it can be checked on the origin.

    * ``mismatch``: ``rows[0]`` is the record whose ``column`` the user believes to be
      ``belief`` (a value it does not hold); the description states the belief.
    * ``entangled``: ``rows[0]`` is a parent record, ``rows[1]`` another record of the user's
      that points at it, ``rows[2]`` (when it already exists) the record the request writes
      or points at the parent through.
    * ``rookie``: the request leaves out ``omitted``, which witness call ``call`` sets: the
      agent must ask for it or look it up.
    * ``edge``: witness call ``call`` sits one change from rule ``rule`` (a boundary of kind
      ``boundary``, the change in ``detail``); ``rows`` are records placed at a quota's N-1.
    """

    archetype: Archetype
    what: str
    rows: list[BuiltRow] = Field(default_factory=list)
    rule: str | None = None
    boundary: str | None = None
    belief: Any = None
    omitted: list[str] = Field(default_factory=list)
    call: int | None = None
    detail: str = ""


class Preference(_Model):
    """A preference over one attribute: the record with the least (``min``) or the greatest
    (``max``) value of ``column`` among those the ref's match picks out."""

    column: str
    order: Literal["min", "max"]


class RowRef(_Model):
    """A record as the user names it: the table and the values (a label, a public code, an
    amount) that pick out exactly one row. A foreign-key column may be matched by the parent
    record as the user names it (``{"book_id": {"table": "books", "match": {"title": "Emma"}}}``).
    With ``prefer`` the match is a filter and the record is the unique best one under the
    preference among the rows it picks out ("the cheapest hotel in Paris"); the match may then
    be empty."""

    table: str
    match: dict[str, RowRef | str | int | float | bool | None]
    prefer: Preference | None = None

    @model_validator(mode="after")
    def _named_somehow(self) -> RowRef:
        if not self.match and self.prefer is None:
            raise ValueError("a record is named by a match or a preference")
        return self

    @model_serializer(mode="wrap")
    def _omit_prefer(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Leave ``prefer`` out when unset: refs made before it existed hash as before."""
        data: dict[str, Any] = handler(self)
        if self.prefer is None:
            data.pop("prefer", None)
        return data


class Ask(_Model):
    """The structured form of one request, in the user's own terms.

    The request text is rendered from it, so acting on the ask is acting on the text: which
    procedure, which of the user's records it changes (``target``, for updates), the values the
    user states, and the records the user names for foreign keys. Whatever the ask leaves out is
    the agent's to work out from the policy and from what tools return.
    """

    transaction: str
    """Id of the procedure (``transactions[].id`` of the spec, or a derived one)."""
    tool: str
    """The write tool the procedure uses."""
    target: RowRef | None = None
    """The record an update changes."""
    values: dict[str, Any] = Field(default_factory=dict)
    """Column -> the value the user states."""
    refs: dict[str, RowRef] = Field(default_factory=dict)
    """Foreign-key column -> the record the user names."""


class Fallback(_Model):
    """What the user accepts when the policy refuses a request (a reactive trigger)."""

    rule: str
    """The rule whose refusal, once the agent explains it, the user reacts to."""
    then: Ask | None = None
    """The revised request; None when the user gives up this sub-goal."""
    first: list[Ask] = Field(default_factory=list)
    """Requests to do before the revised one (a new parent record, say)."""


class SubGoal(_Model):
    """One ordered step of the user's plan, with reactions to what the agent may say."""

    title: str
    request: str
    reactive_triggers: list[str] = Field(default_factory=list)
    ask: Ask | None = None
    """The request in structured form (None in packages made before asks existed)."""
    fallbacks: list[Fallback] = Field(default_factory=list)
    """The reactive triggers in structured form, in the same order."""

    @model_serializer(mode="wrap")
    def _omit_empty(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Leave out ``ask`` and ``fallbacks`` when unset, so packages without them serialize
        (and hash) exactly as before they existed."""
        data: dict[str, Any] = handler(self)
        if self.ask is None:
            data.pop("ask", None)
        if not self.fallbacks:
            data.pop("fallbacks", None)
        return data


class TaskDescription(_Model):
    """The spoiler-free task text in the structure of LOGIGEN Appendix A."""

    who_you_are: str
    cognitive_gaps: list[str] = Field(default_factory=list)
    false_beliefs: list[str] = Field(default_factory=list)
    total_goal: str
    sub_goals: list[SubGoal] = Field(min_length=1)

    def render(self) -> str:
        """The description as the text a user simulator reads."""
        lines = ["WHO YOU ARE:", self.who_you_are, "", "COGNITIVE_GAPS & FALSE BELIEFS (CRITICAL):"]
        lines += [f"- {gap}" for gap in self.cognitive_gaps]
        lines += [f"- FALSE BELIEF: {b}" for b in self.false_beliefs] or ["- (No false beliefs.)"]
        lines += [
            "",
            "YOUR_TOTAL_GOAL:",
            self.total_goal,
            "",
            "SUB_GOALS (Must be completed in order):",
        ]
        for i, sub in enumerate(self.sub_goals, 1):
            lines.append(f"{i}. [{sub.title}]")
            lines.append(f"   - {sub.request}")
            for trigger in sub.reactive_triggers:
                lines.append(f"   - REACTIVE_TRIGGER: {trigger}")
        return "\n".join(lines)


class TaskPackage(_Model):
    """A certified task. States and the policy are stored once each, content-addressed, in the
    dataset directory; the package refers to them by sha256."""

    id: str
    domain: str
    spec_hash: str
    policy: Digest
    """sha256 of the wiki policy text, stored as ``policies/<sha256>.md``."""
    task: TaskDescription
    task_description: str
    user_profile: UserProfile
    origin: Digest
    """sha256 of s_origin, stored as ``states/<sha256>.sqlite``."""
    target: Digest
    """sha256 of s_target (equal to ``origin`` for refusal tasks)."""
    witness: list[WitnessCall]
    reward_basis: list[str] = Field(default_factory=lambda: ["state_exact"])
    difficulty: Difficulty
    tags: list[str]
    rules_exercised: list[str]
    boundary_hits: int
    refusal: bool = False
    seed: int
    generator: str
    construction: Construction | None = None
    """How the user's archetype was built (None in packages made before constructions)."""

    @model_serializer(mode="wrap")
    def _omit_unbuilt(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Leave out ``construction`` when unset, so older packages keep their bytes."""
        data: dict[str, Any] = handler(self)
        if self.construction is None:
            data.pop("construction", None)
        return data

    def write_tools(self) -> list[str]:
        """Write tools the witness called successfully."""
        return sorted({c.tool for c in self.witness if c.ok and not c.tool.startswith("query_")})
