"""The tool dependency graph of a compiled spec, its topology checks, paths and task templates.

AgentSkiller (sections 3.10 and 3.14) has a model draw this graph and a validator audit it.
Here every edge is read off the spec, so the graph is the same on every run:

- **information flow**: an id that tool A returns is an argument of tool B. ``query_T`` and
  ``insert_T`` return rows of ``T`` with their keys; a write tool's foreign-key argument that
  references ``T`` (or ``update_T``'s key) takes one;
- **state dependency**: a prerequisite rule on B's table looks up a row of a table B's rows
  depend on (one they reference through foreign keys), and A writes that table: A's write can
  establish B's prerequisite (an approved request, an open trip). Effects are bookkeeping
  (counters), not prerequisites, so they add no edge;
- **authentication gate**: the actor's query tool identifies the user; it precedes every tool
  that no other edge leads to, so it is the single source of every path;
- **storyline flow** (soft): a write that acts on the rows the previous tool returned or wrote
  (the same table, or a table whose foreign key references it) is a plausible next step
  (``query_orders`` then ``update_orders``, ``insert_trips`` then ``insert_trip_legs``). The
  kind is added to a hard edge that fits; where no hard edge exists it becomes a soft edge, only
  when it closes no cycle. Path enumeration tries storyline successors first (a preference: under
  the path cap, storyline paths are kept before others).

The three checks of section 3.10.2 (one source, everything reachable from it, no cycle) run
on any graph in this shape, including a hand-made or model-made one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from veritask.blueprint._sqlread import rule_reads
from veritask.policy import DomainSpec, ToolSpec, actor_table, build_tools

DEFAULT_MIN_LEN = 2
DEFAULT_MAX_LEN = 4
DEFAULT_MAX_PATHS = 200
STORYLINE = "storyline"


@dataclass(frozen=True)
class GraphIssue:
    """One failed topology check: ``single_source``, ``reachability`` or ``acyclicity``."""

    check: str
    message: str
    nodes: tuple[str, ...] = ()


@dataclass(frozen=True)
class TaskTemplate:
    """A task skeleton for one path: the tools in order, which earlier call feeds which
    argument, and placeholders (``<table.column>``) for the values the user must supply.

    It is the machine form; the user-facing template (motivation and request) is written from
    it by :mod:`veritask.blueprint._semantic`."""

    id: str
    tools: tuple[str, ...]
    signature: str
    """The path with each step's placeholders: ``query_users -> insert_approvals(<a.b>)``."""
    bindings: tuple[tuple[str, str, str], ...] = ()
    """``(tool, argument, earlier tool whose result supplies it)``."""
    placeholders: dict[str, list[str]] = field(default_factory=dict)

    @property
    def writes(self) -> int:
        """How many steps of the path write."""
        return sum(1 for t in self.tools if not t.startswith("query_"))

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "id": self.id,
            "tools": list(self.tools),
            "signature": self.signature,
            "bindings": [list(b) for b in self.bindings],
            "placeholders": self.placeholders,
        }


def _add_edge(graph: Any, src: str, dst: str, kind: str, **labels: str) -> None:
    """Add (or annotate) an edge; ``kinds`` and each label list stay sorted and unique."""
    if src == dst:
        return
    if not graph.has_edge(src, dst):
        graph.add_edge(src, dst, kinds=[], args=[], rules=[])
    data = graph.edges[src, dst]
    data["kinds"] = sorted({*data["kinds"], kind})
    for key, value in labels.items():
        data[key] = sorted({*data[key], value})


def _producers(tools: dict[str, ToolSpec], table: str) -> list[str]:
    return [n for n in (f"query_{table}", f"insert_{table}") if n in tools]


