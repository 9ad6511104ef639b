"""Helpers shared by command modules: domain loading, JSON output, errors."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

import click

from veritask.domains import load_domain
from veritask.pipeline import RayExecutor, use_executor
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


def provider_arg(spec: str, cache_dir: str | None = None) -> ModelProvider:
    """Build the model provider a ``--model`` spec names (behind a request cache when
    ``cache_dir`` is given), or fail with a clean CLI error."""
    from veritask.model import get_provider

    options = {"cache_dir": cache_dir} if cache_dir else {}
    try:
        return get_provider(spec, **options)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None


def cache_dir_option(func: Any) -> Any:
    """``--cache-dir``: answered model calls are kept there, so rerunning a killed command
    replays them at no cost instead of paying for them again."""
    return click.option(
        "--cache-dir",
        type=click.Path(file_okay=False),
        help="Cache model responses here; a rerun (after a kill) replays them at no cost.",
    )(func)


def echo_json(payload: Any) -> None:
    """Print a JSON document (stable key order as built, UTF-8)."""
    click.echo(json.dumps(payload, indent=2, ensure_ascii=False, default=str))


def fail(message: str, code: int = 2) -> None:
    """Print an error to stderr and exit."""
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def executor_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--executor local|ray`` and ``--ray-address`` for commands that run pipeline stages."""
    fn = click.option(
        "--ray-address",
        default=None,
        metavar="ADDRESS",
        help="With --executor ray: the cluster to join (ray.init(address=...)); default: a "
        "local Ray instance.",
    )(fn)
    return click.option(
        "--executor",
        type=click.Choice(["local", "ray"]),
        default="local",
        show_default=True,
        help="Where units run: this machine's processes, or Ray actors (--workers of them; "
        "needs the ray extra). Same output bytes either way.",
    )(fn)


def executor_scope(
    executor: str, workers: int, address: str | None
) -> AbstractContextManager[None]:
    """The block in which pipeline stages run on the chosen executor."""
    if executor == "ray":
        return use_executor(RayExecutor(workers, address))
    return nullcontext()
