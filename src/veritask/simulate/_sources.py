"""Where a ``--tools`` argument points: a domain, a spec file, an OpenAI tools JSON, an MCP
server, or seed trajectories."""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from veritask.domains import load_domain
from veritask.simulate._catalog import (
    ToolCatalog,
    catalog_from_calls,
    catalog_from_json,
    catalog_from_mcp,
    catalog_from_spec,
    load_json_file,
)
from veritask.simulate._formats import FormatError, iter_records, observed_calls, read_row


def _trajectory_calls(path: Path) -> Iterator[tuple[str, dict[str, Any], Any]]:
    for _source, record in iter_records(path):
        try:
            row = read_row(record)
        except FormatError:
            continue
        yield from observed_calls(row.turns)


def catalog_from_trajectories(path: Path) -> ToolCatalog:
    """The tools named in a file of seed trajectories (any supported format)."""
    catalog = catalog_from_calls(_trajectory_calls(path))
    catalog.source = f"trajectories:{path.name}"
    return catalog


def load_catalog(ref: str) -> ToolCatalog:
    """A catalogue from a reference.

    - ``mcp:COMMAND ARGS...``: the tools an MCP server started over stdio lists;
    - a ``.json`` file: OpenAI tools (a list, or ``{"tools": [...]}``) or a saved catalogue;
    - a ``.jsonl`` or ``.txt`` file: the tools named in the trajectories it holds;
    - a ``.yaml`` / ``.yml`` spec file, or a built-in domain name: the tools it compiles to.

    Raises:
        ValueError: The reference is none of these.
    """
    if ref.startswith("mcp:"):
        command, *args = shlex.split(ref[len("mcp:") :])
        return asyncio.run(catalog_from_mcp(command, args))
    path = Path(ref)
    if path.suffix == ".json" and path.is_file():
        return catalog_from_json(load_json_file(path), f"openai:{path.name}")
    if path.suffix in (".jsonl", ".txt") and path.is_file():
        return catalog_from_trajectories(path)
    return catalog_from_spec(load_domain(ref))
