"""Tool catalogues in one normalized form, from wherever tools are described.

Sources: a veritask domain spec (built-in name or spec file), an OpenAI tools JSON document, an
MCP server's ``list_tools`` (through the official ``mcp`` client), and the tools named in seed
trajectories (parameters and return fields inferred from the calls and observations seen).
Every source gives the same :class:`ToolCatalog`: tools with ordered parameters (type, required,
enum, bounds, description) and, where known, a return schema.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from veritask._util import read_json
from veritask.policy import DomainSpec, ToolSpec, argument_schema, build_tools

JSON_OF_SQL = {"TEXT": "string", "INTEGER": "integer", "REAL": "number"}


@dataclass(frozen=True)
class ToolParam:
    """One argument of a tool.

    Attributes:
        name: The argument's name.
        type: Its JSON type (``string``, ``integer``, ``number``, ``boolean``, ``object``,
            ``array``), or None when the source does not say.
        required: The call must carry it.
        enum: The allowed values, when the source lists them.
        minimum: Lower bound of a number, when declared.
        maximum: Upper bound of a number, when declared.
        description: What the argument means.
    """

    name: str
    type: str | None = None
    required: bool = False
    enum: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    description: str = ""

    def schema(self) -> dict[str, Any]:
        """The argument's JSON schema."""
        return argument_schema(self.type, self.description, self.enum, self.minimum, self.maximum)


