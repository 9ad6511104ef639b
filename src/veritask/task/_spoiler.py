"""The spoiler check: a task description may name only what the user could know."""

from __future__ import annotations

import functools
import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from veritask.policy import DomainSpec, ToolSpec, build_tools, quote_ident
from veritask.task._package import WitnessCall

_INT_ID = re.compile(r"(?=[#ir])(?:#\s*\d+\b|\bids?\b\s*[:=#]?\s*\d+\b|\brow\s+\d+\b)", re.I)
"""An integer row id written out. The lookahead only lets the search skip, cheaply, every
position where no alternative can start (each begins with ``#``, ``i`` or ``r``; under
``re.I`` the class folds exactly as those letters do), so it matches what the pattern without
it matches, about twice as fast."""


def text_keys(spec: DomainSpec, origin: bytes, conn: sqlite3.Connection | None = None) -> set[str]:
    """Values of TEXT primary keys in a state: internal ids a user is not told by default.

    ``conn`` is a connection the caller keeps for images of this domain (its parsed schema is
    reused; the image is deserialized into it); by default a fresh one is opened and closed."""
    own = conn is None
    db = sqlite3.connect(":memory:") if conn is None else conn
    try:
        db.deserialize(origin)
        keys: set[str] = set()
        for table in spec.tables:
            for col in table.primary_key:
                if col.type == "TEXT":
                    sql = f"SELECT {quote_ident(col.name)} FROM {quote_ident(table.name)}"
                    keys.update(str(r[0]) for r in db.execute(sql))
        return keys
    finally:
        if own:
            db.close()


_Shape = tuple[tuple[str, bool, bool, tuple[str, ...]], ...]


@dataclass(frozen=True)
class _Schema:
    """A spec seen only through what its identifiers depend on: per table its name, whether it
    is writable and has a primary key (which tools it gets) and its column names. Equality and
    hash use that shape alone; the spec rides along to compute the identifiers once."""

    shape: _Shape
    spec: DomainSpec = field(compare=False, hash=False)

    @classmethod
    def of(cls, spec: DomainSpec) -> _Schema:
        shape = tuple(
            (t.name, t.writable, bool(t.primary_key), tuple(c.name for c in t.columns))
            for t in spec.tables
        )
        return cls(shape, spec)


def spec_identifiers(spec: DomainSpec) -> frozenset[str]:
    """Tool names and the schema identifiers that contain an underscore (what the spoiler
    check looks for as words of a text).

    Cached in a small, bounded LRU keyed by the spec's schema shape rather than by object
    identity. A key of ``id(spec)`` is only safe while the cache keeps every spec it has seen
    alive (an address is reused once its object dies), so such a cache grows without bound;
    the spec itself is not hashable (its tables are lists), and its content hash costs about
    twice the computation it would save. The shape is cheap (a tuple of names) and is exactly
    what the answer depends on: specs with the same shape share one entry, and the cache keeps
    at most ``maxsize`` specs alive.
    """
    return _schema_identifiers(_Schema.of(spec))


@functools.lru_cache(maxsize=16)
def _schema_identifiers(schema: _Schema) -> frozenset[str]:
    spec = schema.spec
    names = set(build_tools(spec))
    for table in spec.tables:
        if "_" in table.name:
            names.add(table.name)
        names.update(c.name for c in table.columns if "_" in c.name)
    return frozenset(names)


_WORD_ONLY = re.compile(r"[A-Za-z0-9_]+")


@dataclass(frozen=True)
class IdIndex:
    """Internal ids split for :func:`find_spoilers`, made once for the many texts of a scene.

    An id made only of ASCII letters, digits and ``_`` occurs in a text with no such character
    on either side exactly when it is one of the text's maximal runs of them, so those ids are
    found by a set intersection with the text's words; the others are searched for as before.
    """

    words: frozenset[str]
    others: tuple[str, ...]

    @classmethod
    def of(cls, internal_ids: Iterable[str]) -> IdIndex:
        """The index of ``internal_ids`` (empty ids are left out)."""
        ids = {key for key in internal_ids if key}
        words = frozenset(key for key in ids if _WORD_ONLY.fullmatch(key))
        return cls(words, tuple(sorted(ids - words)))


