"""The work of each DAG stage: what its units are and what one unit does.

Every function here is a pure function of the stage's input (the previous stage's summary) and
the model's answers; the runner (``_dag``) owns artifacts, manifests and resume.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import networkx as nx

from veritask.blueprint._dag_blueprint import blueprint_parser, canonical
from veritask.blueprint._dag_compile import check_spec, compile_service
from veritask.blueprint._dag_populate import populate, row_problems, summarize
from veritask.blueprint._dag_prompts import (
    blueprint_prompt,
    domains_prompt,
    entities_prompt,
    fix_prompt,
    outline_prompt,
    relation_prompt,
)
from veritask.blueprint._dag_schema import (
    Blueprint,
    DomainAnswer,
    Entity,
    EntityAnswer,
    OutlineAnswer,
    RelationAnswer,
    dedupe_domains,
    sanitize_entities,
    snake,
)
from veritask.model import CostLedger, ModelProvider, StructuredOutputError, ask, parse_model
from veritask.pipeline import Unit
from veritask.policy import DomainSpec, build_tools

Json = dict[str, Any]


class Asker:
    """Structured questions to one provider, charged to a ledger per unit."""

    def __init__(self, provider: ModelProvider, repairs: int) -> None:
        self.provider = provider
        self.repairs = repairs

    async def ask(self, messages: list[Json], parse: Any, module: str, ledger: CostLedger) -> Any:
        """``veritask.model.ask`` with the DAG's repair budget."""
        return await ask(
            self.provider, messages, parse, module=module, ledger=ledger, max_repairs=self.repairs
        )


def entities_of(summary: Mapping[str, Any]) -> dict[str, Entity]:
    """The sanitized entities of the ``entities`` stage summary, by name."""
    return {e["name"]: Entity.model_validate(e) for e in summary["entities"]}


# --- Step 1: domain expansion ---------------------------------------------------------------


def domain_units(topics: Sequence[str]) -> list[Unit[Json]]:
    """One unit per seed topic."""
    return [Unit(f"topic-{i}", {"topic": t}) for i, t in enumerate(topics)]


async def domain_work(unit: Unit[Json], asker: Asker, count: int, ledger: CostLedger) -> Json:
    """Ask for ``count`` domains derived from the unit's topic."""
    answer = await asker.ask(
        domains_prompt(unit.params["topic"], count), parse_model(DomainAnswer), "domains", ledger
    )
    return {"topic": unit.params["topic"], "proposed": answer.domains}


def domain_summary(results: Sequence[Json], most: int) -> Json:
    """All proposals deduplicated by meaning, in unit order, capped at ``most``."""
    labels = [label for r in results for label in r["proposed"]]
    kept, dropped = dedupe_domains(labels)
    dropped += [{"label": k, "reason": f"over the cap of {most} domains"} for k in kept[most:]]
    return {
        "topics": [r["topic"] for r in results],
        "proposed": len(labels),
        "domains": kept[:most],
        "dropped": dropped,
    }


# --- Step 2: entity extraction --------------------------------------------------------------


def _entity_answer(text: str) -> EntityAnswer:
    answer = parse_model(EntityAnswer)(text)
    if not any(e.is_person for e in answer.entities):
        raise ValueError("no entity has is_person: true; the services need a human actor")
    return answer


async def entity_work(domains: list[str], asker: Asker, ledger: CostLedger) -> Json:
    """One global extraction over all domains, then the deterministic sanitization."""
    answer = await asker.ask(entities_prompt(domains), _entity_answer, "entities", ledger)
    kept, notes = sanitize_entities(answer.entities)
    return {
        "proposed": len(answer.entities),
        "entities": [e.model_dump() for e in kept],
        "dropped": notes,
    }


# --- Step 3: person-centric entity graph ----------------------------------------------------


def graph_units(entities: Mapping[str, Entity], batch: int) -> list[Unit[Json]]:
    """``(person, batch of candidates)`` units: every other entity, ``batch`` at a time."""
    units: list[Unit[Json]] = []
    for person in (e for e in entities.values() if e.is_person):
        others = [n for n in entities if n != person.name]
        for k in range(0, len(others), batch):
            chunk = others[k : k + batch]
            units.append(
                Unit(f"{person.name}.b{k // batch}", {"person": person.name, "batch": chunk})
            )
    return units


def _relation_parser(batch: list[str]) -> Any:
    def parse(text: str) -> list[str]:
        answer = parse_model(RelationAnswer)(text)
        related = [canonical(name, batch) for name in answer.related]
        unknown = [n for n in related if n not in batch]
        if unknown:
            raise ValueError(f"not candidates: {', '.join(unknown)}; choose among {batch}")
        return list(dict.fromkeys(related))

    return parse


async def graph_work(
    unit: Unit[Json], entities: Mapping[str, Entity], asker: Asker, ledger: CostLedger
) -> Json:
    """Which of the batch the person relates to."""
    batch = list(unit.params["batch"])
    person = entities[unit.params["person"]]
    prompt = relation_prompt(person, [entities[n] for n in batch], unit.id)
    related = await asker.ask(prompt, _relation_parser(batch), "graph", ledger)
    return {"person": person.name, "batch": batch, "related": related}


