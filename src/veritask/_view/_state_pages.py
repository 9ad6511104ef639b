"""A dataset's initial states as browsable tables, and each domain's policy as a page.

A state page shows one table of a stored state at a time (``?table=``), filtered by a search
(``?q=``, a case-insensitive match in any cell) and cut into pages of ``PAGE_ROWS`` rows
(``?page=``, from 1). The rows are read through the environment (``Environment.restore`` of
the stored image, then ``Environment.rows``), never by SQL written here. A written bundle has no
server to ask, so its state pages also carry every table's rows as embedded JSON and
``state.js`` filters and pages them in the browser, with the same links.

A policy page renders the domain's wiki policy (``render_wiki``) as HTML with markdown-it (the
CommonMark parser rich already depends on; raw HTML in spec text is escaped, not passed
through) and puts an anchor on every rule, so a task page links the rules it exercises.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt
from markupsafe import Markup

from veritask._view._pages import Page, Query, slug
from veritask.env import CompiledDomain, Environment
from veritask.policy import DomainSpec, render_wiki

PAGE_ROWS = 50
"""Rows a state table shows per page."""


def state_path(digest: str) -> str:
    """The path of a state's page from the site root."""
    return f"state/{slug(digest)}.html"


def policy_path(domain: str) -> str:
    """The path of a domain's policy page from the site root."""
    return f"policy/{slug(domain)}.html"


def rule_anchor(rule_id: str) -> str:
    """The anchor of a rule on its domain's policy page."""
    return f"rule-{slug(rule_id)}"


def _text(value: Any) -> str:
    return "null" if value is None else str(value)


def filter_rows(rows: list[dict[str, Any]], q: str) -> list[dict[str, Any]]:
    """The rows with ``q`` (trimmed, any case) in some cell; every row for an empty ``q``."""
    needle = q.strip().lower()
    if not needle:
        return rows
    return [r for r in rows if any(needle in _text(v).lower() for v in r.values())]


def _values(rows: list[dict[str, Any]]) -> list[list[Any]]:
    return [list(r.values()) for r in rows]


def _page_number(text: str, pages: int) -> int:
    number = int(text) if text.isdigit() else 1
    return min(max(number, 1), max(pages, 1))


@dataclass
class StateReader:
    """Reads stored states of a dataset through one environment per domain."""

    spec_of: Callable[[str], DomainSpec]
    """Domain name -> its spec."""
    read_state: Callable[[str], bytes]
    """State digest -> its database image."""

    def __post_init__(self) -> None:
        self.envs: dict[str, Environment] = {}

    def tables(self, domain: str, digest: str) -> dict[str, list[dict[str, Any]]]:
        """Every table of the state (spec order) as rows keyed by column, in rowid order."""
        env = self.envs.get(domain)
        if env is None:
            env = Environment(CompiledDomain.from_spec(self.spec_of(domain)))
            self.envs[domain] = env
        env.restore(self.read_state(digest))
        return {t.name: env.rows(t.name) for t in env.spec.tables}

    def close(self) -> None:
        """Close the environments."""
        for env in self.envs.values():
            env.close()
        self.envs.clear()


def state_page(
    reader: StateReader, domain: str, digest: str, tasks: list[str], query: Query
) -> Page:
    """One stored state: its tables (names and row counts), the selected table's page of
    filtered rows, and every table's rows for the written bundle's script."""
    tables = reader.tables(domain, digest)
    names = list(tables)
    name = query.get("table", "")
    name = name if name in tables else (names[0] if names else "")
    rows = tables.get(name, [])
    q = query.get("q", "")
    found = filter_rows(rows, q)
    pages = max((len(found) + PAGE_ROWS - 1) // PAGE_ROWS, 1)
    number = _page_number(query.get("page", ""), pages)
    spec = reader.spec_of(domain)
    every = {
        t: {"columns": list(r[0]) if r else spec.table(t).column_names, "rows": _values(r)}
        for t, r in tables.items()
    }
    columns = every[name]["columns"] if name else []
    return Page(
        "state.html",
        f"state {digest[:12]}",
        {
            "digest": digest,
            "domain": domain,
            "counts": {t: len(r) for t, r in tables.items()},
            "table": name,
            "columns": columns,
            "rows": found[(number - 1) * PAGE_ROWS : number * PAGE_ROWS],
            "found": len(found),
            "page": number,
            "pages": pages,
            "page_rows": PAGE_ROWS,
            "q": q,
            "every": every,
            "tasks": [(t, slug(t)) for t in tasks],
            "policy": policy_path(domain),
        },
    )


_PARSER = MarkdownIt("commonmark", {"html": False})
_RULE_ITEM = re.compile(r"<li><strong>([A-Za-z0-9_.-]+)</strong> \(")


def policy_html(spec: DomainSpec) -> Markup:
    """The wiki policy as HTML, each rule's line of Section 4 carrying the rule's anchor."""
    ids = {r.id for r in spec.rules}
    html = _PARSER.render(render_wiki(spec))

    def anchor(match: re.Match[str]) -> str:
        rule = match.group(1)
        if rule not in ids:
            return match.group(0)
        ids.discard(rule)  # the first line of a rule holds its anchor
        return f'<li id="{rule_anchor(rule)}"><strong>{rule}</strong> ('

    return Markup(_RULE_ITEM.sub(anchor, html))  # markdown-it escaped the text


def policy_page(spec: DomainSpec, exercised: dict[str, int]) -> Page:
    """A domain's policy: a rule index (anchors, category, table, code, tasks exercising it)
    and the wiki text with an anchor on each rule's line."""
    html = policy_html(spec)
    rules = [
        {
            "id": r.id,
            "anchor": rule_anchor(r.id),
            "in_wiki": f'id="{rule_anchor(r.id)}"' in html,
            "category": r.category,
            "table": r.table,
            "code": r.code,
            "message": r.message,
            "tasks": exercised.get(r.id, 0),
        }
        for r in spec.rules
    ]
    return Page("policy.html", f"policy {spec.name}", {"spec": spec, "rules": rules, "wiki": html})
