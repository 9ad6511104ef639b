"""The DAG stages after ``seed``: template paths grounded and filtered on each service
(``paths``, AgentSkiller Steps 9-10 and 14-16), and certified tasks generated from each service
(``tasks``). Neither calls a model.

The ``tasks`` stage runs a :data:`TaskMaker` the caller hands to the DAG with the service's kept
paths: each kept path is a task skeleton the maker grounds, executes and projects (the command
line passes one built on the synthesis package; ``blueprint`` sits beside it and does not import
it). Without one, the stage records each service as ``skipped``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from veritask.blueprint._ground import FAILURE_KINDS, ground_paths
from veritask.blueprint._semantic import (
    SemanticTemplate,
    Verdict,
    judge_parser,
    judge_prompt,
    judged_templates,
    template_parser,
    template_prompt,
)
from veritask.blueprint._toolgraph import (
    TaskTemplate,
    build_tool_graph,
    check_tool_graph,
    enumerate_paths,
    task_template,
)
from veritask.model import CostLedger
from veritask.policy import DomainSpec, load_spec

Json = dict[str, Any]

TaskMaker = Callable[[Path, list[Json], int, int, Path], Json]
"""``make(spec_path, kept_paths, n, seed, out) -> counts``: make ``n`` tasks from a service spec
and its kept paths (``{"template", "tools"}`` each) into ``out`` (resumable) and return at least
``tasks``, ``from_paths``, ``certified`` and ``grounded``."""


Judged = list[tuple[SemanticTemplate, Verdict]]
"""Each executed path's semantic template and the judge's verdict on it."""


def executed_paths(spec_path: Path, max_paths: int, seed: int) -> tuple[Json, list[TaskTemplate]]:
    """The tool graph of one service, its checks, its template paths, and each path grounded
    once (sampling mode) and executed: kept or classified. Also the kept paths' skeletons."""
    spec = load_spec(spec_path)
    graph = build_tool_graph(spec)
    issues = check_tool_graph(graph)
    paths = enumerate_paths(graph, limit=max_paths)
    templates = [task_template(spec, graph, p) for p in paths]
    report = ground_paths(spec, templates, mode="sampling", seed=seed)
    kept = {o.template for o in report.outcomes if o.kept}
    result = {
        "service": spec.name,
        "nodes": graph.number_of_nodes(),
        "edges": graph.number_of_edges(),
        "soft_edges": sum(1 for *_, d in graph.edges(data=True) if d["kinds"] == ["storyline"]),
        "checks": [f"{i.check}: {i.message}" for i in issues],
        **report.to_json(),
    }
    return result, [t for t in templates if t.id in kept]


def with_templates(result: Json, judged: Judged) -> Json:
    """The ``paths`` result with each kept path's semantic template and verdict; only paths
    whose template the judge passed are ``kept_paths`` (the task skeletons)."""
    passed = [(t, v) for t, v in judged if v.passed]
    return {
        **result,
        "templates_judged": len(judged),
        "templates_passed": len(passed),
        "judge": [{"template": t.id, **v.to_json()} for t, v in judged],
        "kept_templates": [t.id for t, _ in passed],
        "kept_paths": [
            {
                "template": t.id,
                "tools": list(t.tools),
                "motivation": t.motivation,
                "text": t.text,
                "author": t.author,
            }
            for t, _ in passed
        ],
    }


async def model_judged(
    asker: Any, spec: DomainSpec, skeletons: list[TaskTemplate], ledger: CostLedger
) -> Judged:
    """Each skeleton's template written by the model, then scored by the model judge (LLM
    mode; ``asker`` is the DAG's :class:`~veritask.blueprint._dag_stages.Asker`)."""
    out: Judged = []
    for skeleton in skeletons:
        parse = template_parser(spec, skeleton)
        template = await asker.ask(template_prompt(spec, skeleton), parse, "templates", ledger)
        prompt = judge_prompt(spec, skeleton, template)
        out.append((template, await asker.ask(prompt, judge_parser, "judge", ledger)))
    return out


def paths_work(spec_path: Path, max_paths: int, seed: int) -> Json:
    """:func:`executed_paths`, each kept path's template written by the grammar and judged by
    the rubric (offline)."""
    result, kept = executed_paths(spec_path, max_paths, seed)
    spec: DomainSpec = load_spec(spec_path)
    return with_templates(result, judged_templates(spec, kept, seed))


def tasks_work(
    maker: TaskMaker | None, spec_path: Path, paths: list[Json], n: int, out: Path
) -> Json:
    """Make ``n`` tasks from one service's kept ``paths`` with ``maker`` (``skipped``
    without one)."""
    if maker is None or n == 0:
        return {"status": "skipped", "tasks": 0}
    counts = maker(spec_path, paths, n, 0, out)
    return {"status": "generated", **counts}


def paths_section(units: list[Json]) -> Json:
    """The ``paths`` stage in the report: summed over services, the failure classes as
    scalars (``policy_violation``, ``invalid_entity_data``, ``spec_bug``)."""
    failures: dict[str, int] = {}
    for unit in units:
        for kind, count in unit["failures"].items():
            failures[kind] = failures.get(kind, 0) + count
    grounded = sum(u["grounded"] for u in units)
    kept = sum(u["kept"] for u in units)
    return {
        "services": len(units),
        "topology_failures": sum(len(u["checks"]) for u in units),
        "soft_edges": sum(int(u.get("soft_edges", 0)) for u in units),
        "templates_judged": sum(int(u.get("templates_judged", 0)) for u in units),
        "templates_passed": sum(int(u.get("templates_passed", 0)) for u in units),
        "paths": sum(u["paths"] for u in units),
        "grounded": grounded,
        "kept": kept,
        "filtered": grounded - kept,
        "kept_share": round(kept / grounded, 4) if grounded else 0.0,
        **{kind: failures.get(kind, 0) for kind in FAILURE_KINDS},
    }


def tasks_section(units: list[Json]) -> Json:
    """The ``tasks`` stage in the report: summed over services, with the share of tasks
    instantiated from kept paths (the rest came from the requested fallback)."""
    sums = {
        key: sum(int(u.get(key, 0)) for u in units)
        for key in ("tasks", "from_paths", "fallback", "certified", "grounded", "spoiler_free")
    }
    share = round(sums["from_paths"] / sums["tasks"], 4) if sums["tasks"] else 0.0
    return sums | {
        "from_paths_share": share,
        "skipped": sum(1 for u in units if u["status"] == "skipped"),
    }
