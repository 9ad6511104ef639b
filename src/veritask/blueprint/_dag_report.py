"""What a DAG run holds: per-stage progress (``status``) and the counts of AgentSkiller Section 4
(``stage_report``): domains, entities, graph, blueprints accepted and rejected with reasons,
services compiled and seeded."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from veritask._util import read_json
from veritask.blueprint._dag import STAGES
from veritask.blueprint._dag_paths import paths_section, tasks_section
from veritask.pipeline import RunManifest

Json = dict[str, Any]


def _load(path: Path) -> Json:
    data: Json = read_json(path)
    return data


def dag_status(out: str | Path) -> list[Json]:
    """Per stage: ``complete``, ``running`` (units done of units) or ``waiting``."""
    root = Path(out)
    rows: list[Json] = []
    for stage in STAGES:
        manifest = RunManifest.read(root / "stages" / stage / "run-manifest.json")
        if manifest is None:
            rows.append({"stage": stage, "state": "waiting", "done": 0, "units": None})
            continue
        folder = root / "stages" / stage
        done = sum(1 for u in manifest.units if (folder / f"{u}.json").exists())
        complete = (root / f"{stage}.json").exists()
        rows.append(
            {
                "stage": stage,
                "state": "complete" if complete else "running",
                "done": done,
                "units": len(manifest.units),
            }
        )
    return rows


def _requests(summary: Json) -> int:
    return sum(int(u.get("model_requests", 0)) for u in summary["units"])


def _reasons(units: list[Json], status: str) -> list[Json]:
    return [
        {"unit": u["unit"], "reasons": u.get("reasons", [])} for u in units if u["status"] == status
    ]


def _section(stage: str, s: Json) -> Json:
    units = s["units"]
    if stage == "domains":
        return {
            "topics": len(s["topics"]),
            "proposed": s["proposed"],
            "kept": len(s["domains"]),
            "dropped": len(s["dropped"]),
        }
    if stage == "entities":
        persons = sum(1 for e in s["entities"] if e["is_person"])
        return {
            "proposed": units[0]["proposed"],
            "kept": len(s["entities"]),
            "persons": persons,
            "resources": len(s["entities"]) - persons,
            "dropped": s["dropped"],
        }
    if stage == "graph":
        return {"batches": len(units), "nodes": s["nodes"], "edges": s["edges"]}
    if stage == "outlines":
        return {"persons": len(units), "outlines": sum(len(u["outlines"]) for u in units)}
    if stage == "blueprints":
        counts = Counter(u["status"] for u in units)
        return {
            "accepted": counts["accepted"],
            "rejected": counts["rejected"],
            "rejections": _reasons(units, "rejected"),
        }
    if stage == "compile":
        counts = Counter(u["status"] for u in units)
        fixed = sum(1 for u in units if u["status"] == "compiled" and len(u["rounds"]) > 1)
        return {
            "compiled": counts["compiled"],
            "rejected": counts["rejected"],
            "fixed_by_rounds": fixed,
            "rejections": _reasons(units, "rejected"),
        }
    if stage == "paths":
        return paths_section(units)
    if stage == "tasks":
        return tasks_section(units)
    counts = Counter(u["status"] for u in units)
    return {
        "seeded": counts["seeded"],
        "rejected": counts["rejected"],
        "rows": sum(sum(u["rows"].values()) for u in units),
    }


def _service(unit: Json) -> Json:
    return {
        key: unit[key]
        for key in (
            "service",
            "tables",
            "rules",
            "effects",
            "tools",
            "rows",
            "spec_path",
            "spec_hash",
        )
    }


def stage_report(out: str | Path) -> Json:
    """The counts per complete stage, the services and the model requests per stage."""
    root = Path(out)
    report: Json = {"counts": {}, "stages": {}, "services": [], "model_requests": {}}
    for stage in STAGES:
        path = root / f"{stage}.json"
        if not path.exists():
            break
        summary = _load(path)
        report["stages"][stage] = _section(stage, summary)
        report["model_requests"][stage] = _requests(summary)
        if stage == "seed":
            report["services"] = [_service(u) for u in summary["units"] if u["status"] == "seeded"]
    report["counts"] = section4(report)
    return report


def _get(report: Json, stage: str, key: str) -> Any:
    return report["stages"].get(stage, {}).get(key)


def section4(report: Json) -> Json:
    """The counts per stage in the layout of AgentSkiller's Section 4 (None: not reached)."""
    return {
        "domains": _get(report, "domains", "kept"),
        "entities": _get(report, "entities", "kept"),
        "blueprints_accepted": _get(report, "blueprints", "accepted"),
        "blueprints_rejected": _get(report, "blueprints", "rejected"),
        "services": _get(report, "seed", "seeded"),
        "paths": _get(report, "paths", "paths"),
        "grounded": _get(report, "paths", "grounded"),
        "filtered": _get(report, "paths", "filtered"),
        "kept": _get(report, "paths", "kept"),
        "tasks": _get(report, "tasks", "tasks"),
    }


def report_lines(report: Json) -> list[str]:
    """The report as text: the Section 4 counts, then each stage in the paper's order."""
    counts = report.get("counts") or section4(report)
    lines = ["counts      " + ", ".join(f"{k} {v}" for k, v in counts.items() if v is not None)]
    for stage, section in report["stages"].items():
        shown = {k: v for k, v in section.items() if not isinstance(v, list)}
        lines.append(f"{stage:<11} " + ", ".join(f"{k} {v}" for k, v in shown.items()))
        for item in section.get("rejections", []):
            lines.append(
                f"  rejected {item['unit']}: {'; '.join(dict.fromkeys(item['reasons']))[:300]}"
            )
    for svc in report["services"]:
        lines.append(
            f"service {svc['service']}: {svc['tables']} tables, {svc['rules']} rules, "
            f"{svc['effects']} effects, {svc['tools']} tools -> {svc['spec_path']}"
        )
    total = sum(report["model_requests"].values())
    lines.append(
        f"model requests {total} ({', '.join(f'{k} {v}' for k, v in report['model_requests'].items())})"
    )
    return lines
