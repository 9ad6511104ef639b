"""What the blueprint DAG asks a model for, and the deterministic clean-up of the answers.

Every model answer of the DAG is one of the pydantic models below, parsed through
``veritask.model.ask`` (extract, validate, repair, reject). What a model cannot be trusted with
is then done here, deterministically: snake_case names, domain labels deduplicated by meaning
(normalized tokens and a string similarity, no embeddings), entity ids renamed ``<entity>_id``
and session-like entities dropped (AgentSkiller Sections 3.2-3.3).
"""

from __future__ import annotations

import difflib
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")
"""A word: an acronym before a capitalised word (``HTTP`` in ``HTTPServer``), a capitalised or
lower-case word, an all-caps word (``BOOKING``), or digits."""
_STOP = frozenset({"and", "of", "the", "for", "management", "service", "services", "system"})
_SESSION = frozenset({"session", "sessions", "login", "token", "conversation", "chat"})
RESERVED_COLUMNS = frozenset({"id", "limit", "offset", "order_by", "descending", "status"})
"""Attribute names the compiled tables or the query tools already use."""

SIMILARITY = 0.88
"""Two labels whose normalized forms are at least this similar (difflib ratio) are one domain."""


class _Answer(BaseModel):
    """A model answer: unknown fields are ignored, not refused (models add commentary)."""

    model_config = ConfigDict(extra="ignore")


class Attribute(_Answer):
    """A typed attribute; numbers carry their range, enums their values."""

    name: str
    type: Literal["string", "int", "number", "bool", "enum"]
    description: str = ""
    min: float | None = None
    max: float | None = None
    values: list[str] | None = None


class Entity(_Answer):
    """A domain-invariant entity (Section 3.3)."""

    name: str
    description: str = ""
    is_person: bool = False
    attributes: list[Attribute] = Field(default_factory=list)


class DomainAnswer(_Answer):
    """Step 1: domains derived from one seed topic."""

    domains: list[str]


class EntityAnswer(_Answer):
    """Step 2: the entities of all domains, in one answer."""

    entities: list[Entity]


class RelationAnswer(_Answer):
    """Step 3: which candidates of one batch a person operates on."""

    related: list[str]


class Outline(_Answer):
    """Step 4, stage 1: a use case around one person and some of its neighbours."""

    name: str
    description: str = ""
    peripherals: list[str]


class OutlineAnswer(_Answer):
    """Step 4, stage 1: outlines for one person."""

    outlines: list[Outline]


class Relationship(_Answer):
    """A table of the star schema: the core entity and linked peripherals, with attributes and a
    status lifecycle (``final`` statuses are terminal)."""

    name: str
    description: str = ""
    links: list[str] = Field(default_factory=list)
    attributes: list[Attribute] = Field(default_factory=list)
    statuses: list[str] = Field(default_factory=lambda: ["ACTIVE", "CLOSED"])
    final: list[str] = Field(default_factory=lambda: ["CLOSED"])


class Function(_Answer):
    """A tool of the service: ``create`` inserts a relationship row, ``update`` changes its
    status, ``lookup`` reads."""

    name: str
    description: str = ""
    kind: Literal["create", "update", "lookup"]
    relationship: str
    parameters: list[str] = Field(default_factory=list)
    returns: str = ""
    confirm: bool = False
    """A create or update the user must confirm: its tool follows the confirmation pattern
    (preview, then commit with the preview's token; the spec's ``confirm_writes``)."""


class Policy(_Answer):
    """A business rule in the closed vocabulary the compiler knows.

    - ``requires``: a write of ``function`` needs the referenced ``entity`` row's ``column``
      to equal ``value``;
    - ``quota``: the core entity may hold at most ``limit`` non-final rows of the function's
      relationship;
    - ``max_value``: the relationship's ``column`` may not exceed ``limit``.
    """

    id: str
    kind: Literal["requires", "quota", "max_value"]
    function: str
    entity: str | None = None
    column: str | None = None
    value: str | int | None = None
    limit: int | None = None
    message: str = ""


class Blueprint(_Answer):
    """Step 4, stage 2: the full service blueprint <core, peripherals, relations, functions>."""

    name: str
    description: str = ""
    core: str
    peripherals: list[str]
    relationships: list[Relationship]
    functions: list[Function]
    policies: list[Policy] = Field(default_factory=list)


def snake(text: str) -> str:
    """``LabEquipment``, ``lab equipment``, ``Lab-Equipment`` -> ``lab_equipment``;
    ``BOOKING_QUOTA`` -> ``booking_quota``; ``HTTPServer`` -> ``http_server``."""
    words = _WORD.findall(text.replace("_", " "))
    return "_".join(w.lower() for w in words)