@dataclass(frozen=True)
class ToolDef:
    """One tool: name, description, ordered parameters and (where known) its return schema.

    Attributes:
        name: The tool's name.
        description: What it does (preconditions and side effects, for veritask tools).
        params: The parameters, in declaration order.
        returns: JSON schema of a successful result, or None when unknown.
        writes: True for tools that change state, False for reads, None when unknown.
        closed: Arguments outside ``params`` are an error (``additionalProperties: false``).
        backend: In a hybrid catalogue, who answers a call: ``real`` (the environment the spec
            compiles to) or ``simulated`` (the simulator); None elsewhere.
    """

    name: str
    description: str = ""
    params: tuple[ToolParam, ...] = ()
    returns: dict[str, Any] | None = None
    writes: bool | None = None
    closed: bool = True
    backend: str | None = None

    @property
    def param_names(self) -> list[str]:
        """The parameter names, in order."""
        return [p.name for p in self.params]

    def param(self, name: str) -> ToolParam | None:
        """The parameter called ``name``, or None."""
        return next((p for p in self.params if p.name == name), None)

    def parameters_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments object."""
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {p.name: p.schema() for p in self.params},
            "required": [p.name for p in self.params if p.required],
        }
        if self.closed:
            schema["additionalProperties"] = False
        return schema

    def openai_schema(self) -> dict[str, Any]:
        """The tool as an OpenAI function-tool schema."""
        function = {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters_schema(),
        }
        return {"type": "function", "function": function}

    def to_json(self) -> dict[str, Any]:
        """The normalized JSON form (read back by :func:`tool_from_json`)."""
        out = {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters_schema(),
            "returns": self.returns,
            "writes": self.writes,
        }
        if self.backend is not None:
            out["backend"] = self.backend
        return out


@dataclass
class ToolCatalog:
    """Tools by name, in source order, with where they came from.

    Attributes:
        tools: Tool definitions by name.
        source: A short label of the source (``spec:travel``, ``openai:tools.json``, ...).
    """

    tools: dict[str, ToolDef] = field(default_factory=dict)
    source: str = ""

    def __contains__(self, name: object) -> bool:
        return name in self.tools

    def __len__(self) -> int:
        return len(self.tools)

    def get(self, name: str) -> ToolDef | None:
        """The tool called ``name``, or None."""
        return self.tools.get(name)

    @property
    def names(self) -> list[str]:
        """Tool names in order."""
        return list(self.tools)

    def openai_tools(self) -> list[dict[str, Any]]:
        """The catalogue as OpenAI function-tool schemas."""
        return [t.openai_schema() for t in self.tools.values()]

    def to_json(self) -> dict[str, Any]:
        """``{"source", "tools": [...]}`` (read back by :func:`catalog_from_json`)."""
        return {"source": self.source, "tools": [t.to_json() for t in self.tools.values()]}


def _catalog(tools: Iterable[ToolDef], source: str) -> ToolCatalog:
    return ToolCatalog({t.name: t for t in tools}, source)


# -- JSON schema -> parameters ----------------------------------------------------------------


def _json_type(schema: Mapping[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        return str(kinds[0]) if len(kinds) == 1 else None
    return str(kind) if isinstance(kind, str) else None


def _bound(schema: Mapping[str, Any], key: str) -> float | None:
    value = schema.get(key)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def params_from_schema(schema: Mapping[str, Any] | None) -> tuple[tuple[ToolParam, ...], bool]:
    """Parameters of a JSON-schema arguments object, and whether extra keys are refused."""
    schema = schema or {}
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    params = []
    for name, sub in props.items():
        sub = sub if isinstance(sub, Mapping) else {}
        enum = sub.get("enum")
        params.append(
            ToolParam(
                name=str(name),
                type=_json_type(sub),
                required=name in required,
                enum=tuple(enum) if isinstance(enum, list) else None,
                minimum=_bound(sub, "minimum"),
                maximum=_bound(sub, "maximum"),
                description=str(sub.get("description") or ""),
            )
        )
    return tuple(params), schema.get("additionalProperties") is False


def tool_from_json(data: Mapping[str, Any]) -> ToolDef:
    """A tool from its normalized JSON, an OpenAI tool (flat or ``{"type": "function"}``), or
    an MCP tool definition (``inputSchema``, ``outputSchema``)."""
    fn = data.get("function") if data.get("type") == "function" else data
    fn = fn if isinstance(fn, Mapping) else {}
    schema = fn.get("parameters") or fn.get("inputSchema") or fn.get("input_schema")
    params, closed = params_from_schema(schema)
    returns = fn.get("returns") or fn.get("outputSchema")
    writes = fn.get("writes")
    backend = fn.get("backend")
    return ToolDef(
        name=str(fn.get("name") or ""),
        description=str(fn.get("description") or ""),
        params=params,
        returns=dict(returns) if isinstance(returns, Mapping) else None,
        writes=writes if isinstance(writes, bool) else None,
        closed=closed,
        backend=backend if backend in ("real", "simulated") else None,
    )


def catalog_from_json(data: Any, source: str = "json") -> ToolCatalog:
    """A catalogue from a list of tools, ``{"tools": [...]}`` or a saved catalogue."""
    items = data.get("tools") if isinstance(data, Mapping) else data
    if not isinstance(items, list):
        raise ValueError(f"{source}: expected a list of tools or an object with 'tools'")
    label = str(data.get("source") or source) if isinstance(data, Mapping) else source
    return _catalog((tool_from_json(t) for t in items if isinstance(t, Mapping)), label)


# -- veritask specs ---------------------------------------------------------------------------


def _returns(spec: DomainSpec, tool: ToolSpec) -> dict[str, Any]:
    table = spec.table(tool.table)
    row = {
        "type": "object",
        "properties": {c.name: {"type": JSON_OF_SQL[c.type]} for c in table.columns},
    }
    if tool.kind != "query":
        return row
    return {
        "type": "object",
        "properties": {
            "rows": {"type": "array", "items": row},
            "total": {"type": "integer"},
            "limit": {"type": "integer"},
            "offset": {"type": "integer"},
        },
        "required": ["rows", "total", "limit", "offset"],
    }


def catalog_from_spec(spec: DomainSpec) -> ToolCatalog:
    """The tools a veritask domain compiles to, with their return schemas."""
    tools = []
    for tool in build_tools(spec).values():
        params, closed = params_from_schema(tool.json_schema())
        tools.append(
            ToolDef(
                name=tool.name,
                description=tool.description,
                params=params,
                returns=_returns(spec, tool),
                writes=tool.writes,
                closed=closed,
            )
        )
    return _catalog(tools, f"spec:{spec.name}")


# -- MCP ----------------------------------------------------------------------------------------


async def catalog_from_mcp(command: str, args: Sequence[str] = ()) -> ToolCatalog:
    """The tools an MCP server lists, asked over stdio through the official ``mcp`` client.

    Args:
        command: The server's executable.
        args: Its arguments.

    Returns:
        The server's tools (``inputSchema`` as parameters, ``outputSchema`` as returns).
    """
    import os

    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command, args=list(args), env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
    tools = [tool_from_json(t.model_dump(by_alias=True)) for t in listed.tools]
    return _catalog(tools, f"mcp:{command}")


# -- seed trajectories -------------------------------------------------------------------------


def _value_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


@dataclass
class _Seen:
    calls: int = 0
    keys: dict[str, set[str]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    returns: dict[str, str] = field(default_factory=dict)

    def add_call(self, args: Mapping[str, Any]) -> None:
        self.calls += 1
        for name, value in args.items():
            self.keys.setdefault(name, set()).add(_value_type(value))
            self.counts[name] = self.counts.get(name, 0) + 1

    def add_result(self, result: Any) -> None:
        if isinstance(result, Mapping) and "error" not in result:
            for key, value in result.items():
                self.returns.setdefault(str(key), _value_type(value))

    def tool(self, name: str) -> ToolDef:
        params = tuple(
            ToolParam(
                name=key,
                type=next(iter(types)) if len(types) == 1 else None,
                required=self.counts[key] == self.calls,
            )
            for key, types in self.keys.items()
        )
        returns = (
            {"type": "object", "properties": {k: {"type": t} for k, t in self.returns.items()}}
            if self.returns
            else None
        )
        return ToolDef(name=name, params=params, returns=returns, closed=False)


def catalog_from_calls(calls: Iterable[tuple[str, Mapping[str, Any], Any]]) -> ToolCatalog:
    """A catalogue inferred from ``(tool, arguments, result)`` triples seen in trajectories.

    A parameter is required when every call carried it; its type is the one JSON type seen
    (unknown when several were); return fields are the keys of successful results. Such a
    catalogue is open (unseen keys are not errors): it is a floor, not a specification.
    """
    seen: dict[str, _Seen] = {}
    for name, args, result in calls:
        entry = seen.setdefault(name, _Seen())
        entry.add_call(args)
        entry.add_result(result)
    return _catalog((entry.tool(name) for name, entry in seen.items()), "trajectories")


def hybrid_catalog(real: ToolCatalog, extra: ToolCatalog) -> ToolCatalog:
    """One catalogue over two sources: ``real``'s tools marked ``backend="real"``, then the
    tools of ``extra`` it lacks marked ``backend="simulated"`` (a real tool wins a name)."""
    tools = [replace(t, backend="real") for t in real.tools.values()]
    tools += [replace(t, backend="simulated") for n, t in extra.tools.items() if n not in real]
    return _catalog(tools, f"hybrid:{real.source}+{extra.source}")


def load_json_file(path: Path) -> Any:
    """A JSON document from a file, within the bounded reader's limits.

    Raises:
        InputError: The file is binary, not UTF-8, too large, too deep or not JSON.
    """
    return read_json(path)
