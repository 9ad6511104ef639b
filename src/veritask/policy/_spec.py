"""DomainSpec: one description of a domain from which SQL, policy text and tools are derived."""

from __future__ import annotations

import re
import threading
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from veritask._util import canonical_json, sha256_text

Identifier = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$", max_length=63)]
RuleId = Annotated[str, StringConstraints(pattern=r"^[A-Z][A-Z0-9_]*$", max_length=80)]
ErrorCode = Annotated[str, StringConstraints(pattern=r"^[A-Z][A-Z0-9_]*$", max_length=60)]
Scalar = str | int | float | bool
SqlType = Literal["TEXT", "INTEGER", "REAL"]
Tier = Literal["reference", "entity", "transaction"]
Access = Literal["read-only", "read-write"]
Event = Literal["insert", "update"]
RuleCategory = Literal[
    "prerequisite",
    "quota",
    "authority",
    "irreversibility",
    "calculation",
    "policy",
    "integrity",
    "system_control",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Column(_Model):
    """A column of a table.

    Attributes:
        computed: the system computes the value (trigger or default); no tool may set it.
        insertable: an insert tool may set it (False: the default applies on insert).
        updatable: an update tool may change it.
        technical: excluded from state diffs (autoincrement ids, timestamps).
        values: a pool the synthesizer draws made-up values of this column from.
        faker: a Faker provider (``name``, ``city``, ``company``...) for made-up values.
    """

    name: Identifier
    type: SqlType
    description: str = ""
    primary_key: bool = False
    autoincrement: bool = False
    not_null: bool = False
    unique: bool = False
    enum: list[Scalar] | None = None
    references: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$")
    default: Scalar | None = None
    check: str | None = None
    computed: bool = False
    insertable: bool = True
    updatable: bool = True
    technical: bool = False
    values: list[Scalar] | None = Field(default=None, min_length=1)
    faker: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9_]*$")

    @property
    def writable_on_insert(self) -> bool:
        """True when an insert tool exposes this column as an argument."""
        return self.insertable and not self.computed and not self.autoincrement

    @property
    def writable_on_update(self) -> bool:
        """True when an update tool exposes this column as an argument."""
        return self.updatable and not self.computed and not self.primary_key

    @property
    def required_on_insert(self) -> bool:
        """True when an insert must supply this column."""
        return self.writable_on_insert and self.not_null and self.default is None


class Lifecycle(_Model):
    """How rows of a table are retired without DELETE (a status or active flag)."""

    column: Identifier
    inactive_values: list[Scalar] = Field(min_length=1)
    description: str = ""


class Table(_Model):
    """A table with its tier, access mode, columns and lifecycle."""

    name: Identifier
    tier: Tier
    access: Access
    description: str = ""
    columns: list[Column] = Field(min_length=1)
    unique: list[list[Identifier]] = Field(default_factory=list)
    lifecycle: Lifecycle | None = None
    insert_only: bool = False
    """Rows are written once: an insert tool but no update tool (a ledger, a log, a payment)."""
    intent: list[Identifier] | None = None
    """The attributes that define what a record of this table is for a request (a flight's
    route, a product's family): an alternative record offered after a refusal must agree with
    the one asked for on them, except what the refusing rule tests. Default: every foreign key
    and every enum column that is not a flag or a status."""
    noise: int = Field(default=0, ge=0, le=1000)
    """Near-identical records of one row the Set Designer injects into every origin state
    (high-cardinality noise the agent has to search; a catalogue table only)."""

    @property
    def writable(self) -> bool:
        """True when tools may write this table (insert, and update unless ``insert_only``)."""
        return self.access == "read-write"

    @property
    def updatable(self) -> bool:
        """True when tools may update rows of this table (read-write and not insert-only)."""
        return self.writable and not self.insert_only

    @property
    def primary_key(self) -> list[Column]:
        """The primary-key columns (the implicit rowid when none is declared)."""
        return [c for c in self.columns if c.primary_key]

    def column(self, name: str) -> Column:
        """Return the column called ``name``; KeyError when it does not exist."""
        for col in self.columns:
            if col.name == name:
                return col
        raise KeyError(f"{self.name}.{name}")

    @property
    def column_names(self) -> list[str]:
        """Names of all columns in declaration order."""
        return [c.name for c in self.columns]