def rule_id(text: str) -> str:
    """An UPPER_SNAKE rule id (a leading letter guaranteed)."""
    out = snake(text).upper()
    return out if out[:1].isalpha() else f"R_{out}"


def _singular(word: str) -> str:
    if len(word) > 3 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def label_tokens(label: str) -> tuple[str, ...]:
    """The meaning-bearing tokens of a label: snake words, singular, stop words dropped, sorted."""
    words = [_singular(w) for w in snake(label).split("_") if w]
    kept = [w for w in words if w not in _STOP] or words
    return tuple(sorted(kept))


def same_meaning(a: str, b: str) -> bool:
    """True when two labels name the same thing: equal tokens, one token set inside the other
    with at most one extra word, or a near-equal spelling."""
    ta, tb = label_tokens(a), label_tokens(b)
    if ta == tb:
        return True
    small, large = sorted((set(ta), set(tb)), key=len)
    if small and small <= large and len(large) - len(small) <= 1 and len(small) >= 2:
        return True
    ratio = difflib.SequenceMatcher(None, " ".join(ta), " ".join(tb)).ratio()
    return ratio >= SIMILARITY


def domain_problem(label: str) -> str | None:
    """Why a domain label is not usable (format and granularity, Section 3.2.3), or None."""
    name = snake(label)
    if not name:
        return "empty label"
    words = name.split("_")
    if len(words) > 3:
        return f"{name}: more than 3 words"
    if set(words) <= _STOP:
        return f"{name}: too broad"
    return None


def dedupe_domains(labels: list[str]) -> tuple[list[str], list[dict[str, str]]]:
    """Keep the first of every group of labels with the same meaning.

    Returns:
        The kept labels (snake_case, in order) and one ``{"label", "reason"}`` per dropped one.
    """
    kept: list[str] = []
    dropped: list[dict[str, str]] = []
    for label in labels:
        problem = domain_problem(label)
        twin = next((k for k in kept if same_meaning(k, label)), None)
        if problem is not None:
            dropped.append({"label": label, "reason": problem})
        elif twin is not None:
            dropped.append({"label": label, "reason": f"same meaning as {twin}"})
        else:
            kept.append(snake(label))
    return kept, dropped


def _is_session(name: str) -> bool:
    return bool(set(name.split("_")) & _SESSION)


def _own_id(entity: str, attribute: str) -> bool:
    """True for attributes that are the entity's own identifier under any spelling."""
    flat = attribute.replace("_", "")
    return attribute == "id" or flat in {entity.replace("_", "") + "id", "uuid", "pk"}


def sanitize_attribute(attr: Attribute) -> Attribute | str:
    """A cleaned attribute, or why it is dropped."""
    name = snake(attr.name)
    if not name or name in RESERVED_COLUMNS or name.endswith(("_min", "_max")):
        return f"{attr.name}: reserved name"
    if name.endswith("_id"):
        return f"{attr.name}: a reference, not an attribute (relationships come later)"
    if attr.type in ("int", "number") and (attr.min is None or attr.max is None):
        return f"{attr.name}: a number without a range"
    if attr.min is not None and attr.max is not None and attr.min >= attr.max:
        return f"{attr.name}: empty range"
    if attr.type == "enum" and len({v for v in attr.values or []}) < 2:
        return f"{attr.name}: an enum with fewer than 2 values"
    values = None if attr.values is None else list(dict.fromkeys(str(v) for v in attr.values))
    return attr.model_copy(update={"name": name, "values": values})


def sanitize_entities(entities: list[Entity]) -> tuple[list[Entity], list[dict[str, str]]]:
    """Post-sanitization (Section 3.3.4): snake names, session-like entities and duplicates
    dropped, the entity's own id attributes removed (the compiler adds ``<entity>_id``),
    attributes without usable types dropped.

    Returns:
        The kept entities (in order) and ``{"entity", "reason"}`` per dropped entity or attribute.
    """
    kept: dict[str, Entity] = {}
    notes: list[dict[str, str]] = []
    for entity in entities:
        name = snake(entity.name)
        if not name or _is_session(name):
            notes.append({"entity": entity.name, "reason": "session-like entity (reserved)"})
            continue
        if name in kept:
            notes.append({"entity": entity.name, "reason": f"duplicate of {name}"})
            continue
        attrs: list[Attribute] = []
        for attr in entity.attributes:
            if _own_id(name, snake(attr.name)):
                notes.append({"entity": name, "reason": f"{attr.name}: renamed to {name}_id"})
                continue
            clean = sanitize_attribute(attr)
            if isinstance(clean, str):
                notes.append({"entity": name, "reason": clean})
            elif clean.name not in {a.name for a in attrs}:
                attrs.append(clean)
        kept[name] = entity.model_copy(update={"name": name, "attributes": attrs})
    return list(kept.values()), notes
