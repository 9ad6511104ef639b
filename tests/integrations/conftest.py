"""The dataset the adapters are tested on, and its packages.

A module that needs another size overrides ``dataset`` with its own ``generated(...)`` call.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from veritask.integrations import VeritaskEnv
from veritask.task import TaskPackage


@pytest.fixture(scope="module")
def dataset(generated: Callable[[str, int, int], Path]) -> str:
    """Six travel tasks from seed 11."""
    return str(generated("travel", 6, 11))


@pytest.fixture(scope="module")
def packages(dataset: str) -> dict[str, TaskPackage]:
    """The dataset's packages by id, in manifest order, as the adapters load them."""
    return {p.id: p for p in VeritaskEnv(dataset).source.packages}


@pytest.fixture(scope="module")
def solvable(packages: dict[str, TaskPackage]) -> list[TaskPackage]:
    """The packages an agent can solve: a witness, and not a refusal."""
    return [p for p in packages.values() if p.witness and not p.refusal]
