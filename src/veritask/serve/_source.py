"""Where served sessions start from: a domain's seed state or the tasks of a dataset."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from veritask.domains import load_domain
from veritask.env import CompiledDomain, Snapshot, diff
from veritask.policy import DomainSpec, render_wiki
from veritask.rollout import TaskSource
from veritask.task import Session, TaskPackage


class RequestError(Exception):
    """A request the server refuses; becomes ``{"error": {"code", "message"}}`` with ``status``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def to_json(self) -> dict[str, Any]:
        """The error body."""
        return {"error": {"code": self.code, "message": self.message}}


@dataclass(frozen=True)
class TaskStart:
    """Everything a session needs to start: the domain, the state and what the agent is shown."""

    task_id: str | None
    domain: CompiledDomain
    origin: bytes
    target: Snapshot | None
    initial_distance: int | None
    """Distance from the origin to the target (None without a target)."""
    task: str | None
    policy: str
    tools: list[dict[str, Any]]
    opener: Callable[[TaskStart], Session] | None = None
    """Builds the session (any :class:`~veritask.task.Session`, e.g. a simulated one); None
    opens an :class:`~veritask.task.EnvSession` on ``domain`` at ``origin``."""
    package: TaskPackage | None = None
    """The task (None in domain mode), for an ``opener`` whose sessions need more than states."""


class EnvSource(Protocol):
    """Where sessions start from: a domain's seed state or the tasks of a dataset."""

    @property
    def mode(self) -> str:
        """``"domain"`` or ``"dataset"``."""
        ...

    @property
    def name(self) -> str:
        """A short description for logs and ``/health``."""
        ...

    def task_ids(self) -> list[str]:
        """Ids of the tasks that ``start`` accepts (empty in domain mode)."""
        ...

    def start(self, task_id: str | None, seed: int | None) -> TaskStart:
        """What a new session starts from; raises :class:`RequestError` for an unknown task."""
        ...


class DomainSource:
    """Sessions over a domain, each starting from the seed state, with no target."""

    mode = "domain"

    def __init__(self, domain: CompiledDomain | DomainSpec) -> None:
        compiled = (
            domain if isinstance(domain, CompiledDomain) else CompiledDomain.from_spec(domain)
        )
        self._start = TaskStart(
            task_id=None,
            domain=compiled,
            origin=compiled.seed,
            target=None,
            initial_distance=None,
            task=None,
            policy=render_wiki(compiled.spec),
            tools=[t.openai_schema() for t in compiled.tools.values()],
        )

    @property
    def name(self) -> str:
        """The domain's name."""
        return self._start.domain.spec.name

    def task_ids(self) -> list[str]:
        """No tasks in domain mode."""
        return []

    def start(self, task_id: str | None, seed: int | None) -> TaskStart:
        """The seed state (``seed`` is accepted and ignored: the seed state is fixed)."""
        del seed
        if task_id is not None:
            raise RequestError(400, "BAD_REQUEST", "task_id needs a dataset directory server")
        return self._start


class DatasetSource:
    """Sessions over the tasks of a dataset directory (``veritask generate`` output)."""

    mode = "dataset"

    def __init__(self, root: str | Path) -> None:
        self._source = TaskSource.load(root)
        self._root = Path(root)
        if not self._source.packages:
            raise ValueError(f"{root}: the dataset holds no tasks")
        self._by_id = {p.id: p for p in self._source.packages}
        for domain in sorted({p.domain for p in self._source.packages}):
            self._source.domain(domain)  # compile every domain once, before threads start
        self._tools: dict[str, list[dict[str, Any]]] = {}
        self._cache: dict[str, TaskStart] = {}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """The dataset directory."""
        return str(self._root)

    def task_ids(self) -> list[str]:
        """Ids of the dataset's tasks, in manifest order."""
        return [p.id for p in self._source.packages]

    def start(self, task_id: str | None, seed: int | None) -> TaskStart:
        """The task ``task_id``, else the ``seed % n``-th task (the first without a seed)."""
        if task_id is not None:
            package = self._by_id.get(task_id)
            if package is None:
                raise RequestError(404, "UNKNOWN_TASK", f"no task with id {task_id!r}")
        else:
            packages = self._source.packages
            package = packages[(seed or 0) % len(packages)]
        with self._lock:
            cached = self._cache.get(package.id)
            if cached is None:
                cached = self._cache[package.id] = self._build(package)
        return cached

    def _build(self, package: TaskPackage) -> TaskStart:
        task = self._source.episode_task(package)
        tools = self._tools.get(package.domain)
        if tools is None:
            tools = self._tools[package.domain] = [
                t.openai_schema() for t in task.domain.tools.values()
            ]
        target = Snapshot(task.target, task.domain.layout)
        origin = Snapshot(task.origin, task.domain.layout)
        return TaskStart(
            task_id=package.id,
            domain=task.domain,
            origin=task.origin,
            target=target,
            initial_distance=diff(origin, target).distance,
            task=package.task_description,
            policy=task.policy,
            tools=tools,
            package=package,
        )


class OpenerSource:
    """Another source's starts, with every session built by ``opener`` instead of an
    :class:`~veritask.task.EnvSession` (a simulated or hybrid environment, say). The reset
    reply then offers the tools of the session ``opener`` builds.

    Args:
        inner: Where sessions start from.
        opener: Builds a session from a start.
        label: Prefixed to the inner source's name in logs and ``/health``.
    """

    def __init__(
        self, inner: EnvSource, opener: Callable[[TaskStart], Session], label: str
    ) -> None:
        self.inner = inner
        self.opener = opener
        self.label = label

    @property
    def mode(self) -> str:
        """The inner source's mode."""
        return self.inner.mode

    @property
    def name(self) -> str:
        """``LABEL:NAME``."""
        return f"{self.label}:{self.inner.name}"

    def task_ids(self) -> list[str]:
        """The inner source's tasks."""
        return self.inner.task_ids()

    def start(self, task_id: str | None, seed: int | None) -> TaskStart:
        """The inner source's start, opened by ``opener``."""
        return replace(self.inner.start(task_id, seed), opener=self.opener)


def open_source(domain_or_dir: str | Path) -> EnvSource:
    """A dataset source when the path is a directory with a ``manifest.jsonl``, else a domain.

    Args:
        domain_or_dir: A built-in domain name, a spec file or folder, or a dataset directory.

    Raises:
        ValueError: The domain or dataset cannot be loaded (``SpecError`` and ``DatasetError``
            are ``ValueError`` subclasses).
    """
    path = Path(domain_or_dir)
    if path.is_dir() and (path / "manifest.jsonl").exists():
        return DatasetSource(path)
    return DomainSource(load_domain(domain_or_dir))
