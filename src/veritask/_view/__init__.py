"""A read-only web viewer over task datasets, trajectories, logic instances (with their gate
records), evolve runs and blueprint runs.

``open_pages`` reads a path (whichever kind of record it holds; related sources such as a
trajectories file's dataset become one site), ``Site`` renders its pages,
``build_app`` serves them over HTTP on loopback and ``Site.write`` writes them as a static
bundle that opens from disk.
"""

from veritask._view._app import LOOPBACK_HOSTS, build_app
from veritask._view._pages import Page, Pages
from veritask._view._site import Site
from veritask._view._source import Kind, ViewError, detect, open_pages

__all__ = [
    "LOOPBACK_HOSTS",
    "Kind",
    "Page",
    "Pages",
    "Site",
    "ViewError",
    "build_app",
    "detect",
    "open_pages",
]
