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
class _Lookup:
    """Words (maximal runs of ASCII letters, digits and ``_``) to look for in ASCII texts, as
    the ASCII bytes a text's words are compared with (see :class:`_AsciiWords`)."""

    encoded: frozenset[bytes]

    @classmethod
    def of(cls, words: Iterable[str]) -> _Lookup:
        """The lookup of ``words`` (those no text has as a word are left out)."""
        return cls(frozenset(w.encode("ascii") for w in words if _is_word(w)))


@functools.lru_cache(maxsize=16)
def _identifier_lookup(names: frozenset[str]) -> _Lookup:
    """A spec's identifiers as looked up (a checker passes the same set for every text)."""
    return _Lookup.of(names)


_WORD_BYTES = bytes(c if _WORD_ONLY.fullmatch(chr(c)) else 0x20 for c in range(256))
"""Byte translation keeping ASCII letters, digits and ``_`` and making every other byte a space."""
_WORD_CHARS = "".join(chr(c) for c in range(128) if _WORD_ONLY.fullmatch(chr(c)))
"""The characters of a word: ASCII letters, digits and ``_``."""


def _is_word(text: str) -> bool:
    """``_WORD_ONLY.fullmatch(text)``, without the regex (it runs once per internal id)."""
    return bool(text) and not text.strip(_WORD_CHARS)


class _AsciiWords:
    """The words of an ASCII text (its maximal runs of letters, digits and ``_``), as a set of
    bytes: every other byte is made a space, so splitting on whitespace gives exactly those
    runs. A lookup is then one set intersection, whatever its size (a scene's origin has
    thousands of internal ids, a text a few hundred words)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.words = frozenset(text.encode("ascii").translate(_WORD_BYTES).split())

    def among(self, lookup: _Lookup) -> set[str]:
        """The words of ``lookup`` that are words of the text."""
        return {w.decode("ascii") for w in self.words & lookup.encoded}


_ANCHOR = 8
"""Characters of an id, from its first non-word character on, that index it (see
:class:`_Anchors`)."""


@dataclass(frozen=True)
class _Anchors:
    """Ids that are not plain words (each has a character other than an ASCII letter, digit or
    ``_``), found in a text as substrings without a search per id.

    An id that occurs at position ``i`` of a text has its first non-word character ``c``, at
    offset ``p`` in the id, at position ``i + p`` of the text, followed there by the id's next
    characters. So only the text's positions holding one of those characters are looked at:
    the few characters from each are looked up (``by_anchor``, per anchor length) and each id
    found is confirmed by comparing it whole at ``i``. This finds exactly the ids that
    ``key in text`` finds."""

    starts: re.Pattern[str] | None
    by_anchor: tuple[tuple[int, dict[str, tuple[tuple[int, str], ...]]], ...]

    @classmethod
    def of(cls, keys: Iterable[str]) -> _Anchors:
        """The anchors of ``keys`` (each must contain a non-word character)."""
        grouped: dict[int, dict[str, list[tuple[int, str]]]] = {}
        firsts: set[str] = set()
        for key in keys:
            p = len(key) - len(key.lstrip(_WORD_CHARS))  # its first non-word character
            if p == len(key):  # a plain word: not one of these ids
                continue
            anchor = key[p : p + _ANCHOR]
            grouped.setdefault(len(anchor), {}).setdefault(anchor, []).append((p, key))
            firsts.add(key[p])
        by_anchor = tuple(
            (n, {a: tuple(v) for a, v in table.items()}) for n, table in sorted(grouped.items())
        )
        chars = "".join(sorted(firsts))
        return cls(re.compile(f"[{re.escape(chars)}]") if chars else None, by_anchor)

    def present(self, text: str) -> set[str]:
        """The ids that occur in ``text`` (as substrings)."""
        found: set[str] = set()
        if self.starts is None:
            return found
        for m in self.starts.finditer(text):
            j = m.start()
            for n, table in self.by_anchor:
                for p, key in table.get(text[j : j + n], ()):
                    if j >= p and text.startswith(key, j - p):
                        found.add(key)
        return found


@dataclass(frozen=True)
class IdIndex:
    """Internal ids split for :func:`find_spoilers`, made once for the many texts of a scene.

    An id made only of ASCII letters, digits and ``_`` occurs in a text with no such character
    on either side exactly when it is one of the text's maximal runs of them, so those ids are
    found among the text's words; the others by their anchors (:class:`_Anchors`).
    """

    words: frozenset[str]
    others: tuple[str, ...]

    @classmethod
    def of(cls, internal_ids: Iterable[str]) -> IdIndex:
        """The index of ``internal_ids`` (empty ids are left out)."""
        ids = {key for key in internal_ids if key}
        words = frozenset(key for key in ids if _is_word(key))
        return cls(words, tuple(sorted(ids - words)))

    @functools.cached_property
    def lookup(self) -> _Lookup:
        """``words`` as looked up in ASCII texts (made on first use)."""
        return _Lookup.of(self.words)

    @functools.cached_property
    def anchors(self) -> _Anchors:
        """``others`` as found in any text (made on first use)."""
        return _Anchors.of(self.others)


_ID_HINT, _ROW_HINT = re.compile(r"ids?\s*[:=#]?\s*\d"), re.compile(r"row\s+\d")
"""In a lowercased ASCII text without ``#``, what any match of :data:`_INT_ID` contains (one
or the other). Each begins with a literal, which the regex engine finds by a fast scan."""


def _row_ids(text: str) -> list[str]:
    """The matches of :data:`_INT_ID` in ``text``, in order. In an ASCII text, ``re.I`` folds
    exactly as ``str.lower`` does, so when neither hint is found there is no match to look for
    (as in nearly every description)."""
    if text.isascii() and "#" not in text:
        low = text.lower()
        if _ID_HINT.search(low) is None and _ROW_HINT.search(low) is None:
            return []
    return [m.group(0) for m in _INT_ID.finditer(text)]


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
    :class:`IdIndex` made once for many texts. An ASCII text (nearly every description) is
    searched by shortcuts that find exactly what the plain search of any other text finds."""
    names = identifiers if identifiers is not None else spec_identifiers(spec)
    index = internal_ids if isinstance(internal_ids, IdIndex) else IdIndex.of(internal_ids)
    if text.isascii():
        words = _AsciiWords(text)
        lookup = _identifier_lookup(names if isinstance(names, frozenset) else frozenset(names))
        named, present = words.among(lookup), words.among(index.lookup)
    else:
        every = set(_WORD_ONLY.findall(text))
        named, present = every & names, every & index.words
    found = [f"schema identifier {name!r}" for name in sorted(named)]
    present.update(index.anchors.present(text))  # most ids are not in it
    for key in sorted(present - set(known)):
        if key in index.words or re.search(
            rf"(?<![A-Za-z0-9_]){re.escape(key)}(?![A-Za-z0-9_])", text
        ):
            found.append(f"internal id {key!r}")
    found += [f"row id {m!r}" for m in _row_ids(text)]
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