class Call(_Model):
    """A tool call inside an example or a script."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    expect: str = "ok"
    """``ok``, or the id of the rule (or the error code) the call must fail with."""


class RowExpectation(_Model):
    """After an example's calls, the row matching ``where`` has ``values``."""

    table: Identifier
    where: dict[str, Scalar]
    values: dict[str, Scalar | None]


class Example(_Model):
    """An executable example: calls from the seed state, each with its expected outcome."""

    name: str = ""
    calls: list[Call] = Field(min_length=1)
    expect_rows: list[RowExpectation] = Field(default_factory=list)


class Threshold(_Model):
    """The number a rule guards, so a seeder can place state at N-1.

    Either ``value`` (a literal N, substituted for ``{threshold}`` in the condition) or
    ``column`` (``table.column`` holding a per-row limit) is set.
    """

    quantity: str
    """What is measured, as ``table.column`` (a counter) or a short phrase."""
    value: int | float | None = None
    column: str | None = None
    comparison: Literal["max", "min"] = "max"
    """``max``: the quantity may not reach/exceed the limit; ``min``: may not fall below it."""


class Repair(_Model):
    """How to compute the value a calculation rule expects, so a synthesizer can correct a call."""

    column: Identifier
    value: str
    """SQL expression over NEW/OLD giving the expected value of ``column``."""


class Rule(_Model):
    """A BEFORE-trigger check: when ``condition`` holds the write is rejected."""

    id: RuleId
    table: Identifier
    on: list[Event] = Field(min_length=1)
    when: str | None = None
    """Optional guard (SQL over NEW/OLD) restricting the rows the rule looks at."""
    condition: str
    """SQL expression over NEW/OLD that is true for a violating write."""
    code: ErrorCode
    category: RuleCategory = "policy"
    message: str
    hint: str
    detail: str | None = None
    """Optional SQL expression (over NEW/OLD) whose value is appended to the message."""
    threshold: Threshold | None = None
    repair: Repair | None = None
    transaction: str | None = None
    examples: list[Example] = Field(default_factory=list)

    def tests_value(self, column: str) -> bool:
        """Whether the guard or condition tests which value ``NEW.column`` has, not only that it
        has one (a rule that just asks for a value leaves the choice to the user)."""
        text = f"{self.when or ''} {self.condition}"
        blank = re.compile(rf"\bNEW\.{re.escape(column)}\s+IS\s+(?:NOT\s+)?NULL\b", re.I)
        return f"NEW.{column}" in blank.sub("", text)


class Effect(_Model):
    """An AFTER-trigger side effect: bookkeeping the system does on its own."""

    id: RuleId
    table: Identifier
    on: Event
    when: str | None = None
    description: str
    sql: str
    transaction: str | None = None
    examples: list[Example] = Field(default_factory=list)


class Transaction(_Model):
    """A standard operating procedure: one business transaction done through one write tool."""

    id: Identifier
    name: str
    goal: str
    tool: str
    parameters: list[Identifier] = Field(default_factory=list)
    agent_decides: list[Identifier] = Field(default_factory=list)
    """Parameters the agent must work out from the policy (the user does not state them)."""
    notes: list[str] = Field(default_factory=list)


ProcType = Literal["string", "integer", "number", "boolean", "array", "object"]


class ProcParam(_Model):
    """An argument of a procedural tool (``items``: the JSON type of an array's elements)."""

    name: Identifier
    type: ProcType
    description: str = ""
    required: bool = True
    enum: list[Scalar] | None = None
    items: ProcType | None = None


class ReadStep(_Model):
    """Read rows of ``table`` whose columns equal the ``where`` expressions into ``into``.

    One row (a dict) unless ``many`` (a list of dicts, in ``order_by`` then rowid order). A
    missing single row fails the call with ``code`` / ``missing`` when ``missing`` is set, and
    leaves ``into`` null otherwise.
    """

    op: Literal["read"]
    table: Identifier
    where: dict[Identifier, str] = Field(default_factory=dict)
    into: Identifier
    many: bool = False
    order_by: list[Identifier] = Field(default_factory=list)
    missing: str | None = None
    code: ErrorCode = "NOT_FOUND"


