"""AgentSkiller on veritask: the blueprint DAG (seed topics -> compiled services), tool
dependency graphs, task templates and cross-domain fusion."""

from veritask.blueprint._dag import STAGES, BlueprintDag, DagConfig, StageNotReady, load_seeds
from veritask.blueprint._dag_compile import closed_world_problems, compile_service
from veritask.blueprint._dag_report import dag_status, report_lines, stage_report
from veritask.blueprint._dag_schema import Blueprint, Entity, dedupe_domains, same_meaning
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
    "STAGES",
    "Blueprint",
    "BlueprintDag",
    "DagConfig",
    "Decision",
    "Entity",
    "Fusion",
    "FusionError",
    "GraphIssue",
    "Renames",
    "StageNotReady",
    "TaskTemplate",
    "build_tool_graph",
    "check_tool_graph",
    "closed_world_problems",
    "compile_service",
    "dag_status",
    "dedupe_domains",
    "enumerate_paths",
    "example_failures",
    "fuse_specs",
    "graph_to_json",
    "harmonize",
    "load_seeds",
    "report_lines",
    "rewrite_sql",
    "same_meaning",
    "stage_report",
    "task_template",
]
