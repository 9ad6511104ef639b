"""Run manifests: what a run was asked to do (its config and hash) and its stable unit ids.

A run writes its manifest next to its outputs before any unit runs. A rerun into the same place
opens the manifest again: the same config resumes, another config is refused with the fields
that differ, so two runs' outputs never mix.
"""

from __future__ import annotations

import json
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
        """Claim ``path`` for this run: write the manifest, or check the one already there.

        Args:
            path: Where the manifest lives (in the output directory, or a sidecar file).
            where: How a refusal names the output (default: the manifest's folder).
            grow: The run's unit set is open (rollouts choose tasks and trials per call): a rerun
                may add units, which are appended to the stored ones. Otherwise a rerun with
                other unit ids is refused.

        Returns:
            The manifest as stored (with ``grow``, the union of the unit ids).

        Raises:
            RunConflict: Another job, another config, or (without ``grow``) other units.
        """
        path = Path(path)
        previous = RunManifest.read(path)
        shown = where or str(path.parent)
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