def find_spoilers(
    text: str,
    spec: DomainSpec,
    internal_ids: Iterable[str] | IdIndex,
    known: Iterable[str],
    identifiers: frozenset[str] | None = None,
) -> list[str]:
    """What in ``text`` the user could not know: tool names, schema identifiers (table and
    column names), internal ids (``internal_ids`` minus the ``known`` ones the user was told),
    and integer row ids written as ``#12`` / ``id 12``. Empty when the text is spoiler-free.

    ``identifiers`` are ``spec_identifiers(spec)`` when the caller keeps them (a checker asks
    once per domain); otherwise they are looked up for ``spec``. ``internal_ids`` may be an
    :class:`IdIndex` made once for many texts."""
    found: list[str] = []
    words = set(_WORD_ONLY.findall(text))
    names = identifiers if identifiers is not None else spec_identifiers(spec)
    for name in sorted(names & words):
        found.append(f"schema identifier {name!r}")
    index = internal_ids if isinstance(internal_ids, IdIndex) else IdIndex.of(internal_ids)
    present = words & index.words
    present.update(key for key in index.others if key in text)  # most ids are not
    for key in sorted(present - set(known)):
        if key in index.words or re.search(
            rf"(?<![A-Za-z0-9_]){re.escape(key)}(?![A-Za-z0-9_])", text
        ):
            found.append(f"internal id {key!r}")
    found += [f"row id {m.group(0)!r}" for m in _INT_ID.finditer(text)]
    return found


def decided_columns(
    spec: DomainSpec, tool: str, tools: dict[str, ToolSpec] | None = None
) -> set[str]:
    """Columns a write through ``tool`` leaves to the agent whatever the call: the
    ``agent_decides`` of every procedure on the tool, and the repair column of every unguarded
    calculation rule on its table and event that such a procedure sets. (A guarded rule's
    column is the agent's only when its guard holds, which the grounding certificate decides on
    the state the call meets.)"""
    spec_tool = (tools if tools is not None else build_tools(spec)).get(tool)
    if spec_tool is None:
        return set()
    out: set[str] = set()
    params: set[str] = set()
    for tx in spec.transactions:
        if tx.tool == tool:
            out.update(tx.agent_decides)
            params.update(tx.parameters)
    for rule in spec.rules:
        if (
            rule.repair is not None
            and rule.when is None
            and rule.table == spec_tool.table
            and spec_tool.kind in rule.on
            and rule.repair.column in params
        ):
            out.add(rule.repair.column)
    return out


def _says(text: str, column: str, value: Any, enum: list[Any] | None) -> bool:
    """True when ``text`` states ``value`` for ``column``: right after the column's words, or,
    for free text of four characters or more, anywhere."""
    shown = re.escape(str(value))
    words = r"\W+".join(re.escape(w) for w in column.split("_"))
    near = rf"(?<![A-Za-z0-9_]){words}\W+(?:[A-Za-z]+\W+){{0,3}}?{shown}(?![A-Za-z0-9_])"
    if re.search(near, text, re.I):
        return True
    free = isinstance(value, str) and len(value) >= 4 and enum is None
    return free and re.search(rf"(?<![A-Za-z0-9_]){shown}(?![A-Za-z0-9_])", text) is not None


def decided_spoilers(
    text: str,
    spec: DomainSpec,
    witness: Iterable[WitnessCall],
    tools: dict[str, ToolSpec] | None = None,
) -> list[str]:
    """Values the agent must work out that ``text`` gives away: for every accepted write of the
    witness, the value it wrote to a column the agent decides (see ``decided_columns``).

    ``tools`` are the spec's tools when the caller has them built already (a checker builds
    them once per domain); otherwise they are built from ``spec``."""
    found: list[str] = []
    tools = tools if tools is not None else build_tools(spec)
    for call in witness:
        if not call.ok or call.tool not in tools or not tools[call.tool].writes:
            continue
        table = spec.table(tools[call.tool].table)
        for col in sorted(decided_columns(spec, call.tool, tools)):
            value = call.args.get(col)
            if value is None or col not in table.column_names:
                continue
            if _says(text, col, value, table.column(col).enum):
                found.append(f"agent-decided value {col}={value!r}")
    return sorted(set(found))
