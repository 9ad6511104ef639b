"""Fixtures shared by the task tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from veritask.synth import generate

BUILTIN_DOMAINS = ("retail", "travel", "clinic", "gym", "registrar", "mock")


@pytest.fixture(scope="session")
def builtin_datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A small generated dataset per built-in domain (12 packages each; read, never edited:
    copy one before tampering with it)."""
    root = tmp_path_factory.mktemp("builtin-datasets")
    out = {}
    for i, domain in enumerate(BUILTIN_DOMAINS):
        out[domain] = root / domain
        generate(domain, 12, 70 + i, out[domain])
    return out