def graph_summary(entities: Mapping[str, Entity], results: Sequence[Json]) -> Json:
    """The entity graph as node-link JSON (networkx), edges person -> entity."""
    graph = nx.DiGraph()
    for entity in entities.values():
        graph.add_node(entity.name, is_person=entity.is_person)
    for result in results:
        for target in result["related"]:
            graph.add_edge(result["person"], target)
    return {
        "nodes": graph.number_of_nodes(),
        "edges": graph.number_of_edges(),
        "graph": nx.node_link_data(graph, edges="edges"),
    }


def neighbours(summary: Mapping[str, Any]) -> dict[str, list[str]]:
    """``person -> related entities`` from the graph summary (graph order)."""
    graph = nx.node_link_graph(summary["graph"], edges="edges")
    return {
        str(n): [str(t) for t in graph.successors(n)]
        for n, data in graph.nodes(data=True)
        if data.get("is_person") and graph.out_degree(n) > 0
    }


# --- Step 4: outlines and blueprints --------------------------------------------------------


def _outline_parser(allowed: list[str], count: int) -> Any:
    def parse(text: str) -> list[Json]:
        answer = parse_model(OutlineAnswer)(text)
        out: list[Json] = []
        for outline in answer.outlines[:count]:
            peripherals = list(dict.fromkeys(canonical(p, allowed) for p in outline.peripherals))
            bad = [p for p in peripherals if p not in allowed]
            if bad or not 1 <= len(peripherals) <= 3 or not snake(outline.name):
                raise ValueError(
                    f"outline {outline.name!r}: 1-3 peripherals among {allowed} (got {peripherals})"
                )
            out.append(
                {
                    "name": snake(outline.name),
                    "description": outline.description,
                    "peripherals": peripherals,
                }
            )
        if not out:
            raise ValueError("no outline")
        return out

    return parse


async def outline_work(
    unit: Unit[Json], entities: Mapping[str, Entity], asker: Asker, count: int, ledger: CostLedger
) -> Json:
    """Outlines around one person, among its graph neighbours."""
    allowed = list(unit.params["neighbours"])
    prompt = outline_prompt(entities[unit.id], [entities[n] for n in allowed], count)
    outlines = await asker.ask(prompt, _outline_parser(allowed, count), "outlines", ledger)
    return {"person": unit.id, "outlines": outlines}


async def blueprint_work(
    unit: Unit[Json], entities: Mapping[str, Entity], asker: Asker, ledger: CostLedger
) -> Json:
    """The full blueprint of one outline: accepted after the feedback loop, or rejected."""
    outline, person = unit.params["outline"], unit.params["person"]
    prompt = blueprint_prompt(
        outline, entities[person], [entities[p] for p in outline["peripherals"]]
    )
    parse = blueprint_parser(list(entities.values()), person, outline["peripherals"])
    try:
        bp = await asker.ask(prompt, parse, "blueprints", ledger)
    except StructuredOutputError as exc:
        return {"status": "rejected", "outline": outline, "reasons": exc.reasons}
    return {"status": "accepted", "outline": outline, "blueprint": bp.model_dump()}


# --- Steps 5-8: compilation with Check-Fix-Verify -------------------------------------------


async def compile_work(
    unit: Unit[Json],
    entities: Mapping[str, Entity],
    asker: Asker,
    rounds: int,
    ledger: CostLedger,
) -> Json:
    """Compile, check, and send the problems back to the model, at most ``rounds`` rounds."""
    bp = Blueprint.model_validate(unit.params["blueprint"]).model_copy(update={"name": unit.id})
    parse = blueprint_parser(list(entities.values()), bp.core, bp.peripherals)
    report: list[Json] = []
    for round_no in range(1, rounds + 1):
        data, spec, problems = compile_service(bp, entities)
        report.append({"round": round_no, "problems": problems})
        if spec is not None:
            return {
                "status": "compiled",
                "rounds": report,
                "blueprint": bp.model_dump(),
                "spec": data,
            }
        if round_no == rounds:
            break
        try:
            fixed = await asker.ask(fix_prompt(bp, problems, round_no), parse, "fix", ledger)
        except StructuredOutputError as exc:
            report.append({"round": round_no + 1, "problems": exc.reasons})
            break
        bp = fixed.model_copy(update={"name": unit.id})
    return {
        "status": "rejected",
        "rounds": report,
        "blueprint": bp.model_dump(),
        "reasons": report[-1]["problems"],
    }


# --- Step 6: seed rows ----------------------------------------------------------------------


def seed_work(
    params: Mapping[str, Any], entities: Mapping[str, Entity], persons: int, resources: int
) -> tuple[Json, DomainSpec | None]:
    """Populate a compiled service and check the rows; returns the result and the final spec."""
    bp = Blueprint.model_validate(params["blueprint"])
    data = params["spec"]
    rows = populate(bp, entities, data["seed"], persons, resources)
    problems = row_problems(bp, rows)
    spec, checked = check_spec({**data, "seed": rows})
    problems += checked
    result: Json = {
        "service": bp.name,
        "rows": {t: len(r) for t, r in rows.items()},
        "summary": summarize(rows),
    }
    if spec is None or problems:
        return {**result, "status": "rejected", "reasons": problems}, None
    counts = {
        "tables": len(spec.tables),
        "rules": len(spec.rules),
        "effects": len(spec.effects),
        "tools": len(build_tools(spec)),
        "spec_hash": spec.spec_hash(),
    }
    return {**result, **counts, "status": "seeded"}, spec