def _says(text: str, low: str | None, column: str, value: Any, enum: list[Any] | None) -> bool:
    """True when ``text`` states ``value`` for ``column``: right after the column's words, or,
    for free text of four characters or more, anywhere. ``low`` is ``text.lower()`` when the
    text is ASCII, else None."""
    shown = str(value)
    if low is not None and column.isascii() and shown.isascii():
        near = _near_in_lowercase(column.lower(), shown.lower()).search(low) is not None
    else:
        near = re.search(_near(column, re.escape(shown)), text, re.I) is not None
    if near:
        return True
    free = isinstance(value, str) and len(value) >= 4 and enum is None and value in text
    return (
        free
        and re.search(rf"(?<![A-Za-z0-9_]){re.escape(shown)}(?![A-Za-z0-9_])", text) is not None
    )


def _near(column: str, shown: str) -> str:
    """The pattern of ``shown`` (escaped) right after the words of ``column``, under ``re.I``."""
    words = r"\W+".join(re.escape(w) for w in column.split("_"))
    return rf"(?<![A-Za-z0-9_]){words}\W+(?:[A-Za-z]+\W+){{0,3}}?{shown}(?![A-Za-z0-9_])"


@functools.lru_cache(maxsize=1024)
def _near_in_lowercase(column: str, shown: str) -> re.Pattern[str]:
    """:func:`_near` for a lowercase ASCII column and value, matched case-sensitively in a
    lowercased ASCII text: there ``re.I`` compares exactly as lowercasing does, so the matches
    are the same. The first word leads and the check that no word character precedes it
    follows it, so that the regex engine finds the pattern by a fast scan for that word."""
    first = re.escape(column.split("_")[0])
    pattern = _near(column, re.escape(shown))
    if first:
        pattern = pattern.replace(
            rf"(?<![A-Za-z0-9_]){first}", rf"{first}(?<![A-Za-z0-9_]{first})", 1
        )
    return re.compile(pattern)


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
    decided = _decided_by_tool(_Same(spec, tools))
    low = text.lower() if text.isascii() else None
    ready = decided.by_tool
    for call in witness:
        if not call.ok:
            continue
        columns = ready.get(call.tool)
        for col, enum in decided.of(call.tool) if columns is None else columns:
            value = call.args.get(col)
            if value is not None and _says(text, low, col, value, enum):
                found.append(f"agent-decided value {col}={value!r}")
    return sorted(set(found))


class _Same:
    """A cache key equal only to a key for the very same spec and tools. The key keeps them
    alive, so while it is cached no other object can take their identities; both are
    immutable (a frozen model; the tools a checker built once), and an identity hash costs
    nothing, unlike hashing their content."""

    __slots__ = ("_hash", "spec", "tools")

    def __init__(self, spec: DomainSpec, tools: dict[str, ToolSpec] | None) -> None:
        self.spec, self.tools = spec, tools
        self._hash = hash((id(spec), id(tools)))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.spec is self.spec and other.tools is self.tools


class _DecidedColumns:
    """Per tool of a spec, what :func:`decided_spoilers` looks at in a write through it: each
    column the agent decides (sorted) that the tool's table has, with the column's enum.
    Worked out for a tool the first time a witness writes through it."""

    def __init__(self, spec: DomainSpec, tools: dict[str, ToolSpec] | None) -> None:
        self.spec = spec
        self.tools = tools if tools is not None else build_tools(spec)
        self.by_tool: dict[str, tuple[tuple[str, list[Any] | None], ...]] = {}

    def of(self, tool: str) -> tuple[tuple[str, list[Any] | None], ...]:
        """The decided columns of a write through ``tool`` (none when it does not write)."""
        found = self.by_tool.get(tool)
        if found is None:
            found = self.by_tool[tool] = self._work_out(tool)
        return found

    def _work_out(self, tool: str) -> tuple[tuple[str, list[Any] | None], ...]:
        spec_tool = self.tools.get(tool)
        if spec_tool is None or not spec_tool.writes or not self.spec.has_table(spec_tool.table):
            return ()  # a procedure writes no one table: no column is decided by a rule
        table = self.spec.table(spec_tool.table)
        columns = sorted(decided_columns(self.spec, tool, self.tools))
        return tuple((c, table.column(c).enum) for c in columns if c in table.column_names)


@functools.lru_cache(maxsize=16)
def _decided_by_tool(key: _Same) -> _DecidedColumns:
    return _DecidedColumns(key.spec, key.tools)
