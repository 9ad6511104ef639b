"""Shared fixtures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from veritask.domains import builtin_domains, load_domain
from veritask.env import CompiledDomain, Environment
from veritask.synth import generate


@pytest.fixture(scope="session")
def compiled() -> dict[str, CompiledDomain]:
    """Every built-in domain, compiled once per test session."""
    return {name: CompiledDomain.from_spec(load_domain(name)) for name in builtin_domains()}


@pytest.fixture
def mock_env(compiled: dict[str, CompiledDomain]) -> Environment:
    """A fresh environment of the tiny ``mock`` domain at its seed state."""
    return Environment(compiled["mock"])


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, int, int], Path]:
    """``generated(domain, n, seed)``: ``n`` tasks of ``domain`` generated from ``seed`` into a
    directory of their own (``<tmp>/<domain>``), made once per test run for each argument
    triple and shared by every test that asks for it: tests read it and write elsewhere."""
    made: dict[tuple[str, int, int], Path] = {}

    def make(domain: str, n: int, seed: int) -> Path:
        key = (domain, n, seed)
        if key not in made:
            out = tmp_path_factory.mktemp(f"{domain}-{n}-{seed}") / domain
            generate(domain, n, seed, out)
            made[key] = out
        return made[key]

    return make
