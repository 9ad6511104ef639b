"""Run manifests: what a run was asked to do (its config and hash) and its stable unit ids.

A run writes its manifest next to its outputs before any unit runs. A rerun into the same place
opens the manifest again: the same config resumes, another config is refused with the fields
that differ, so two runs' outputs never mix. Opening also claims the output for the process
(``claim_run``): a second live run into it stops at once.

The claim is an exclusive ``flock`` on a lock file named by the sha256 of the manifest's
resolved path. Lock files live in a folder of the system's temporary directory
(``VERITASK_LOCK_DIR`` overrides it), not among the outputs, so a run's files stay
byte-identical from run to run and a dataset's seal lists nothing that varies. The kernel
releases a ``flock`` when its last descriptor closes, so a killed process (even by ``kill -9``)
never leaves a lock that blocks: a stale lock file is simply claimed again. The holder writes
its process id into the file, and a refused run names it. A process keeps what it claimed
until it exits (or calls ``release_runs``); claiming the same output again in the same process
is allowed (a rerun resumes). Children forked by a process pool share the parent's lock while
they live.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veritask._util import InputError, atomic_write_text, canonical_json, read_json, sha256_text

_SHOWN = 60
"""Longest value text a refusal message shows before eliding it."""


class RunConflict(ValueError):
    """The output already holds a run with another config; ``fields`` names what differs."""

    def __init__(self, where: str, job: str, fields: dict[str, tuple[Any, Any]]) -> None:
        self.where = where
        self.job = job
        self.fields = fields
        shown = "; ".join(
            f"{name}: was {_show(old)}, now {_show(new)}" for name, (old, new) in fields.items()
        )
        super().__init__(
            f"{where} holds a different run of {job} (config differs in {shown}); "
            "use another output, or rerun with the same settings to resume"
        )


def _show(value: Any) -> str:
    text = "(absent)" if value is _ABSENT else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


_ABSENT: Any = object()


LOCK_DIR_ENV = "VERITASK_LOCK_DIR"
_HELD: dict[str, int] = {}
"""Descriptors of the locks this process holds, by lock file path."""


class RunInUse(RunConflict):
    """Another live process is writing the same run output (a ``RunConflict``, so every
    command that reports conflicts reports this one)."""

    def __init__(self, where: str, pid: str) -> None:
        self.where = where
        self.job = ""
        self.fields = {}
        self.pid = pid
        ValueError.__init__(
            self,
            f"{where} is in use by another veritask run (pid {pid}); "
            "wait for it or choose another --out",
        )


def lock_dir() -> Path:
    """The folder of the lock files (``VERITASK_LOCK_DIR``, or one in the temporary folder)."""
    configured = os.environ.get(LOCK_DIR_ENV)
    if configured:
        return Path(configured)
    return Path(tempfile.gettempdir()) / f"veritask-locks-{os.getuid()}"


def lock_path(manifest: Path) -> Path:
    """The lock file of the run whose manifest lives at ``manifest``."""
    manifest.parent.mkdir(parents=True, exist_ok=True)
    key = str(manifest.parent.resolve() / manifest.name)
    return lock_dir() / f"{sha256_text(key)}.lock"


def claim_run(manifest: Path, where: str) -> None:
    """Claim the run whose manifest lives at ``manifest`` for this process, or refuse at once.

    Raises:
        RunInUse: Another live process holds it (the message names its process id).
    """
    path = lock_path(manifest)
    if str(path) in _HELD:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
        os.close(fd)
        raise RunInUse(where, holder) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    _HELD[str(path)] = fd


def release_runs() -> None:
    """Release every run this process claimed (the process's exit does it too)."""
    while _HELD:
        _, fd = _HELD.popitem()
        os.close(fd)


def config_hash(config: Mapping[str, Any]) -> str:
    """The sha256 of a config's canonical JSON (key order does not matter)."""
    return sha256_text(canonical_json(dict(config)))


def config_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """The fields whose values differ, as ``name -> (old, new)`` (a missing side is absent);
    nested dicts are compared field by field with dotted names."""
    out: dict[str, tuple[Any, Any]] = {}
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key, _ABSENT), new.get(key, _ABSENT)
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            out.update({f"{key}.{k}": v for k, v in config_diff(a, b).items()})
        elif a is _ABSENT or b is _ABSENT or canonical_json(a) != canonical_json(b):
            out[key] = (a, b)
    return out


@dataclass
class RunManifest:
    """A run's job name, config, config hash and stable unit ids.

    Attributes:
        job: What kind of run (``generate``, ``rollout``, ``logic-generate``, ...).
        config: Everything that decides the outputs (never transport settings such as worker
            counts, endpoints or cache folders).
        units: The stable ids of the run's units, in run order.
    """

    job: str
    config: dict[str, Any]
    units: list[str] = field(default_factory=list)

    @property
    def config_hash(self) -> str:
        """The sha256 of the config's canonical JSON."""
        return config_hash(self.config)

    def to_json(self) -> dict[str, Any]:
        """The manifest file's content."""
        return {
            "job": self.job,
            "config_hash": self.config_hash,
            "config": self.config,
            "units": self.units,
        }

    def write(self, path: Path) -> None:
        """Write the manifest atomically (sorted keys, so equal manifests give equal bytes)."""
        text = json.dumps(self.to_json(), indent=2, sort_keys=True, ensure_ascii=False)
        atomic_write_text(Path(path), text + "\n")

    @classmethod
    def read(cls, path: Path) -> RunManifest | None:
        """The manifest stored at ``path``, or None when there is none.

        Raises:
            InputError: The file is not a run manifest (malformed, or past the reader's limits).
        """
        path = Path(path)
        if not path.exists():
            return None
        data = read_json(path)
        try:
            return cls(str(data["job"]), dict(data["config"]), [str(u) for u in data["units"]])
        except (KeyError, TypeError, ValueError):
            raise InputError(
                str(path), "is not a run manifest (needs job, config and units)"
            ) from None

    def check(self, previous: RunManifest, where: str) -> None:
        """Refuse (``RunConflict``) when ``previous`` is another job or another config."""
        if previous.job != self.job:
            raise RunConflict(where, self.job, {"job": (previous.job, self.job)})
        if previous.config_hash != self.config_hash:
            raise RunConflict(where, self.job, config_diff(previous.config, self.config))

    def open(self, path: Path, *, where: str | None = None, grow: bool = False) -> RunManifest:
        """Claim ``path`` for this run: lock it for this process (``claim_run``), then write
        the manifest, or check the one already there.

        Args:
            path: Where the manifest lives (in the output directory, or a sidecar file).
            where: How a refusal names the output (default: the manifest's folder).
            grow: The run's unit set is open (rollouts choose tasks and trials per call): a rerun
                may add units, which are appended to the stored ones. Otherwise a rerun with
                other unit ids is refused.

        Returns:
            The manifest as stored (with ``grow``, the union of the unit ids).

        Raises:
            RunInUse: Another live process is running into ``path`` (``claim_run``).
            RunConflict: Another job, another config, or (without ``grow``) other units.
        """
        path = Path(path)
        shown = where or str(path.parent)
        claim_run(path, shown)
        previous = RunManifest.read(path)
        if previous is None:
            self.write(path)
            return self
        self.check(previous, shown)
        if previous.units == self.units:
            return previous
        if not grow:
            raise RunConflict(shown, self.job, {"units": (previous.units, self.units)})
        merged = RunManifest(self.job, self.config, _union(previous.units, self.units))
        merged.write(path)
        return merged


def _union(first: Iterable[str], second: Iterable[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))
