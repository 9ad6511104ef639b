"""The prompts of the blueprint DAG (AgentSkiller Steps 1-4 and the Check-Fix-Verify rounds).

Each prompt opens with a ``Task: <stage> | Key: <unit>`` line, so a recorded or scripted answer
can be told apart by what it answers, and ends with the JSON shape the answer must take.
"""

from __future__ import annotations

import json
from typing import Any

from veritask.blueprint._dag_schema import Blueprint, Entity

SYSTEM = (
    "You design realistic, policy-governed business services for training tool-using agents. "
    "Answer with one JSON value in a ```json block and nothing else."
)


def _messages(task: str, key: str, body: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Task: {task} | Key: {key}\n\n{body}"},
    ]


def domains_prompt(topic: str, count: int) -> list[dict[str, Any]]:
    """Step 1: domains derived from one seed topic."""
    body = (
        f"Seed topic: {topic}\n"
        f"Propose {count} service domains derived from it by horizontal association (parallel "
        "sectors), diagonal association (intersections with other industries), temporal "
        "derivation (lifecycle steps), hierarchical refinement and agent-centric mapping "
        "(operational roles). Labels are snake_case, 1-3 words, neither too broad "
        '("management") nor hyper-specific.\n'
        'Answer: {"domains": ["label", ...]}'
    )
    return _messages("domains", topic, body)


def entities_prompt(domains: list[str]) -> list[dict[str, Any]]:
    """Step 2: domain-invariant entities of all domains at once."""
    body = (
        f"Domains: {json.dumps(domains)}\n"
        "Extract the domain-invariant entities of these domains: specific enough to hold "
        "attributes, general enough to serve related domains, existing independently "
        "(relationships such as enrollments are not entities), stable in meaning. Mark human "
        "actors with is_person. Give each entity typed attributes across physical, lifecycle, "
        "state and location dimensions: type is string, int, number (with min and max), bool, "
        "or enum (with values). Do not list identifiers.\n"
        'Answer: {"entities": [{"name": "...", "description": "...", "is_person": false, '
        '"attributes": [{"name": "...", "type": "int", "min": 0, "max": 10}]}]}'
    )
    return _messages("entities", "all", body)


def relation_prompt(person: Entity, batch: list[Entity], key: str) -> list[dict[str, Any]]:
    """Step 3: which candidates a person plausibly operates on or relates to."""
    lines = "\n".join(f"- {e.name}: {e.description}" for e in batch)
    body = (
        f"Person: {person.name} ({person.description})\n"
        f"Candidates:\n{lines}\n"
        "Which candidates does this person operate on or relate to in some plausible domain "
        "scenario? Use the candidate names as given.\n"
        'Answer: {"related": ["name", ...]}'
    )
    return _messages("graph", key, body)


def _schema(entity: Entity) -> dict[str, Any]:
    return {
        "name": entity.name,
        "is_person": entity.is_person,
        "attributes": [a.model_dump(exclude_none=True) for a in entity.attributes],
    }


def outline_prompt(person: Entity, neighbours: list[Entity], count: int) -> list[dict[str, Any]]:
    """Step 4, stage 1: use-case outlines around a person."""
    body = (
        f"Core entity (the user of the service): {json.dumps(_schema(person))}\n"
        f"Its neighbours: {json.dumps([n.name for n in neighbours])}\n"
        f"Propose {count} service outline(s): a snake_case service name, a description and 1-3 "
        "peripheral entities chosen among the neighbours.\n"
        'Answer: {"outlines": [{"name": "...", "description": "...", "peripherals": ["..."]}]}'
    )
    return _messages("outlines", person.name, body)


BLUEPRINT_SHAPE = (
    '{"name": "...", "description": "...", "core": "<core>", "peripherals": ["..."], '
    '"relationships": [{"name": "...", "description": "...", "links": ["<peripheral>"], '
    '"attributes": [{"name": "...", "type": "int", "min": 1, "max": 10}], '
    '"statuses": ["ACTIVE", "CLOSED"], "final": ["CLOSED"]}], '
    '"functions": [{"name": "...", "kind": "create|update|lookup", "relationship": "...", '
    '"parameters": ["<entity>_id", "..."], "returns": "..."}], '
    '"policies": [{"id": "UPPER_ID", "kind": "requires", "function": "...", "entity": "...", '
    '"column": "...", "value": "..."}, {"id": "...", "kind": "quota", "function": "...", '
    '"limit": 3}, {"id": "...", "kind": "max_value", "function": "...", "column": "...", '
    '"limit": 5}]}'
)


def blueprint_prompt(
    outline: dict[str, Any], person: Entity, peripherals: list[Entity]
) -> list[dict[str, Any]]:
    """Step 4, stage 2: the full blueprint of one outline."""
    body = (
        f"Outline: {json.dumps(outline)}\n"
        f"Core entity: {json.dumps(_schema(person))}\n"
        f"Peripheral entities: {json.dumps([_schema(p) for p in peripherals])}\n"
        "Write the service blueprint. Star schema: every relationship belongs to the core "
        "entity and links only peripherals, never other relationships; ids are named "
        "<entity>_id. Every relationship has a create function; statuses start with a "
        "non-final one. Policies may name only the entities, columns and values above: "
        "requires (a referenced row's bool/enum column must equal a value), quota (open rows "
        "per core entity), max_value (a number column's cap).\n"
        f"Answer: {BLUEPRINT_SHAPE}"
    )
    return _messages("blueprints", str(outline.get("name", "")), body)


def fix_prompt(bp: Blueprint, problems: list[str], round_no: int) -> list[dict[str, Any]]:
    """A Check-Fix-Verify round: the blueprint, what compiling and checking it found."""
    body = (
        f"Round {round_no}. This service blueprint did not compile into a working service:\n"
        f"{json.dumps(bp.model_dump(exclude_none=True))}\n"
        "Problems:\n" + "\n".join(f"- {p}" for p in problems) + "\n"
        "Fix the blueprint so every policy names only entities, columns and values it defines, "
        f"and answer with the whole corrected blueprint.\nAnswer: {BLUEPRINT_SHAPE}"
    )
    return _messages("fix", f"{bp.name}#{round_no}", body)
