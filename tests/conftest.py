"""Shared fixtures."""

from __future__ import annotations

import pytest

from veritask.domains import builtin_domains, load_domain
from veritask.env import CompiledDomain, Environment


@pytest.fixture(scope="session")
def compiled() -> dict[str, CompiledDomain]:
    """Every built-in domain, compiled once per test session."""
    return {name: CompiledDomain.from_spec(load_domain(name)) for name in builtin_domains()}


@pytest.fixture
def mock_env(compiled: dict[str, CompiledDomain]) -> Environment:
    """A fresh environment of the tiny ``mock`` domain at its seed state."""
    return Environment(compiled["mock"])
