"""The site: a source's pages rendered with Jinja2 templates, served or written to disk.

Every link is relative to the page it is on (``../task/x.html``), so the same HTML works under
the server and opened from disk. Style and script files are shipped with the package.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from veritask._view._pages import Pages, Query, number
from veritask.task import atomic_write

STATIC_FILES = ("style.css", "filter.js", "state.js")
"""Files served under ``static/`` (and copied into a written site)."""


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("veritask._view", "templates"),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["json"] = lambda value: json.dumps(value, ensure_ascii=False, default=str)
    env.filters["num"] = number
    return env


def static_file(name: str) -> bytes:
    """The bytes of one of ``STATIC_FILES``."""
    return resources.files("veritask._view").joinpath("static", name).read_bytes()


def inside(base: Path, relative: str) -> Path:
    """``base / relative``, refused unless it stays under ``base``.

    Raises:
        ValueError: ``relative`` is absolute, holds NUL, or leads outside ``base`` (``..``, or
            a symbolic link already there pointing out).
    """
    if "\0" in relative or Path(relative).is_absolute():
        raise ValueError(f"unsafe page path {relative!r}")
    path = base / relative
    root = base.resolve()
    if not path.resolve().is_relative_to(root) or ".." in Path(relative).parts:
        raise ValueError(f"page path {relative!r} leads outside {base}")
    return path


class Site:
    """A source's pages as HTML."""

    def __init__(self, pages: Pages) -> None:
        self.pages = pages
        self.env = _environment()

    def render(self, path: str, query: Query, *, static: bool = False) -> str | None:
        """The HTML of the page at ``path`` (relative to the site root), or None.

        ``static``: for a written bundle (pages that a server would filter or page carry
        their data for a script to do it in the browser)."""
        page = self.pages.page(path, query)
        if page is None:
            return None
        root = "../" * path.count("/")
        context: dict[str, Any] = {
            "root": root,
            "path": path,
            "title": page.title,
            "kind": self.pages.kind,
            "name": self.pages.name,
            "nav": self.pages.nav,
            "static": static,
            **page.data,
        }
        return self.env.get_template(page.template).render(context)

    def write(self, out: Path) -> int:
        """Write every page (unfiltered) and the static files under ``out``; return how many
        pages were written.

        Raises:
            ValueError: A page path would lead outside ``out`` (ids are made safe with
                ``slug``; this refuses any path that was not).
        """
        paths = self.pages.paths()
        for path in paths:
            html = self.render(path, {}, static=True)
            if html is not None:
                atomic_write(inside(out, path), html.encode("utf-8"))
        for name in STATIC_FILES:
            atomic_write(out / "static" / name, static_file(name))
        return len(paths)
