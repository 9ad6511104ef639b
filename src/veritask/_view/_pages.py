"""What every kind of source gives the site: page paths and, per path, a template and its data."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

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


def slug(text: str) -> str:
    """A file-name-safe form of an id (letters, digits, ``.``, ``_`` and ``-`` are kept)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", text) or "_"


def pretty(value: Any) -> str:
    """A value as indented JSON (strings too, so quotes show what is text)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str, sort_keys=True)


def fixed_columns(spec: DomainSpec) -> dict[str, list[str]]:
    """Table -> the columns an update never changes, for pairing the rows of a diff: the
    primary key when a diff keeps it (not technical), else the columns neither a tool nor the
    system updates."""
    out: dict[str, list[str]] = {}
    for table in spec.tables:
        key = table.primary_key
        if key and not any(c.technical for c in key):
            out[table.name] = [c.name for c in key]
            continue
        out[table.name] = [
            c.name for c in table.columns if not (c.writable_on_update or c.computed or c.technical)
        ]
    return out


def yes_no(value: bool | None) -> str:
    """``yes`` / ``no`` for a flag, ``""`` when unknown (the filter value of the flag)."""
    return "" if value is None else "yes" if value else "no"
