"""Helpers shared by command modules: domain loading, JSON output, errors."""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import yaml

from veritask.domains import load_domain
from veritask.env import NotADatabase, read_database
from veritask.model import ProviderError
from veritask.pipeline import RayExecutor, use_executor
from veritask.policy import DomainSpec, SpecError

if TYPE_CHECKING:
    from veritask.model import ModelProvider


class OutputFile(click.Path):
    """A file a command writes: not a directory, and its parent directories are created.

    Every output file of the CLI takes this type, so each command treats a missing parent the
    same way (as ``generate --out`` and ``rollout --out`` always did): it is created. A parent
    that exists but is not a directory is a one-line usage error naming it.
    """

    def __init__(self) -> None:
        super().__init__(dir_okay=False)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Check the path like ``click.Path`` does, then create its parent directories."""
        path = super().convert(value, param, ctx)
        name = os.fsdecode(path)
        parent = Path(name).parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            self.fail(f"cannot write {name}: {parent} is not a directory", param, ctx)
        except OSError as exc:
            self.fail(f"cannot write {name}: cannot create {parent}: {exc.strerror}", param, ctx)
        return path


#: The type of every output file option or argument.
OUT_FILE = OutputFile()


def not_a_directory(name: str) -> str:
    """``name``, or a one-line error when it names a directory without a ``spec.yaml`` (a
    domain kept as a folder, the layout of the built-ins, is given by the folder)."""
    if os.path.isdir(name) and not os.path.isfile(os.path.join(name, "spec.yaml")):
        raise click.ClickException(
            f"{name} is a directory without a spec.yaml; give a built-in domain, a spec file "
            "or a folder holding spec.yaml"
        )
    return name


def spec_arg(name: str) -> DomainSpec:
    """Load a built-in domain or spec file, turning errors into a clean CLI failure."""
    not_a_directory(name)
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


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type name when it has none)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@contextmanager
def reading(path: str) -> Iterator[None]:
    """The block in which a command reads a file a user named: what the file's bytes can make
    a reader raise (not UTF-8, not YAML or JSON, nested too deep, a number too long) ends in
    one line naming the file."""
    try:
        yield
    except UnicodeDecodeError as exc:
        raise click.ClickException(
            f"{path} is not UTF-8 text (byte {exc.start}): save it as UTF-8"
        ) from None
    except RecursionError:
        raise click.ClickException(f"{path} is nested too deeply to read") from None
    except yaml.YAMLError as exc:
        raise click.ClickException(f"{path} is not valid YAML or JSON: {first_line(exc)}") from None
    except ValueError as exc:
        line = first_line(exc)
        raise click.ClickException(line if path in line else f"{path}: {line}") from None


def nonempty(path: str, what: str) -> str:
    """``path``, or a one-line error when the file is empty (an empty input is a wrong file or
    an upstream step that wrote nothing, never something to process into nothing)."""
    if Path(path).stat().st_size == 0:
        raise click.ClickException(f"{path} is empty: expected {what}")
    return path


def state_file(path: str) -> bytes:
    """The bytes of a SQLite state file a user named, or a one-line error saying it is not one."""
    try:
        return read_database(path)
    except NotADatabase as exc:
        raise click.ClickException(
            f"{exc}: give a state written by 'veritask seed' or 'call --save'"
        ) from None


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
        _require_ray()
        return use_executor(RayExecutor(workers, address))
    return nullcontext()


def _require_ray() -> None:
    """Fail in one line, before any work starts, when the ``ray`` extra is not installed."""
    try:
        importlib.import_module("ray")
    except ImportError:
        raise click.ClickException(
            "--executor ray needs the 'ray' extra: pip install 'veritask[ray]' "
            "(or run with --executor local)"
        ) from None


def _endpoint(spec: str | None) -> str:
    """Where an ``openai:`` spec sends requests, as the provider resolves it (explicit base URL,
    else ``VERITASK_BASE_URL``, else ``OPENAI_BASE_URL``, else the SDK's default)."""
    if spec is None or not spec.startswith("openai:"):
        return ""
    url = os.environ.get("VERITASK_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
    return f" at {url}" if url else " at the OpenAI default endpoint"


def model_failure(spec: str | None, exc: ProviderError) -> click.ClickException:
    """A failed model call as one line naming the model, the endpoint and what to do."""
    return click.ClickException(f"{model_named(spec)} failed: {exc}; {model_advice(spec)}")


def model_named(spec: str | None) -> str:
    """``model SPEC at URL`` for an error line (the endpoint only for ``openai:`` specs)."""
    return f"model {spec}{_endpoint(spec)}" if spec else "the model"


def model_advice(spec: str | None) -> str:
    """What to do about a failed model call."""
    if spec and spec.startswith("openai:"):
        return "check that the server is up, or set VERITASK_BASE_URL"
    return "check the --model spec"


@contextmanager
def model_calls(spec: str | None) -> Iterator[None]:
    """The block in which a command calls the model ``spec`` names: a provider error (a dead
    endpoint, an exhausted script, a replay miss) ends in one line naming the endpoint."""
    try:
        yield
    except ProviderError as exc:
        raise model_failure(spec, exc) from None


def require_packages(directory: str | Path) -> None:
    """Refuse a dataset directory whose manifest exists but holds no package (a command that
    reads packages would otherwise report an empty success)."""
    manifest = Path(directory) / "manifest.jsonl"
    if manifest.is_file() and not manifest.read_bytes().strip():
        raise click.ClickException(
            f"{manifest}: the manifest is empty: this dataset has no packages "
            "(generate into it first, or name another directory)"
        )
