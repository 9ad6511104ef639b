"""A directed graph as an inline SVG picture, laid out on the server (no script, no library
in the page).

Nodes sit in columns by layer: the generations of a topological order (a cycle's nodes share
the layer of their strongly connected component). Within a column nodes are sorted by name, so
the same graph gives the same bytes. Edges are curves from a node's right side to the next
node's left side, with an arrow head; each carries a CSS class per kind (``edge-state``,
``edge-information``) so the legend can colour them.
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx
from markupsafe import Markup, escape

_ROW = 34
_NODE_HEIGHT = 24
_CHAR = 7.0
_GAP = 70
_PAD = 12
_TOP = 34


def layers(nodes: Sequence[str], edges: Sequence[tuple[str, str, str]]) -> list[list[str]]:
    """The nodes in columns: each node one column right of its furthest predecessor (cycles
    collapse into one column)."""
    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from((u, v) for u, v, _ in edges)
    condensed = nx.condensation(graph)
    out: list[list[str]] = []
    for generation in nx.topological_generations(condensed):
        members = [m for c in generation for m in condensed.nodes[c]["members"]]
        out.append(sorted(str(m) for m in members))
    return out


def _curve(x1: float, y1: float, x2: float, y2: float, *, skips: bool) -> str:
    """A curve from (x1, y1) to (x2, y2); one that ``skips`` a column arches above the rows
    between, and one that goes back (a cycle) loops out to the right."""
    if x2 > x1 and not skips:
        bend = (x2 - x1) / 2
        return f"M{x1:.0f},{y1:.0f} C{x1 + bend:.0f},{y1:.0f} {x2 - bend:.0f},{y2:.0f} {x2:.0f},{y2:.0f}"
    if x2 > x1:
        top = min(y1, y2) - _ROW * 0.75
        return f"M{x1:.0f},{y1:.0f} C{x1 + _GAP:.0f},{top:.0f} {x2 - _GAP:.0f},{top:.0f} {x2:.0f},{y2:.0f}"
    loop = _ROW * 1.5
    return (
        f"M{x1:.0f},{y1:.0f} C{x1 + loop:.0f},{y1:.0f} {x1 + loop:.0f},{y2:.0f} {x2:.0f},{y2:.0f}"
    )


def graph_svg(nodes: Sequence[str], edges: Sequence[tuple[str, str, str]], *, label: str) -> Markup:
    """An ``<svg>`` of the graph: ``nodes`` by name, ``edges`` as ``(source, target, kind)``."""
    columns = layers(nodes, edges)
    widths = [max((len(n) for n in col), default=4) * _CHAR + 2 * _PAD for col in columns]
    where: dict[str, tuple[float, float, float]] = {}  # node -> left x, centre y, width
    column: dict[str, int] = {}
    x = 10.0
    for number, (col, width) in enumerate(zip(columns, widths, strict=True)):
        for row, node in enumerate(col):
            where[node] = (x, _TOP + row * _ROW + _NODE_HEIGHT / 2, width)
            column[node] = number
        x += width + _GAP
    height = _TOP + 10 + max((len(c) for c in columns), default=1) * _ROW
    parts = [
        f'<svg class="graph" width="{x - _GAP + 40:.0f}" height="{height}" role="img" '
        f'aria-label="{escape(label)}"><defs><marker id="arrow" viewBox="0 0 10 10" refX="10" '
        'refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M0,0 L10,5 L0,10 z"/></marker></defs>'
    ]
    for source, target, kind in edges:
        sx, sy, sw = where[source]
        tx, ty, tw = where[target]
        x1, x2 = sx + sw, tx if tx > sx else tx + tw
        parts.append(
            f'<path class="edge edge-{escape(kind)}" '
            f'd="{_curve(x1, sy, x2, ty, skips=column[target] - column[source] > 1)}" '
            f'marker-end="url(#arrow)"><title>{escape(source)} → {escape(target)}: '
            f"{escape(kind)}</title></path>"
        )
    for node, (nx_, ny, nw) in where.items():
        parts.append(
            f'<g class="node"><rect x="{nx_:.0f}" y="{ny - _NODE_HEIGHT / 2:.0f}" width="{nw:.0f}" '
            f'height="{_NODE_HEIGHT}" rx="4"/><text x="{nx_ + _PAD:.0f}" y="{ny + 4:.0f}">'
            f"{escape(node)}</text></g>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))