class RequireStep(_Model):
    """Fail the call with ``code`` and exactly ``message`` unless ``condition`` is true
    (``message_expr``, when set, is an expression giving the text instead)."""

    op: Literal["require"]
    condition: str
    message: str = ""
    message_expr: str | None = None
    code: ErrorCode = "REJECTED"


class ComputeStep(_Model):
    """Bind (or rebind) the variable ``into`` to the value of ``expr``.

    ``decode: true`` reads a JSON text result as the value it encodes (a list or an object).
    """

    op: Literal["compute"]
    into: Identifier
    expr: str
    decode: bool = False


class InsertStep(_Model):
    """Insert one row into ``table`` (triggers, tracking and savepoint as for ``insert_<t>``);
    ``into`` receives the row as stored."""

    op: Literal["insert"]
    table: Identifier
    values: dict[Identifier, str] = Field(min_length=1)
    into: Identifier | None = None


class UpdateStep(_Model):
    """Set ``values`` on the rows of ``table`` whose columns equal the ``where`` expressions."""

    op: Literal["update"]
    table: Identifier
    where: dict[Identifier, str] = Field(min_length=1)
    values: dict[Identifier, str] = Field(min_length=1)


class ForeachStep(_Model):
    """Run ``steps`` once per element of the list variable ``over`` (bound to ``item``, its
    position to ``index`` when set)."""

    op: Literal["foreach"]
    over: Identifier
    item: Identifier
    index: Identifier | None = None
    steps: list[Step] = Field(min_length=1)


class ReturnStep(_Model):
    """End the call with ``value``: a template whose strings are expressions, whose lists and
    mappings keep their order, and where ``{"each": var, "as": x, "value": t}`` maps a list."""

    op: Literal["return"]
    value: Any


Step = Annotated[
    ReadStep | RequireStep | ComputeStep | InsertStep | UpdateStep | ForeachStep | ReturnStep,
    Field(discriminator="op"),
]


class Procedure(_Model):
    """A procedural tool: declarative steps that read and write only through the engine."""

    name: Identifier
    description: str
    access: Literal["read", "write"]
    params: list[ProcParam] = Field(default_factory=list)
    steps: list[Step] = Field(min_length=1)


class Wiki(_Model):
    """Free-text sections of the wiki policy."""

    title: str
    context: str = ""
    persona: str
    mission: str = ""
    conversation_rules: list[str] = Field(default_factory=list)


class Service(_Model):
    """One service of a multi-service spec (``veritask fuse`` writes them): the tables it owns.

    A procedure belongs to the service of the table its tool writes. The actor table is shared
    by every service and listed in none; a table listed in no service is shared as well.
    """

    name: Identifier
    description: str = ""
    tables: list[Identifier] = Field(min_length=1)


class UserTools(_Model):
    """Tools the user holds (dual control): they act on the user's own records, the agent cannot
    call them and asks the user to (docs/design/0060-dual-control-and-escalation.md).

    Each is an ordinary tool of the spec run by the same engine (savepoint, refusals that leave
    the state untouched, change tracking); only who may call it differs.
    """

    tables: list[Identifier] = Field(default_factory=list)
    """User-side tables: every tool of such a table (``query_<t>``, ``insert_<t>``,
    ``update_<t>``) is the user's."""
    tools: list[Identifier] = Field(default_factory=list)
    """Further tools the user holds by name (a procedural tool such as ``restart_device``)."""


class EscalationReason(_Model):
    """One reason the policy gives for handing a user over to a human agent."""

    id: Annotated[str, StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9_]*$", max_length=80)]
    """The value the hand-off records (one of the reason column's ``enum`` values)."""
    when: str
    """When the policy says to hand over for this reason, in the policy's words."""


