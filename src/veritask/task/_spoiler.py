"""The spoiler check: a task description may name only what the user could know."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable

from veritask.policy import DomainSpec, build_tools, quote_ident

_INT_ID = re.compile(r"(?:#\s*\d+\b|\bids?\b\s*[:=#]?\s*\d+\b|\brow\s+\d+\b)", re.I)


def text_keys(spec: DomainSpec, origin: bytes) -> set[str]:
    """Values of TEXT primary keys in a state: internal ids a user is not told by default."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.deserialize(origin)
        keys: set[str] = set()
        for table in spec.tables:
            for col in table.primary_key:
                if col.type == "TEXT":
                    sql = f"SELECT {quote_ident(col.name)} FROM {quote_ident(table.name)}"
                    keys.update(str(r[0]) for r in conn.execute(sql))
        return keys
    finally:
        conn.close()


_IDENT_CACHE: dict[int, tuple[DomainSpec, frozenset[str]]] = {}


def _identifiers(spec: DomainSpec) -> frozenset[str]:
    cached = _IDENT_CACHE.get(id(spec))
    if cached is not None and cached[0] is spec:
        return cached[1]
    found = _compute_identifiers(spec)
    _IDENT_CACHE[id(spec)] = (spec, found)
    return found


def _compute_identifiers(spec: DomainSpec) -> frozenset[str]:
    names = set(build_tools(spec))
    for table in spec.tables:
        if "_" in table.name:
            names.add(table.name)
        names.update(c.name for c in table.columns if "_" in c.name)
    return frozenset(names)


def find_spoilers(
    text: str, spec: DomainSpec, internal_ids: Iterable[str], known: Iterable[str]
) -> list[str]:
    """What in ``text`` the user could not know: tool names, schema identifiers (table and
    column names), internal ids (``internal_ids`` minus the ``known`` ones the user was told),
    and integer row ids written as ``#12`` / ``id 12``. Empty when the text is spoiler-free."""
    found: list[str] = []
    words = set(re.findall(r"[A-Za-z0-9_]+", text))
    for name in sorted(_identifiers(spec) & words):
        found.append(f"schema identifier {name!r}")
    allowed = set(known)
    for key in sorted(set(internal_ids) - allowed):
        if (
            key
            and key in text
            and re.search(rf"(?<![A-Za-z0-9_]){re.escape(key)}(?![A-Za-z0-9_])", text)
        ):
            found.append(f"internal id {key!r}")
    found += [f"row id {m.group(0)!r}" for m in _INT_ID.finditer(text)]
    return found
