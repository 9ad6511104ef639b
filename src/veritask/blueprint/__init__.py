"""AgentSkiller on veritask: tool dependency graphs, task templates and cross-domain fusion."""

from veritask.blueprint._toolgraph import (
    GraphIssue,
    TaskTemplate,
    build_tool_graph,
    check_tool_graph,
    enumerate_paths,
    graph_to_json,
    task_template,
)

__all__ = [
    "GraphIssue",
    "TaskTemplate",
    "build_tool_graph",
    "check_tool_graph",
    "enumerate_paths",
    "graph_to_json",
    "task_template",
]
