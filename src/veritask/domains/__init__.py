"""Built-in domains: each is a folder ``<name>/spec.yaml`` inside this package."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from veritask.policy import DomainSpec, load_spec

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
    """Load a built-in domain by name, or a spec from a YAML file path."""
    text = str(name_or_path)
    if text in builtin_domains():
        return _load_builtin(text)
    return load_spec(spec_path(text))


__all__ = ["builtin_domains", "load_domain", "spec_path"]