def _information_edges(graph: Any, spec: DomainSpec, tools: dict[str, ToolSpec]) -> None:
    for name, tool in tools.items():
        if not tool.writes:
            continue
        for arg, param in tool.params.items():
            if param.role == "key":
                source_table = tool.table
            elif param.column and (ref := spec.table(tool.table).column(param.column).references):
                source_table = ref.split(".")[0]
            else:
                continue
            for producer in _producers(tools, source_table):
                _add_edge(graph, producer, name, "information", args=arg)


def _ancestors(spec: DomainSpec, table: str) -> set[str]:
    """Tables ``table`` references through a chain of foreign keys (itself excluded)."""
    seen: set[str] = set()
    todo = [table]
    while todo:
        for col in spec.table(todo.pop()).columns:
            parent = col.references.split(".")[0] if col.references else None
            if parent and parent not in seen and parent != table:
                seen.add(parent)
                todo.append(parent)
    return seen


def _state_edges(graph: Any, spec: DomainSpec, tools: dict[str, ToolSpec]) -> None:
    """A prerequisite rule that looks up a row the written row depends on (a table it
    references, directly or transitively) waits for the tools that write that table."""
    for rule in spec.rules:
        if rule.category != "prerequisite":
            continue
        consumers = [f"{e}_{rule.table}" for e in rule.on if f"{e}_{rule.table}" in tools]
        for table in sorted(rule_reads(rule) & _ancestors(spec, rule.table)):
            for writer in (f"insert_{table}", f"update_{table}"):
                for consumer in consumers:
                    if writer in tools:
                        _add_edge(graph, writer, consumer, "state", rules=rule.id)


def _storyline_edges(graph: Any, spec: DomainSpec, tools: dict[str, ToolSpec]) -> None:
    """Mark every plausible next step (see the module docstring) with ``storyline``; a pair
    with no hard edge gets a soft edge when that closes no cycle."""
    for src in sorted(tools):
        for dst in sorted(tools):
            if src == dst or not tools[dst].writes or not _follows(spec, tools[src], tools[dst]):
                continue
            if graph.has_edge(src, dst) or not nx.has_path(graph, dst, src):
                _add_edge(graph, src, dst, STORYLINE)


def _follows(spec: DomainSpec, before: ToolSpec, after: ToolSpec) -> bool:
    """Whether ``after`` acts on the rows ``before`` returns or writes."""
    if not before.table or not after.table:
        return False  # a procedure names no table
    if after.table == before.table:
        return before.kind != "update" or after.kind == "update"
    refs = {c.references.split(".")[0] for c in spec.table(after.table).columns if c.references}
    return before.table in refs


def is_soft(data: dict[str, Any]) -> bool:
    """Whether an edge is storyline flow alone (no information or state dependency)."""
    return list(data.get("kinds", [])) == [STORYLINE]


def build_tool_graph(spec: DomainSpec) -> Any:
    """The tool dependency graph of ``spec`` as a ``networkx.DiGraph``.

    Nodes are tool names (attributes ``kind``, ``table``); edges carry ``kinds``
    (``information``, ``state``, and the soft ``storyline``), ``args`` (the arguments an information edge feeds) and
    ``rules`` (the prerequisite rules a state edge serves). ``graph.graph["source"]`` is the
    actor's query tool.
    """
    tools = build_tools(spec)
    source = f"query_{actor_table(spec)}"
    graph = nx.DiGraph(domain=spec.name, source=source)
    for name, tool in tools.items():
        graph.add_node(name, kind=tool.kind, table=tool.table)
    _information_edges(graph, spec, tools)
    _state_edges(graph, spec, tools)
    for name in tools:
        if name != source and graph.in_degree(name) == 0:
            _add_edge(graph, source, name, "state", rules="AUTHENTICATION")
    _storyline_edges(graph, spec, tools)
    return graph


