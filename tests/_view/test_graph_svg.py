"""The server-drawn graph picture: every node once, edges point rightwards in a DAG, a cycle
shares a column, and the same graph gives the same bytes."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from veritask._view._graph_svg import graph_svg, layers

NAMES = [f"t{i}" for i in range(8)]
EDGES = st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMES)), max_size=20)


@settings(max_examples=60, deadline=None)
@given(EDGES)
def test_every_node_once_and_edges_point_right(pairs: list[tuple[str, str]]) -> None:
    edges = [(a, b, "state") for a, b in pairs if a != b]
    columns = layers(NAMES, edges)
    placed = [n for col in columns for n in col]
    assert sorted(placed) == sorted(NAMES)
    where = {n: i for i, col in enumerate(columns) for n in col}
    acyclic = [(a, b) for a, b, _ in edges if int(a[1:]) < int(b[1:])]
    if len(acyclic) == len(edges):  # a DAG: every edge goes to a later column
        assert all(where[a] < where[b] for a, b in acyclic)
    svg = graph_svg(NAMES, edges, label="g")
    assert svg == graph_svg(list(reversed(NAMES)), edges, label="g")
    assert len(re.findall(r'<g class="node">', svg)) == len(NAMES)
    assert svg.count('<path class="edge') == len(edges)


def test_a_cycle_shares_a_column_and_names_are_escaped() -> None:
    edges = [("a", "b", "state"), ("b", "a", "state"), ("b", "<c>", "information")]
    assert layers(["a", "b", "<c>"], edges) == [["a", "b"], ["<c>"]]
    svg = graph_svg(["a", "b", "<c>"], edges, label="cycle")
    assert "&lt;c&gt;" in svg and "<c>" not in svg
