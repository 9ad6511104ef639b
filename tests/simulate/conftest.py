"""Exported veritask trajectories in every supported format, made once per test session."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import pytest

from veritask.domains import load_domain
from veritask.export import to_hf_row, to_openai_row, to_sharegpt_row
from veritask.pipeline import run_batch
from veritask.rollout import RoleFactory, TaskSource
from veritask.simulate import ToolCatalog, catalog_from_spec, read_row, render_text
from veritask.synth import generate
from veritask.task import Trajectory

DOMAINS = ("travel", "retail")
FORMATS = ("veritask", "openai", "hf", "sharegpt", "text")


@dataclass
class Exports:
    """Clean rows by format (each a (domain, record) pair) and the domains' catalogues."""

    rows: dict[str, list[tuple[str, Any]]]
    catalogs: dict[str, ToolCatalog]
    sources: dict[str, TaskSource]


def export_row(traj: Trajectory, fmt: str) -> Any:
    """One trajectory as a row of ``fmt``."""
    if fmt == "veritask":
        return json.loads(traj.model_dump_json())
    if fmt == "openai":
        return to_openai_row(traj)
    if fmt == "hf":
        return to_hf_row(traj)
    if fmt == "sharegpt":
        return to_sharegpt_row(traj)
    return {"text": render_text(read_row(to_openai_row(traj)).turns)}


@pytest.fixture(scope="session")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Exports:
    root = tmp_path_factory.mktemp("simulate-exports")
    rows: dict[str, list[tuple[str, Any]]] = {fmt: [] for fmt in FORMATS}
    sources = {}
    for domain in DOMAINS:
        generate(domain, 100, 3, root / domain)
        source = TaskSource.load(root / domain)
        sources[domain] = source
        trajectories = asyncio.run(run_batch(source, RoleFactory(agent="oracle"), concurrency=8))
        for traj in trajectories:
            for fmt in FORMATS:
                rows[fmt].append((domain, export_row(traj, fmt)))
    catalogs = {d: catalog_from_spec(load_domain(d)) for d in DOMAINS}
    return Exports(rows, catalogs, sources)
