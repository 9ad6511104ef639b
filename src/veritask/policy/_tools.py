"""Derive atomic, logic-aware tools (query / insert / update, never delete) from a DomainSpec."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from veritask.policy._spec import Column, DomainSpec, Effect, Procedure, Rule, Scalar, Table

ToolKind = Literal["query", "insert", "update", "procedure"]
ParamRole = Literal["eq", "min", "max", "value", "key", "limit", "offset", "order_by", "descending"]
JSON_TYPES = {"TEXT": "string", "INTEGER": "integer", "REAL": "number"}
DEFAULT_LIMIT = 20
MAX_LIMIT = 100


@dataclass(frozen=True)
class Param:
    """One argument of a tool and how it maps onto the table."""

    name: str
    json_type: str
    role: ParamRole
    column: str | None = None
    enum: tuple[Scalar, ...] | None = None
    required: bool = False
    description: str = ""
    minimum: int | None = None
    maximum: int | None = None
    items: str | None = None
    """The JSON type of an array argument's elements (procedural tools)."""

    def schema(self) -> dict[str, Any]:
        """JSON schema of this argument."""
        out = argument_schema(
            self.json_type, self.description, self.enum, self.minimum, self.maximum
        )
        if self.json_type == "array":
            out["items"] = {"type": self.items} if self.items else {}
        return out


def argument_schema(
    json_type: str | None,
    description: str = "",
    enum: Sequence[Any] | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
) -> dict[str, Any]:
    """The JSON schema of one tool argument: its type and whichever of description, enum and
    bounds it has (the same shape whatever source the tool came from)."""
    out: dict[str, Any] = {"type": json_type} if json_type else {}
    if description:
        out["description"] = description
    if enum is not None:
        out["enum"] = list(enum)
    if minimum is not None:
        out["minimum"] = minimum
    if maximum is not None:
        out["maximum"] = maximum
    return out


@dataclass(frozen=True)
class ToolSpec:
    """A tool of a domain: what it does, its arguments, and the rules and effects it meets."""

    name: str
    kind: ToolKind
    table: str
    description: str
    params: dict[str, Param]
    rules: tuple[str, ...] = ()
    effects: tuple[str, ...] = ()
    key: str | None = None
    access: Literal["read", "write"] | None = None
    """A procedural tool's declared access (None for the atomic tools)."""
    writes: bool = field(init=False)
    required: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        writes = self.access == "write" if self.kind == "procedure" else self.kind != "query"
        object.__setattr__(self, "writes", writes)
        object.__setattr__(self, "required", tuple(n for n, p in self.params.items() if p.required))

    def json_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments object."""
        return {
            "type": "object",
            "properties": {name: p.schema() for name, p in self.params.items()},
            "required": [name for name, p in self.params.items() if p.required],
            "additionalProperties": False,
        }

    def openai_schema(self) -> dict[str, Any]:
        """The tool as an OpenAI function-tool schema."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.json_schema(),
            },
        }


def _col_desc(col: Column) -> str:
    text = col.description or col.name
    if col.references:
        text += f" (references {col.references})"
    return text


def _enum(col: Column) -> tuple[Scalar, ...] | None:
    return tuple(col.enum) if col.enum is not None else None


def _query_params(table: Table) -> dict[str, Param]:
    params: dict[str, Param] = {}
    for col in table.columns:
        jt = JSON_TYPES[col.type]
        params[col.name] = Param(
            col.name, jt, "eq", col.name, _enum(col), description=f"Equals: {_col_desc(col)}"
        )
        if col.type in ("INTEGER", "REAL") and col.enum is None:
            params[f"{col.name}_min"] = Param(
                f"{col.name}_min", jt, "min", col.name, description=f"{col.name} >= this value"
            )
            params[f"{col.name}_max"] = Param(
                f"{col.name}_max", jt, "max", col.name, description=f"{col.name} <= this value"
            )
    params["order_by"] = Param(
        "order_by",
        "string",
        "order_by",
        enum=tuple(table.column_names),
        description="Column to sort by (default: primary key)",
    )
    params["descending"] = Param(
        "descending", "boolean", "descending", description="Sort descending"
    )
    params["limit"] = Param(
        "limit",
        "integer",
        "limit",
        minimum=1,
        maximum=MAX_LIMIT,
        description=f"Page size (default {DEFAULT_LIMIT}, max {MAX_LIMIT})",
    )
    params["offset"] = Param(
        "offset", "integer", "offset", minimum=0, description="Rows to skip (pagination)"
    )
    return params


def _write_params(table: Table, kind: ToolKind) -> dict[str, Param]:
    params: dict[str, Param] = {}
    if kind == "update":
        for col in table.primary_key:
            params[col.name] = Param(
                col.name,
                JSON_TYPES[col.type],
                "key",
                col.name,
                required=True,
                description=f"Key of the row to update: {_col_desc(col)}",
            )
    for col in table.columns:
        if kind == "insert" and col.writable_on_insert:
            required = col.required_on_insert
        elif kind == "update" and col.writable_on_update:
            required = False
        else:
            continue
        params[col.name] = Param(
            col.name, JSON_TYPES[col.type], "value", col.name, _enum(col), required, _col_desc(col)
        )
    return params


def _rule_line(rule: Rule) -> str:
    return f"- [{rule.code}] {rule.message} Hint: {rule.hint}"


def _system_columns(table: Table, kind: ToolKind) -> list[str]:
    out = []
    for col in table.columns:
        if kind == "insert" and not col.writable_on_insert and not col.autoincrement:
            how = (
                "computed by the system"
                if col.computed
                else (f"defaults to {col.default!r}" if col.default is not None else "left empty")
            )
            out.append(f"{col.name} ({how})")
        elif kind == "update" and col.computed:
            out.append(f"{col.name} (computed by the system)")
    return out


