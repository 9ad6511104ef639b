"""The examples of a fused spec, run through the engine's one example runner."""

from __future__ import annotations

from veritask.env import run_spec_examples
from veritask.policy import DomainSpec


def example_failures(spec: DomainSpec) -> list[str]:
    """Every rule or effect example that does not behave as declared, as ``owner #i: why``."""
    return [
        f"{f.owner} #{f.example if f.example is not None else '-'}: {f.message}"
        for f in run_spec_examples(spec)
    ]