class Escalation(_Model):
    """The spec's hand-off to a human agent (a ``transfer_to_human_agents``-style tool).

    The tool is one of the spec's write tools; its rows record the hand-off and its reason, and
    the spec's rules refuse a reason whose condition does not hold, so a wrong hand-off leaves
    the state untouched and a task whose correct end is a hand-off is verified by the state.
    """

    tool: Identifier
    """The write tool that records a hand-off."""
    reason: Identifier
    """The column of the tool's table that holds the reason."""
    reasons: list[EscalationReason] = Field(min_length=1)


class DomainSpec(_Model):
    """A whole domain: tables, rules, effects, procedures, wiki text and seed rows."""

    name: Identifier
    version: str = "1"
    description: str = ""
    actor: Identifier | None = None
    """The entity table whose rows are the users tasks are written for (guessed when unset)."""
    services: list[Service] = Field(default_factory=list)
    """The services of a multi-service spec, two or more (empty: one domain)."""
    wiki: Wiki
    tables: list[Table] = Field(min_length=1)
    rules: list[Rule] = Field(default_factory=list)
    effects: list[Effect] = Field(default_factory=list)
    transactions: list[Transaction] = Field(default_factory=list)
    procedures: list[Procedure] = Field(default_factory=list)
    """Procedural tools (docs/design/0043-procedural-tools.md), beside the atomic ones."""
    confirm_writes: list[Identifier] = Field(default_factory=list)
    """Write tools that follow the confirmation pattern (preview, then commit with the token the
    preview returned); see ``veritask.env.ConfirmationGate``."""
    atomic_tools: bool = True
    """False: agents get only the procedural tools (an imported toolkit), no ``query_<t>``."""
    seed: dict[Identifier, list[dict[str, Scalar | None]]] = Field(default_factory=dict)
    user_tools: UserTools | None = None
    """Tools the user holds and the agent asks them to use (dual control); None: none."""
    escalation: Escalation | None = None
    """The hand-off to a human agent and the reasons the policy gives for it; None: none."""

    def table(self, name: str) -> Table:
        """Return the table called ``name``; KeyError when it does not exist."""
        return _table_index(self.tables)[name]

    def has_table(self, name: str) -> bool:
        """True when the spec declares a table called ``name``."""
        return name in _table_index(self.tables)

    def service_of(self, table: str) -> str | None:
        """The service that owns ``table`` (None: the spec has none, or the table is shared)."""
        return next((s.name for s in self.services if table in s.tables), None)

    def rule(self, rule_id: str) -> Rule:
        """Return the rule with id ``rule_id``; KeyError when it does not exist."""
        for rule in self.rules:
            if rule.id == rule_id:
                return rule
        raise KeyError(rule_id)

    def technical_keys(self) -> dict[str, list[str]]:
        """Columns excluded from diffs, per table."""
        return {t.name: [c.name for c in t.columns if c.technical] for t in self.tables}

    def spec_hash(self) -> str:
        """A stable sha256 of the spec's canonical JSON form.

        Fields left at their defaults are left out, so a new optional field of the format does
        not change the hash of specs that do not use it (datasets stay checkable across
        versions); a spec that sets it hashes differently.
        """
        data = self.model_dump(mode="json", exclude_defaults=True)
        return sha256_text(canonical_json(data))


_TABLE_INDEXES: dict[int, tuple[list[Table], int, dict[str, Table]]] = {}
"""Tables by name for the table lists used last (a spec with thousands of tables looked each
one up by scanning the list, which made validation quadratic). Kept outside the model: a
private attribute would take part in the model's equality."""
_INDEX_LOCK = threading.Lock()


def _table_index(tables: list[Table]) -> dict[str, Table]:
    """``{name: table}`` of a spec's table list (the first of a repeated name wins, as the
    scan did), cached for the last few lists (same list object, same length)."""
    with _INDEX_LOCK:
        hit = _TABLE_INDEXES.get(id(tables))
        if hit is not None and hit[0] is tables and hit[1] == len(tables):
            return hit[2]
        index: dict[str, Table] = {}
        for table in tables:
            index.setdefault(table.name, table)
        if len(_TABLE_INDEXES) >= 32:
            _TABLE_INDEXES.pop(next(iter(_TABLE_INDEXES)))
        _TABLE_INDEXES[id(tables)] = (tables, len(tables), index)
        return index


ForeachStep.model_rebuild()