def _write_description(
    table: Table, kind: ToolKind, rules: list[Rule], effects: list[Effect]
) -> str:
    verb = "Insert a new row into" if kind == "insert" else "Update one row (by key) of"
    lines = [f"{verb} {table.name}. {table.description}".strip()]
    if rules:
        lines += ["Preconditions (the call is rejected with the error code shown otherwise):"]
        lines += [_rule_line(r) for r in rules]
    if effects:
        lines += ["Side effects (done by the system; do not repeat them):"]
        lines += [f"- {e.description.strip()}" for e in effects]
    system = _system_columns(table, kind)
    if system:
        lines += ["Set by the system, not by you: " + ", ".join(system) + "."]
    if table.insert_only:
        lines += [f"Rows of {table.name} cannot be changed once written (insert-only)."]
    if table.lifecycle and kind == "update":
        lines += [
            f"Rows are never deleted: retire one by setting {table.lifecycle.column} to {', '.join(map(str, table.lifecycle.inactive_values))}."
        ]
    lines += ["Returns the row as stored after the write."]
    return "\n".join(lines)


def _query_description(table: Table) -> str:
    mode = "read-only"
    if table.writable:
        mode = "insert-only" if table.insert_only else "read-write"
    return (
        f"Search {table.name} ({table.tier} table, {mode}). {table.description}".strip()
        + "\nFilter by exact column values and by <column>_min / <column>_max ranges; results are"
        " paginated with limit and offset. Returns {rows, total, limit, offset}. Never changes data."
    )


def procedure_tool(proc: Procedure) -> ToolSpec:
    """The tool of a procedural tool: its name, description and argument schema."""
    params = {
        p.name: Param(
            p.name,
            p.type,
            "value",
            enum=tuple(p.enum) if p.enum is not None else None,
            required=p.required,
            description=p.description,
            items=p.items,
        )
        for p in proc.params
    }
    return ToolSpec(proc.name, "procedure", "", proc.description, params, access=proc.access)


def build_tools(spec: DomainSpec) -> dict[str, ToolSpec]:
    """All tools of a spec: ``query_<t>`` for every table, ``insert_<t>`` for read-write tables
    and ``update_<t>`` for those of them with a primary key that are not insert-only (none of
    these when ``atomic_tools`` is off), then the procedural tools. There is no delete tool.

    Raises:
        ValueError: A procedural tool has the name of another tool.
    """
    tools = _atomic_tools(spec) if spec.atomic_tools else {}
    for proc in spec.procedures:
        if proc.name in tools:
            raise ValueError(f"procedure {proc.name!r} has the name of another tool")
        tools[proc.name] = procedure_tool(proc)
    return tools


def _atomic_tools(spec: DomainSpec) -> dict[str, ToolSpec]:
    tools: dict[str, ToolSpec] = {}
    for table in spec.tables:
        tools[f"query_{table.name}"] = ToolSpec(
            f"query_{table.name}",
            "query",
            table.name,
            _query_description(table),
            _query_params(table),
        )
    for table in spec.tables:
        if not table.writable:
            continue
        for kind in ("insert", "update"):
            rules = [r for r in spec.rules if r.table == table.name and kind in r.on]
            effects = [e for e in spec.effects if e.table == table.name and e.on == kind]
            key = table.primary_key[0].name if table.primary_key else None
            if kind == "update" and (key is None or not table.updatable):
                continue
            tools[f"{kind}_{table.name}"] = ToolSpec(
                name=f"{kind}_{table.name}",
                kind=kind,
                table=table.name,
                description=_write_description(table, kind, rules, effects),
                params=_write_params(table, kind),
                rules=tuple(r.id for r in rules),
                effects=tuple(e.id for e in effects),
                key=key,
            )
    return tools


CONFIRM_ARG = "confirm"
TOKEN_ARG = "confirmation_token"


def confirmation_tools(spec: DomainSpec) -> dict[str, ToolSpec]:
    """The tools of ``spec`` as an agent sees them under the confirmation pattern: each write
    tool named in ``confirm_writes`` gains ``confirm`` and ``confirmation_token`` arguments and
    says how to use them (AgentSkiller section 3.9.1); other tools are unchanged.

    Raises:
        ValueError: ``confirm_writes`` names a tool that is not a write tool of the spec.
    """
    tools = build_tools(spec)
    for name in spec.confirm_writes:
        tool = tools.get(name)
        if tool is None or not tool.writes:
            raise ValueError(f"confirm_writes: {name!r} is not a write tool of {spec.name}")
        params = {
            **tool.params,
            CONFIRM_ARG: Param(
                CONFIRM_ARG,
                "boolean",
                "value",
                description="false (default): preview the change and get a token; true: commit.",
            ),
            TOKEN_ARG: Param(
                TOKEN_ARG,
                "string",
                "value",
                description="With confirm=true: the token the preview of this same call returned.",
            ),
        }
        description = (
            f"{tool.description}\nConfirmation required: call first with confirm=false to get a "
            "preview and a confirmation_token, show the preview to the user, and only after they "
            "agree call again with the same arguments, confirm=true and that token."
        )
        tools[name] = replace(tool, params=params, description=description)
    return tools


def openai_tools(spec: DomainSpec) -> list[dict[str, Any]]:
    """The spec's tools as a list of OpenAI function-tool schemas."""
    return [t.openai_schema() for t in build_tools(spec).values()]
