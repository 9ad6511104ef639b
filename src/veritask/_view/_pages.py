"""What every kind of source gives the site: page paths and, per path, a template and its data."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import sqlglot
from sqlglot import exp

from veritask.policy import DomainSpec

Query = Mapping[str, str]


@dataclass
class Page:
    """One page to render: the template, its title and the data the template reads."""

    template: str
    title: str
    data: dict[str, Any] = field(default_factory=dict)


class Pages(Protocol):
    """The pages of one source (a dataset, a trajectories file, a logic file)."""

    kind: str
    """``dataset``, ``trajectories`` or ``logic``."""
    name: str
    """What the header shows (the file or directory name)."""
    nav: list[tuple[str, str]]
    """``(path, label)`` of the top-level pages."""

    def paths(self) -> list[str]:
        """Every page path, relative to the site root (``index.html``, ``task/x.html``)."""
        ...

    def page(self, path: str, query: Query) -> Page | None:
        """The page at ``path`` (None when there is none), filtered by ``query``."""
        ...


SLUG_MAX = 100
"""Longest file name ``slug`` returns (before ``.html``); longer ids end in a hash."""
_SLUG_KEPT = 80
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]|^\.|\.$")
"""A character not kept as it is: anything but a letter, a digit, ``_``, ``-`` and an inner
``.`` (``.`` first or last would make ``.`` or ``..`` names)."""


def slug(text: str) -> str:
    """The one file-name-safe form of an id that the viewer uses in every path it writes.

    Letters, digits, ``_``, ``-`` and inner dots are kept; every other character (``/``,
    ``\\``, NUL, ``~``, a leading or trailing ``.``...) is written ``~`` and its UTF-8 bytes in
    hex, so distinct ids get distinct names and none is absolute, ``.``, ``..`` or holds a
    separator. An encoded id longer than ``SLUG_MAX`` keeps its first characters and ends
    with ``~`` and 16 hex digits of the id's sha256 (file systems refuse long names).
    """
    encoded = _UNSAFE.sub(lambda m: "~" + m.group().encode("utf-8").hex(), text) or "~"
    if len(encoded) <= SLUG_MAX:
        return encoded
    return f"{encoded[:_SLUG_KEPT]}~{hashlib.sha256(text.encode('utf-8')).hexdigest()[:16]}"


def pretty(value: Any) -> str:
    """A value as indented JSON (strings too, so quotes show what is text)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str, sort_keys=True)


def system_updates(spec: DomainSpec) -> dict[str, set[str]]:
    """Table -> the columns an effect's ``UPDATE ... SET`` assigns (read from the parse tree
    of the effect's SQL with sqlglot, never from its text): the system changes them although
    no tool exposes them (an approval that sets a booking's ``approval_status``)."""
    out: dict[str, set[str]] = {}
    for effect in spec.effects:
        try:
            trees = sqlglot.parse(effect.sql, read="sqlite")
        except sqlglot.errors.ParseError:
            continue
        for tree in trees:
            for node in tree.find_all(exp.Update) if tree is not None else ():
                target = node.this
                if isinstance(target, exp.Table):
                    out.setdefault(target.name, set()).update(
                        eq.this.name
                        for eq in node.expressions
                        if isinstance(eq, exp.EQ) and isinstance(eq.this, exp.Column)
                    )
    return out


def fixed_columns(spec: DomainSpec | None) -> dict[str, list[str]]:
    """Table -> the columns an update never changes, for pairing the rows of a diff: the
    primary key when a diff keeps it (not technical), else the columns neither a tool nor the
    system (an effect's ``UPDATE``) changes. Every page that draws a diff pairs rows with
    these, so one update is one changed row everywhere; with no spec (a trajectory of an
    unknown domain) there are none and rows pair on the cells they share."""
    if spec is None:
        return {}
    by_system = system_updates(spec)
    out: dict[str, list[str]] = {}
    for table in spec.tables:
        key = table.primary_key
        if key and not any(c.technical for c in key):
            out[table.name] = [c.name for c in key]
            continue
        moved = by_system.get(table.name, set())
        out[table.name] = [
            c.name
            for c in table.columns
            if not (c.writable_on_update or c.computed or c.technical or c.name in moved)
        ]
    return out


RATE_PLACES = 3
"""Decimals a rate or share is shown with (``0.833``)."""
MEAN_PLACES = 2
"""Decimals a mean is shown with (``6.73``)."""


def number(value: Any, places: int = RATE_PLACES) -> str:
    """The one way the viewer writes a number: a float rounded to ``places`` decimals without
    trailing zeros (``6.7333`` -> ``6.733``, ``1.0`` -> ``1``), an integer as it is; anything
    else (text, None, a flag) as ``str`` would, so the filter is safe on any cell."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "" if value is None else str(value)
    if isinstance(value, int):
        return str(value)
    text = f"{value:.{places}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def yes_no(value: bool | None) -> str:
    """``yes`` / ``no`` for a flag, ``""`` when unknown (the filter value of the flag)."""
    return "" if value is None else "yes" if value else "no"
