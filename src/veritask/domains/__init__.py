"""Built-in domains: each is a folder ``<name>/spec.yaml`` inside this package."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from veritask.policy import DomainSpec, load_spec

_MAX_CACHED_BYTES = 4 * 1024 * 1024
"""Spec files up to this size are parsed once per content (larger ones go straight to the
loader, which refuses what is too large)."""

_ROOT = Path(__file__).parent


def builtin_domains() -> list[str]:
    """Names of the built-in domains (``mock`` included, it exists for tests)."""
    return sorted(p.parent.name for p in _ROOT.glob("*/spec.yaml"))


@lru_cache(maxsize=32)
def _load_builtin(name: str) -> DomainSpec:
    return load_spec(_ROOT / name / "spec.yaml")


def spec_path(name_or_path: str | Path) -> Path:
    """The spec file of a built-in domain name, a spec file or a folder holding ``spec.yaml``.

    Raises:
        ValueError: Neither a built-in nor an existing spec file.
    """
    text = str(name_or_path)
    if text in builtin_domains():
        return _ROOT / text / "spec.yaml"
    path = Path(text)
    if path.is_dir():
        path = path / "spec.yaml"
    if path.exists():
        return path
    known = ", ".join(builtin_domains())
    raise ValueError(f"unknown domain {text!r}: not a built-in ({known}) and no such spec file")


def load_domain(name_or_path: str | Path) -> DomainSpec:
    """Load a built-in domain by name, or a spec from a YAML file path.

    A spec file is parsed once per content: a run that names the same file (or a dataset's
    copy of it) several times parses the YAML once. The spec is shared, as built-ins are;
    callers do not change it."""
    text = str(name_or_path)
    if text in builtin_domains():
        return _load_builtin(text)
    path = spec_path(text)
    if path.stat().st_size > _MAX_CACHED_BYTES:
        return load_spec(path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    found = _BY_CONTENT.get(digest)
    if found is None:
        found = load_spec(path)  # a failed load raises and is not kept
        if len(_BY_CONTENT) >= _MAX_CACHED_SPECS:
            _BY_CONTENT.pop(next(iter(_BY_CONTENT)))
        _BY_CONTENT[digest] = found
    return found


_MAX_CACHED_SPECS = 64
_BY_CONTENT: dict[str, DomainSpec] = {}
"""Specs parsed from files, by the sha256 of the file's bytes (oldest dropped first)."""


__all__ = ["builtin_domains", "load_domain", "spec_path"]
