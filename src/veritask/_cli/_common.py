"""Helpers shared by command modules: domain loading, JSON output, errors."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import click

from veritask.domains import load_domain
from veritask.policy import DomainSpec, SpecError

if TYPE_CHECKING:
    from veritask.model import ModelProvider


def spec_arg(name: str) -> DomainSpec:
    """Load a built-in domain or spec file, turning errors into a clean CLI failure."""
    try:
        return load_domain(name)
    except SpecError as exc:
        raise click.ClickException(str(exc)) from None
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None


def provider_arg(spec: str) -> ModelProvider:
    """Build the model provider a ``--model`` spec names, or fail with a clean CLI error."""
    from veritask.model import get_provider

    try:
        return get_provider(spec)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None


def echo_json(payload: Any) -> None:
    """Print a JSON document (stable key order as built, UTF-8)."""
    click.echo(json.dumps(payload, indent=2, ensure_ascii=False, default=str))


def fail(message: str, code: int = 2) -> None:
    """Print an error to stderr and exit."""
    click.echo(f"error: {message}", err=True)
    sys.exit(code)
