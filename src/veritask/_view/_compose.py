"""Several sources in one site: the main one at the root, the others each under a folder.

An evolve run is its own pages plus its final dataset (``dataset/``) and the dataset's
verified trajectories (``trajectories/``); a trajectories file whose dataset is known carries
that dataset's pages too, so a trajectory can link to its task. Links between sources are
relative to the site root (``{{ root }}dataset/task/x.html``).
"""

from __future__ import annotations

from pathlib import Path

from veritask._util import loads_untrusted
from veritask._view._pages import Page, Pages, Query


class Composite:
    """One site made of a main source and sources mounted under folders."""

    def __init__(self, main: Pages, mounts: list[tuple[str, str, Pages]]) -> None:
        """``mounts``: ``(folder, title, pages)``; the folder ends with ``/`` and the title
        prefixes the mounted source's navigation labels."""
        self.main = main
        self.kind = main.kind
        self.name = main.name
        self.mounts = mounts
        self.nav = list(main.nav)
        for folder, title, pages in mounts:
            self.nav += [(folder + href, f"{title} {label}") for href, label in pages.nav]

    def paths(self) -> list[str]:
        """The main source's paths, then each mounted source's under its folder."""
        out = list(self.main.paths())
        for folder, _, pages in self.mounts:
            out += [folder + p for p in pages.paths()]
        return out

    def page(self, path: str, query: Query) -> Page | None:
        """The page of whichever source the path's folder names."""
        for folder, _, pages in self.mounts:
            if path.startswith(folder):
                return pages.page(path[len(folder) :], query)
        return self.main.page(path, query)


def manifest_ids(root: Path) -> set[str]:
    """The task ids a dataset directory's manifest lists (without validating the packages)."""
    ids: set[str] = set()
    with (root / "manifest.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                try:
                    ids.add(str(loads_untrusted(line).get("id", "")))
                except (ValueError, AttributeError):
                    continue
    return ids


def dataset_of(trajectories: Path, task_ids: set[str]) -> Path | None:
    """The dataset directory a trajectories file was run on, when its place says so: the
    directory it is inside if that lists every task of the file, else the one dataset directory next to it whose manifest lists
    every task of the file (None when there is none, or more than one)."""
    parent = trajectories.resolve().parent
    if (parent / "manifest.jsonl").is_file() and task_ids <= manifest_ids(parent):
        return parent
    found = [
        d
        for d in sorted(parent.iterdir())
        if d.is_dir() and (d / "manifest.jsonl").is_file() and task_ids <= manifest_ids(d)
    ]
    return found[0] if len(found) == 1 else None
