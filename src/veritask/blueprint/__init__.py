"""AgentSkiller on veritask: tool dependency graphs, task templates and cross-domain fusion."""

from veritask.blueprint._examples import example_failures
from veritask.blueprint._fuse import DEFAULT_PERSON, Decision, Fusion, fuse_specs, harmonize
from veritask.blueprint._fuse_person import FusionError
from veritask.blueprint._sqlrewrite import Renames, rewrite_sql
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
    "DEFAULT_PERSON",
    "Decision",
    "Fusion",
    "FusionError",
    "GraphIssue",
    "Renames",
    "TaskTemplate",
    "build_tool_graph",
    "check_tool_graph",
    "enumerate_paths",
    "example_failures",
    "fuse_specs",
    "graph_to_json",
    "harmonize",
    "rewrite_sql",
    "task_template",
]
