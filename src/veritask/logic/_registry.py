"""The built-in family library: every module in ``veritask.logic.families`` exports ``FAMILIES``."""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from veritask.logic._family import Family


@lru_cache(maxsize=1)
def builtin_families() -> dict[str, Family]:
    """All built-in families by id (modules under ``veritask.logic.families``)."""
    import veritask.logic.families as pkg

    out: dict[str, Family] = {}
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{pkg.__name__}.{info.name}")
        for family in getattr(module, "FAMILIES", ()):
            if family.id in out:
                raise ValueError(f"duplicate family id {family.id!r} in {info.name}")
            out[family.id] = family
    return out


def get_family(family_id: str) -> Family:
    """A built-in family by id."""
    families = builtin_families()
    if family_id not in families:
        raise KeyError(f"unknown family {family_id!r}; known: {', '.join(sorted(families))}")
    return families[family_id]