def check_tool_graph(graph: Any) -> list[GraphIssue]:
    """The topology checks of a tool graph; an empty list when all three hold.

    - ``single_source``: exactly one node without incoming edges;
    - ``reachability``: every node is reachable from the source (``graph.graph["source"]``
      when set, else the one node without incoming edges);
    - ``acyclicity``: no directed cycle.
    """
    issues: list[GraphIssue] = []
    sources = sorted(n for n in graph.nodes if graph.in_degree(n) == 0)
    if len(sources) != 1:
        issues.append(
            GraphIssue(
                "single_source", f"{len(sources)} nodes have no incoming edge", tuple(sources)
            )
        )
    root = graph.graph.get("source") or (sources[0] if len(sources) == 1 else None)
    if root is None or root not in graph:
        issues.append(GraphIssue("reachability", "the graph has no source to start from"))
    else:
        unreachable = sorted(set(graph.nodes) - nx.descendants(graph, root) - {root})
        if unreachable:
            message = f"{len(unreachable)} node(s) cannot be reached from {root}"
            issues.append(GraphIssue("reachability", message, tuple(unreachable)))
    if not nx.is_directed_acyclic_graph(graph):
        cycle = tuple(str(u) for u, _ in nx.find_cycle(graph))
        issues.append(
            GraphIssue("acyclicity", "the graph has a cycle: " + " -> ".join(cycle), cycle)
        )
    return issues


def _extend(graph: Any, path: list[str], min_len: int, max_len: int) -> Iterator[list[str]]:
    here = path[-1]
    successors = sorted(
        (s for s in graph.successors(here) if s not in path),
        key=lambda s: (STORYLINE not in graph.edges[here, s].get("kinds", []), s),
    )
    if not successors or len(path) == max_len:
        if len(path) >= min_len:
            yield list(path)
        return
    for nxt in successors:
        path.append(nxt)
        yield from _extend(graph, path, min_len, max_len)
        path.pop()


def enumerate_paths(
    graph: Any,
    min_len: int = DEFAULT_MIN_LEN,
    max_len: int = DEFAULT_MAX_LEN,
    limit: int = DEFAULT_MAX_PATHS,
) -> list[list[str]]:
    """Simple paths from the source that end at a sink or at ``max_len`` tools, at least
    ``min_len`` long, at most ``limit`` of them. At each step storyline successors come first
    (the preference), then the others, each group in the order of tool names."""
    root = graph.graph.get("source")
    if root is None or root not in graph:
        return []
    out: list[list[str]] = []
    for path in _extend(graph, [root], min_len, max_len):
        out.append(path)
        if len(out) >= limit:
            break
    return out


def task_template(spec: DomainSpec, graph: Any, path: list[str]) -> TaskTemplate:
    """The template of one path: bindings along its edges, placeholders for the rest."""
    tools = build_tools(spec)
    bindings: list[tuple[str, str, str]] = []
    placeholders: dict[str, list[str]] = {}
    steps: list[str] = []
    for i, name in enumerate(path):
        tool = tools[name]
        fed: set[str] = set()
        for earlier in path[:i]:
            if graph.has_edge(earlier, name):
                for arg in graph.edges[earlier, name]["args"]:
                    if arg not in fed:
                        bindings.append((name, arg, earlier))
                        fed.add(arg)
        holes = [f"<{tool.table}.{a}>" for a in tool.required if a not in fed]
        placeholders[name] = holes
        steps.append(f"{name}({', '.join(holes)})" if holes else name)
    digest = hashlib.sha256("\n".join(path).encode()).hexdigest()[:12]
    signature = " -> ".join(steps)
    return TaskTemplate(f"tpl-{digest}", tuple(path), signature, tuple(bindings), placeholders)


def graph_to_json(graph: Any) -> dict[str, Any]:
    """The graph in networkx's node-link form (``edges`` key), nodes and edges sorted."""
    nodes = [{"id": n, **graph.nodes[n]} for n in sorted(graph.nodes)]
    edges = [{"source": u, "target": v, **graph.edges[u, v]} for u, v in sorted(graph.edges)]
    return {
        "directed": True,
        "multigraph": False,
        "graph": dict(sorted(graph.graph.items())),
        "nodes": nodes,
        "edges": edges,
    }
