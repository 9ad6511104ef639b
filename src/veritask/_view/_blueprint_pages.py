"""Blueprint run pages: the stage report, blueprints accepted and rejected with their reasons,
the entity graph, and per compiled service its spec, rows and tool graph as a picture.

The figures come from ``veritask.blueprint`` (``dag_status``, ``stage_report``, the tool graph
functions); the blueprints themselves and the entity graph are read from the stage summaries
the run writes (``OUT/<stage>.json``), and each service's spec from the file the report names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from markupsafe import Markup

from veritask._util import read_json
from veritask._view._charts import bars
from veritask._view._graph_svg import graph_svg
from veritask._view._pages import Page, Query, slug
from veritask.blueprint import (
    STAGES,
    build_tool_graph,
    check_tool_graph,
    dag_status,
    enumerate_paths,
    graph_to_json,
    stage_report,
    task_template,
)
from veritask.blueprint._semantic import grammar_template
from veritask.policy import DomainSpec, SpecError, load_spec

BLUEPRINT_STATUSES = ("accepted", "rejected")
_TEMPLATES = 12


def is_blueprint_run(path: Path) -> bool:
    """True when ``path`` is the output directory of ``veritask blueprint run``."""
    return any((path / "stages" / s / "run-manifest.json").is_file() for s in STAGES)


def _summary(root: Path, stage: str) -> dict[str, Any]:
    path = root / f"{stage}.json"
    if not path.is_file():
        return {}
    data: dict[str, Any] = read_json(path)
    return data


def blueprint_rows(root: Path) -> list[dict[str, Any]]:
    """One row per blueprint unit: accepted (with the blueprint) or rejected (with reasons)."""
    rows = []
    for unit in _summary(root, "blueprints").get("units", []):
        blueprint = unit.get("blueprint") or {}
        rows.append(
            {
                "unit": unit["unit"],
                "status": unit["status"],
                "name": blueprint.get("name", unit["unit"].partition(".")[2]),
                "core": blueprint.get("core", unit["unit"].partition(".")[0]),
                "peripherals": blueprint.get("peripherals", []),
                "functions": [f["name"] for f in blueprint.get("functions", [])],
                "description": blueprint.get("description", ""),
                "reasons": list(dict.fromkeys(unit.get("reasons", []))),
            }
        )
    return rows


def _edge_kind(data: dict[str, Any]) -> str:
    if "AUTHENTICATION" in data.get("rules", []):
        return "auth"
    if data.get("kinds") == ["storyline"]:
        return "storyline"  # a soft edge: a plausible next step, no dependency
    return "information" if "information" in data.get("kinds", []) else "state"


def tool_graph_view(spec: DomainSpec) -> dict[str, Any]:
    """A spec's tool graph: the picture, its edges, the topology issues and task templates."""
    graph = build_tool_graph(spec)
    data = graph_to_json(graph)
    edges = [(e["source"], e["target"], _edge_kind(e)) for e in data["edges"]]
    skeletons = [task_template(spec, graph, p) for p in enumerate_paths(graph, limit=_TEMPLATES)]
    templates = [grammar_template(spec, t, seed=0) for t in skeletons]
    return {
        "svg": graph_svg(
            [n["id"] for n in data["nodes"]], edges, label=f"tool graph of {spec.name}"
        ),
        "edges": data["edges"],
        "nodes": data["nodes"],
        "issues": check_tool_graph(graph),
        "templates": templates,
        "source": data["graph"].get("source"),
    }


def entity_graph(root: Path) -> Markup | None:
    """The entity graph of the graph stage as a picture (None before that stage is done)."""
    graph = _summary(root, "graph").get("graph")
    if not graph:
        return None
    nodes = [str(n["id"]) for n in graph["nodes"]]
    edges = [(str(e["source"]), str(e["target"]), "related") for e in graph["edges"]]
    return graph_svg(nodes, edges, label="entity graph")


class BlueprintPages:
    """The pages of one blueprint run directory (``veritask blueprint run --out DIR``)."""

    kind = "blueprint"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.name = root.resolve().name
        self.status = dag_status(root)
        self.report = stage_report(root)
        self.services = {slug(s["service"]): s for s in self.report["services"]}
        self.nav = [("index.html", "stages"), ("blueprints.html", "blueprints")]

    def paths(self) -> list[str]:
        """The stage report, the blueprint table and one page per service."""
        return ["index.html", "blueprints.html", *[f"service/{s}.html" for s in self.services]]

    def page(self, path: str, query: Query) -> Page | None:
        """The page at ``path``."""
        if path == "index.html":
            return self.index_page()
        if path == "blueprints.html":
            return self.blueprints_page(query)
        name = path.removeprefix("service/").removesuffix(".html")
        if path.startswith("service/") and name in self.services:
            return self.service_page(name)
        return None

    def index_page(self) -> Page:
        """Progress and counts per stage, dropped domains and entities, services."""
        requests = [(s, float(n)) for s, n in self.report["model_requests"].items()]
        sections = {
            stage: {k: v for k, v in section.items() if not isinstance(v, list)}
            for stage, section in self.report["stages"].items()
        }
        return Page(
            "blueprint_index.html",
            "stages",
            {
                "status": self.status,
                "sections": sections,
                "report": self.report,
                "requests": bars(requests),
                "dropped_domains": _summary(self.root, "domains").get("dropped", []),
                "dropped_entities": _summary(self.root, "entities").get("dropped", []),
                "entity_graph": entity_graph(self.root),
                "services": [(s, svc) for s, svc in self.services.items()],
            },
        )

    def blueprints_page(self, query: Query) -> Page:
        """Every blueprint, accepted or rejected with reasons (``status`` filters); compile
        rejections."""
        rows = blueprint_rows(self.root)
        wanted = query.get("status", "")
        compile_units = _summary(self.root, "compile").get("units", [])
        return Page(
            "blueprint_blueprints.html",
            "blueprints",
            {
                "rows": [r for r in rows if not wanted or r["status"] == wanted],
                "total": len(rows),
                "statuses": BLUEPRINT_STATUSES,
                "query": dict(query),
                "compiled": compile_units,
                "services": {svc["service"]: s for s, svc in self.services.items()},
            },
        )

    def service_page(self, name: str) -> Page:
        """One compiled service: its spec in short, seeded rows, tool graph and templates."""
        service = self.services[name]
        data: dict[str, Any] = {"service": service, "spec": None, "error": None}
        try:
            spec = load_spec(self.root / service["spec_path"])
        except (OSError, SpecError) as exc:
            data["error"] = str(exc)
        else:
            data["spec"] = spec
            data["graph"] = tool_graph_view(spec)
        return Page("blueprint_service.html", service["service"], data)
